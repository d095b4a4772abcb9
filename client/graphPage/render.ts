// Draws a laid-out graph as SVG: frames for expanded groups, boxes coloured by the selected
// backend's verdict, edges with their types on hover, stubs naming values that reach a box
// without an edge drawn (layout.ts). Only attributes and CSSOM: the page's
// Content-Security-Policy allows no inline style attributes.

import type { Layout } from './layout';
import type { Status, Visible } from './model';

const SVG = 'http://www.w3.org/2000/svg';
const STUB = 14; // a stub's length

export const COLOURS: Record<Status, string> = {
  lowered: '#2e7d32',
  rejected: '#c62828',
  rewritten: '#1565c0',
  'knock-on': '#ef6c00',
  unknown: '#757575',
};

export function el<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, parent?: Element): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  parent?.appendChild(e);
  return e;
}

function title(parent: Element, text: string): void {
  el('title', {}, parent).textContent = text;
}

/** Draws `v` laid out as `l` into `root` (emptied first). */
export function draw(root: SVGGElement, v: Visible, l: Layout): void {
  root.replaceChildren();
  const frames = el('g', { class: 'frames' }, root);
  for (const c of v.clusters) {
    const b = l.boxes.get(c.id);
    if (!b) continue;
    const g = el('g', { class: 'frame', 'data-id': c.id }, frames);
    const top = b.y - b.height / 2; // the frame is the group's box, its title inside at the top
    el('rect', { x: b.x - b.width / 2, y: top, width: b.width, height: b.height, rx: 6 }, g);
    const t = el('text', { x: b.x - b.width / 2 + 8, y: top + 14, class: 'frame-label' }, g);
    t.textContent = `▾ ${c.label}`;
    title(g, `${c.label} (click to collapse)`);
  }
  const edges = el('g', { class: 'edges' }, root);
  for (const e of l.edges) {
    if (e.points.length < 2) continue;
    const d = e.points.map((p, i) => `${i ? 'L' : 'M'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');
    const path = el('path', { d, class: 'edge', 'marker-end': 'url(#arrow)', 'data-from': e.from, 'data-to': e.to }, edges);
    if (e.type) title(path, e.type);
  }
  for (const s of l.stubs) {
    const d = `M${(s.x - STUB * 0.6).toFixed(1)},${(s.y - STUB).toFixed(1)} L${s.x.toFixed(1)},${s.y.toFixed(1)}`;
    const path = el('path', { d, class: 'edge stub', 'marker-end': 'url(#arrow)', 'data-from': s.from, 'data-to': s.to }, edges);
    title(path, `from ${s.label}${s.type ? ` (${s.type})` : ''}`);
  }
  const items = el('g', { class: 'items' }, root);
  const parents = new Map(v.clusters.map((c) => [c.id, c.parent]));
  const chain = (p: string | null): string[] => (p === null ? [] : [p, ...chain(parents.get(p) ?? null)]);
  for (const i of v.items) {
    const b = l.boxes.get(i.id);
    if (!b) continue;
    // data-in: the expanded groups drawn around it, innermost first.
    const g = el('g', { class: `item ${i.kind}`, 'data-id': i.id, 'data-kind': i.kind, 'data-status': i.status, 'data-in': chain(i.parent).join(' '), transform: `translate(${(b.x - b.width / 2).toFixed(1)},${(b.y - b.height / 2).toFixed(1)})` }, items);
    el('rect', { width: b.width, height: b.height, rx: i.kind === 'group' ? 3 : 8, fill: COLOURS[i.status], class: 'box' }, g);
    const label = el('text', { x: 8, y: 16, class: 'label' }, g);
    label.textContent = i.label;
    const sub = el('text', { x: 8, y: 31, class: 'sub' }, g);
    sub.textContent = i.sub;
    const bad = i.kind === 'group' ? (i.counts.rejected ?? 0) + (i.counts['knock-on'] ?? 0) : 0;
    const badges = [bad ? `✗${bad}` : '', i.verify ? '≠' : ''].filter(Boolean);
    if (badges.length) {
      const badge = el('text', { x: b.width - 8, y: 16, class: 'badge', 'text-anchor': 'end' }, g);
      badge.textContent = badges.join(' ');
    }
    if (i.verify) {
      g.classList.add('verify');
      title(g, 'Verify: its values differ from eager here');
    }
  }
}
