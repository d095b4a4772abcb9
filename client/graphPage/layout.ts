// Lays out what is visible with dagre (layered, top to bottom): collapsed groups and ops are
// boxes, expanded groups frames around their members (dagre's compound graphs).

import dagre from '@dagrejs/dagre';
import type { Visible } from './model';

export interface Box {
  x: number; // centre
  y: number;
  width: number;
  height: number;
}

export interface Layout {
  boxes: Map<string, Box>; // items and clusters, by id
  edges: { from: string; to: string; type: string; points: { x: number; y: number }[] }[];
  width: number;
  height: number;
}

const CHAR_W = 7;
export const ITEM_H = 38;

/** A box's width for its label and second line. */
export function itemWidth(label: string, sub: string): number {
  return Math.min(320, Math.max(70, CHAR_W * Math.max(label.length, sub.length) + 20));
}

export function layout(v: Visible): Layout {
  const g = new dagre.graphlib.Graph({ compound: true, multigraph: false });
  // The longest-path ranker keeps layouts of a few hundred boxes in tens of milliseconds.
  g.setGraph({ rankdir: 'TB', nodesep: 18, ranksep: 40, marginx: 20, marginy: 20, ranker: v.items.length > 300 ? 'longest-path' : 'network-simplex' });
  g.setDefaultEdgeLabel(() => ({}));
  for (const c of v.clusters) g.setNode(c.id, { width: 0, height: 0 });
  for (const c of v.clusters) if (c.parent) g.setParent(c.id, c.parent);
  for (const i of v.items) {
    g.setNode(i.id, { width: itemWidth(i.label, i.sub), height: ITEM_H });
    if (i.parent) g.setParent(i.id, i.parent);
  }
  for (const e of v.edges) g.setEdge(e.from, e.to);
  dagre.layout(g);
  const boxes = new Map<string, Box>();
  for (const id of g.nodes()) {
    const n = g.node(id);
    if (n && n.x !== undefined && n.y !== undefined) boxes.set(id, { x: n.x, y: n.y, width: n.width, height: n.height });
  }
  const edges = v.edges.map((e) => ({ ...e, points: g.edge(e.from, e.to)?.points ?? [] }));
  const label = g.graph();
  return { boxes, edges, width: label.width ?? 0, height: label.height ?? 0 };
}
