// The graph view: one module's graph, each op coloured by the selected backend's verdict,
// grouped by the module hierarchy (groups expand and collapse, a repeated block's function is
// shown once), searchable, panned and zoomed. The same script runs in a self-contained page
// (`torch-mlir-lens graph -o graph.html`, its data in a JSON script element) and in the
// editor's webview (its data and the cursor's line in messages; a click asks the editor to
// reveal the node's lines).

import dagre from '@dagrejs/dagre';
import { Layouter } from './layout';
import { EXPAND_ALL_BUDGET, GraphIndex, type GraphNode, type ModuleGraph, SEVERITY, type Status, initialExpansion, search, shapeText, visible } from './model';
import { COLOURS, draw, el } from './render';
import { STYLES } from './styles';

interface VsCodeApi {
  postMessage(message: unknown): void;
}
declare const acquireVsCodeApi: (() => VsCodeApi) | undefined;

/** What the editor sends: a graph (on open and after each edit), the cursor's line. */
type Incoming =
  | { type: 'graph'; graph: ModuleGraph; target?: string }
  | { type: 'cursor'; file: string; line: number }
  | { type: 'error'; message: string };

const host: VsCodeApi | undefined = typeof acquireVsCodeApi === 'function' ? acquireVsCodeApi() : undefined;

const state = {
  index: undefined as GraphIndex | undefined,
  expanded: new Set<string>(),
  target: '',
  selected: '',
  lit: new Set<string>(), // nodes at the cursor's line
  matches: [] as GraphNode[],
  match: -1,
  view: { x: 0, y: 0, k: 1 },
  size: { width: 0, height: 0 },
  layouts: new Layouter(dagre), // groups' layouts, kept across renders and edits
  capped: 0, // groups "Expand all" left collapsed
  fitted: false, // the view is Fit's (not panned or zoomed since): a resize fits again
};

const sheet = new CSSStyleSheet();
sheet.replaceSync(STYLES);
document.adoptedStyleSheets = [sheet];

const header = document.createElement('header');
const titleEl = document.createElement('h1');
const targetSelect = document.createElement('select');
targetSelect.setAttribute('aria-label', 'Backend');
const verdictEl = document.createElement('span');
verdictEl.className = 'verdict';
const verifyEl = document.createElement('span'); // Verify's verdict, when it has run
verifyEl.className = 'verify-verdict';
const searchBox = document.createElement('input');
searchBox.type = 'search';
searchBox.placeholder = 'Search op or name (Enter: next)';
searchBox.setAttribute('aria-label', 'Search op or name');
const statusEl = document.createElement('span');
statusEl.id = 'status';
const buttons = (['Fit', 'Expand all', 'Collapse all'] as const).map((label) => {
  const b = document.createElement('button');
  b.textContent = label;
  return b;
});
const legend = document.createElement('span');
legend.className = 'legend';
header.append(titleEl, targetSelect, verdictEl, verifyEl, searchBox, ...buttons, legend, statusEl);
const main = document.createElement('main');
const svg = el('svg', { id: 'canvas', role: 'img', 'aria-label': 'module graph' });
const defs = el('defs', {}, svg);
const marker = el('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto-start-reverse' }, defs);
el('path', { d: 'M 0 0 L 10 5 L 0 10 z', fill: '#8a8a8a' }, marker);
const root = el('g', {}, svg);
const panel = document.createElement('aside');
panel.setAttribute('aria-label', 'details');
main.append(svg, panel);
document.body.append(header, main);

function setView(x: number, y: number, k: number, fitted = false): void {
  state.view = { x, y, k };
  state.fitted = fitted;
  root.setAttribute('transform', `translate(${x.toFixed(1)},${y.toFixed(1)}) scale(${k.toFixed(4)})`);
}

function fit(): void {
  const r = svg.getBoundingClientRect();
  const { width, height } = state.size;
  if (!width || !height || !r.width || !r.height) return setView(0, 0, 1, true);
  // The whole graph when it fits readably, else its top at a readable size.
  const k = Math.min(1.5, Math.max(0.45, Math.min(r.width / width, r.height / height) * 0.95));
  setView(Math.max(10, (r.width - width * k) / 2), Math.max(0, (r.height - height * k) / 2), k, true);
}

function centreOn(id: string): void {
  const box = root.querySelector<SVGGElement>(`.item[data-id="${CSS.escape(id)}"]`);
  if (!box) return;
  const b = box.getBBox();
  const t = box.transform.baseVal.consolidate()?.matrix;
  const r = svg.getBoundingClientRect();
  const k = Math.max(state.view.k, 0.6);
  const cx = (t?.e ?? 0) + b.width / 2;
  const cy = (t?.f ?? 0) + b.height / 2;
  setView(r.width / 2 - cx * k, r.height / 2 - cy * k, k);
}

/** Lays out and draws what is visible; `refit` re-frames the whole graph. */
function render(refit = false): void {
  const index = state.index;
  if (!index) return;
  const t0 = performance.now();
  const v = visible(index, state.expanded, state.target);
  const l = state.layouts.layout(v);
  draw(root, v, l);
  state.size = { width: l.width, height: l.height };
  mark();
  if (refit) fit();
  const ms = Math.round(performance.now() - t0);
  const capped = state.capped ? ` · ${state.capped} groups left collapsed (click one to open it)` : '';
  state.capped = 0; // said once, after "Expand all"
  statusEl.textContent = `${index.graph.nodes.length} ops · ${v.items.length} boxes drawn · ${ms} ms${capped}`;
  document.body.dataset.rendered = String(v.items.length);
  document.body.dataset.renderMs = String(ms);
  document.body.dataset.laidOut = String(l.laidOut);
  document.body.dataset.ready = '1';
}

/** The selection, the cursor's nodes and the search's matches, on what is drawn. */
function mark(): void {
  const index = state.index;
  if (!index) return;
  const standIn = (id: string): string | undefined => {
    const node = index.nodes.get(id);
    const chain = [...index.ancestors(node?.group ?? null)].reverse();
    const collapsed = chain.find((g) => !state.expanded.has(g));
    return collapsed ?? id;
  };
  const classes = new Map<string, string[]>();
  const add = (id: string | undefined, cls: string): void => {
    if (id) classes.set(id, [...(classes.get(id) ?? []), cls]);
  };
  if (state.selected) add(standIn(state.selected), 'selected');
  for (const id of state.lit) add(standIn(id), 'lit');
  for (const n of state.matches) add(standIn(n.id), 'match');
  for (const g of root.querySelectorAll<SVGGElement>('.item')) {
    const id = g.dataset.id ?? '';
    for (const c of ['selected', 'lit', 'match']) g.classList.toggle(c, classes.get(id)?.includes(c) ?? false);
  }
}

function expandTo(node: GraphNode): void {
  for (const g of state.index?.ancestors(node.group) ?? []) state.expanded.add(g);
}

function dd(list: HTMLElement, term: string, value: string | Node): void {
  const dt = document.createElement('dt');
  dt.textContent = term;
  const d = document.createElement('dd');
  d.append(value);
  list.append(dt, d);
}

function link(text: string, onClick: () => void): HTMLAnchorElement {
  const a = document.createElement('a');
  a.textContent = text;
  a.addEventListener('click', onClick);
  return a;
}

function reveal(node: GraphNode): void {
  host?.postMessage({ type: 'reveal', file: node.file, line: node.line, irLines: node.ir_lines });
}

function showNode(node: GraphNode): void {
  const index = state.index;
  if (!index) return;
  panel.replaceChildren();
  const h = document.createElement('h2');
  h.textContent = `${node.op} · ${node.name}`;
  const list = document.createElement('dl');
  const path = [...index.ancestors(node.group)].reverse().map((g) => index.groups.get(g)?.name ?? g).join(' › ');
  if (path) dd(list, 'module', path);
  if (node.line !== null) {
    const where = `${(node.file ?? '').split(/[\\/]/).pop()}:${node.line}`;
    dd(list, 'Python line', host ? link(where, () => reveal(node)) : where);
  }
  if (node.library_line) dd(list, 'library line', `${node.library_line.file.split(/[\\/]/).pop()}:${node.library_line.line}`);
  if (node.shape || node.dtype) dd(list, 'result', shapeText(node));
  for (const [target, v] of Object.entries(node.targets)) {
    const span = document.createElement('span');
    const dot = document.createElement('span');
    dot.className = 'dot';
    dot.style.background = COLOURS[v.status];
    span.append(dot, ` ${v.status}${v.why ? `: ${v.why}` : ''}`);
    dd(list, target, span);
  }
  if (node.verify) dd(list, 'Verify', node.verify);
  if (node.block) {
    const block = index.groups.get(node.block);
    dd(list, 'block', link(`show ${block?.name ?? node.block}`, () => {
      state.expanded.add(node.block ?? '');
      render();
      centreOnGroup(node.block ?? '');
    }));
  }
  panel.append(h, list);
  const lines = index.graph.ir.split('\n');
  if (node.ir_lines.length) {
    const ir = document.createElement('pre');
    ir.textContent = node.ir_lines.slice(0, 40).map((n) => `${String(n).padStart(5)} │ ${lines[n - 1] ?? ''}`).join('\n');
    const head = document.createElement('h2');
    head.textContent = `Torch IR (${node.ir_lines.length} line${node.ir_lines.length === 1 ? '' : 's'})`;
    panel.append(head, ir);
  }
}

function centreOnGroup(id: string): void {
  const frame = root.querySelector<SVGGElement>(`.frame[data-id="${CSS.escape(id)}"]`);
  if (!frame) return;
  const b = frame.getBBox();
  const r = svg.getBoundingClientRect();
  const k = Math.max(state.view.k, 0.6);
  setView(r.width / 2 - (b.x + b.width / 2) * k, 40 - b.y * k, k);
}

function select(id: string): void {
  const node = state.index?.nodes.get(id);
  if (!node) return;
  state.selected = id;
  document.body.dataset.selected = id;
  showNode(node);
  mark();
  reveal(node);
}

function showSummary(): void {
  const index = state.index;
  if (!index) return;
  const counts: Partial<Record<Status, number>> = {};
  for (const n of index.graph.nodes) {
    const s = n.targets[state.target]?.status ?? 'unknown';
    counts[s] = (counts[s] ?? 0) + 1;
  }
  legend.replaceChildren(...SEVERITY.slice().reverse().map((s) => {
    const chip = document.createElement('span');
    chip.className = 'chip';
    const dot = document.createElement('span');
    dot.className = 'dot';
    dot.style.background = COLOURS[s];
    chip.append(dot, `${s} ${counts[s] ?? 0}`);
    return chip;
  }));
  const v = index.graph.verdicts[state.target];
  verdictEl.textContent = v ? (v.ok ? '✓ lowers' : `✗ ${v.why ?? 'does not lower'}`) : '';
  verdictEl.style.color = v ? COLOURS[v.ok ? 'lowered' : 'rejected'] : '';
  const verify = index.graph.verify;
  verifyEl.textContent = verify ? `Verify: ${verify.message}` : '';
  verifyEl.style.color = verify ? COLOURS[verify.ok ? 'lowered' : 'rejected'] : '';
  document.body.dataset.verify = verify ? String(verify.ok) : '';
}

function setGraph(graph: ModuleGraph, target?: string): void {
  const first = !state.index;
  const index = new GraphIndex(graph);
  state.index = index;
  state.expanded = first ? initialExpansion(index) : new Set([...state.expanded].filter((g) => index.groups.has(g)));
  state.target = target && graph.targets.includes(target) ? target : graph.targets.includes(state.target) ? state.target : (graph.targets[0] ?? '');
  targetSelect.replaceChildren(...graph.targets.map((t) => {
    const o = document.createElement('option');
    o.value = o.textContent = t;
    return o;
  }));
  targetSelect.value = state.target;
  titleEl.textContent = graph.module;
  document.title = `${graph.module} · graph`;
  if (state.selected && !index.nodes.has(state.selected)) state.selected = '';
  state.matches = search(index, searchBox.value);
  showSummary();
  render(first);
  if (state.selected) showNode(index.nodes.get(state.selected) as GraphNode);
}

// --- events ------------------------------------------------------------------------------------

root.addEventListener('click', (ev) => {
  const target = ev.target as Element;
  const item = target.closest<SVGGElement>('.item');
  if (item) {
    const id = item.dataset.id ?? '';
    if (item.dataset.kind === 'group') {
      state.expanded.add(id);
      render();
    } else select(id);
    return;
  }
  const frame = target.closest<SVGGElement>('.frame');
  if (frame) {
    state.expanded.delete(frame.dataset.id ?? '');
    render();
  }
});

targetSelect.addEventListener('change', () => {
  state.target = targetSelect.value;
  showSummary();
  render();
  host?.postMessage({ type: 'target', target: state.target });
});

searchBox.addEventListener('input', () => {
  if (!state.index) return;
  state.matches = search(state.index, searchBox.value);
  state.match = -1;
  mark();
  statusEl.textContent = searchBox.value ? `${state.matches.length} match${state.matches.length === 1 ? '' : 'es'}` : '';
});
searchBox.addEventListener('keydown', (ev) => {
  if (ev.key !== 'Enter' || !state.matches.length) return;
  state.match = (state.match + 1) % state.matches.length;
  const node = state.matches[state.match];
  expandTo(node);
  render();
  select(node.id);
  centreOn(node.id);
});

buttons[0].addEventListener('click', fit);
buttons[1].addEventListener('click', () => {
  const index = state.index;
  if (!index) return;
  // Every group, while the drawing stays fluid: a 70 B model's 8,000 ops are opened group by group.
  state.expanded = initialExpansion(index, EXPAND_ALL_BUDGET, true);
  state.capped = index.groups.size - state.expanded.size;
  render(true);
});
buttons[2].addEventListener('click', () => {
  state.expanded.clear();
  state.capped = 0;
  render(true);
});

svg.addEventListener('wheel', (ev) => {
  ev.preventDefault();
  const r = svg.getBoundingClientRect();
  const px = ev.clientX - r.left;
  const py = ev.clientY - r.top;
  const k = Math.min(4, Math.max(0.03, state.view.k * Math.exp(-ev.deltaY * 0.0015)));
  const f = k / state.view.k;
  setView(px - (px - state.view.x) * f, py - (py - state.view.y) * f, k);
}, { passive: false });

let drag: { x: number; y: number; vx: number; vy: number } | undefined;
svg.addEventListener('pointerdown', (ev) => {
  if ((ev.target as Element).closest('.item, .frame')) return;
  drag = { x: ev.clientX, y: ev.clientY, vx: state.view.x, vy: state.view.y };
  svg.classList.add('dragging');
});
window.addEventListener('pointermove', (ev) => {
  if (drag) setView(drag.vx + ev.clientX - drag.x, drag.vy + ev.clientY - drag.y, state.view.k);
});
window.addEventListener('pointerup', () => {
  drag = undefined;
  svg.classList.remove('dragging');
});

/** The cursor's nodes brought into view when none of them is (a big graph, scrolled away). */
function showLit(): void {
  const lit = [...root.querySelectorAll<SVGGElement>('.item.lit')];
  const r = svg.getBoundingClientRect();
  const inView = (g: SVGGElement): boolean => {
    const q = g.getBoundingClientRect();
    return q.right > r.left && q.left < r.right && q.bottom > r.top && q.top < r.bottom;
  };
  if (lit.length && !lit.some(inView)) centreOn(lit[0].dataset.id ?? '');
}

function sameFile(a: string | null, b: string): boolean {
  return !!a && (a === b || a.endsWith(b) || b.endsWith(a));
}

window.addEventListener('message', (ev: MessageEvent<Incoming>) => {
  const msg = ev.data;
  if (msg?.type === 'graph') setGraph(msg.graph, msg.target);
  else if (msg?.type === 'cursor' && state.index) {
    state.lit = new Set(state.index.graph.nodes.filter((n) => n.line === msg.line && sameFile(n.file, msg.file)).map((n) => n.id));
    document.body.dataset.lit = String(state.lit.size);
    mark();
    showLit();
  } else if (msg?.type === 'error') {
    statusEl.textContent = msg.message;
    document.body.dataset.error = msg.message;
  }
});

// The details panel opening, or the editor's panel resized, changes the canvas: a view nobody
// moved since it was fitted is fitted again.
new ResizeObserver(() => {
  if (state.fitted) fit();
}).observe(svg);

const embedded = document.getElementById('graph-data');
if (embedded?.textContent) setGraph(JSON.parse(embedded.textContent) as ModuleGraph);
host?.postMessage({ type: 'ready' });
