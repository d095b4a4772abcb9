// Lays out what is visible one expanded group at a time (a nested layout): a group's members
// are laid out by dagre (layered, top to bottom) as a graph of their own, and the group is then
// one box of that size in its parent's layout. dagre's compound layout orders the members of
// every group together: on a ResNet-50's 250 groups that took 46 s. Laid out apart, a group
// costs milliseconds, and its layout is kept by what it holds (its members, their sizes, the
// edges between them), so expanding one group lays out again only it and the groups holding it.
//
// An edge is laid out in the innermost group holding both its ends, between the members that
// hold them (an edge to or from an expanded group ends at its frame); one that enters a group
// from outside also marks the member it reaches with a stub (a short arrow naming the value's
// maker). A value many members of one group use (the rotary tables every layer of a Llama
// reads) is not laid out as an edge to each: each user gets a stub instead, so the layers stack
// as a chain rather than fanning out across the whole graph (80 such edges took dagre 1.5 s).

import type Dagre from '@dagrejs/dagre' with { 'resolution-mode': 'import' };
import type { Visible } from './model';

/** The layout library: the page bundles dagre and hands it over (the unit tests load it). */
export type LayoutLibrary = typeof Dagre;

export interface Box {
  x: number; // centre
  y: number;
  width: number;
  height: number;
}

/** A value that reaches a box without an edge drawn to it: from outside its group, or one of
 *  many users of that value. `x`, `y`: where its arrow ends (the box's top). */
export interface Stub {
  to: string;
  from: string;
  label: string; // what made the value
  type: string;
  x: number;
  y: number;
}

export interface Layout {
  boxes: Map<string, Box>; // items and clusters (a cluster's box is its frame), by id
  edges: { from: string; to: string; type: string; points: { x: number; y: number }[] }[];
  stubs: Stub[];
  width: number;
  height: number;
  laidOut: number; // groups (and the top) laid out anew, not found in the cache
}

const CHAR_W = 7;
export const ITEM_H = 38;
export const FRAME_TITLE = 20;
const FRAME_PAD = 10;
const MARGIN = 20;
/** A value used by more members of one group than this gets stubs, not edges. */
export const FANOUT = 6;
/** Above this many members a group is ranked by longest path (network simplex is quadratic). */
const SIMPLEX_LIMIT = 300;
/** Layouts kept; the cache starts again past it (an edit keeps most groups' layouts). */
const CACHE_LIMIT = 5000;

/** A box's width for its label and second line. */
export function itemWidth(label: string, sub: string): number {
  return Math.min(320, Math.max(70, CHAR_W * Math.max(label.length, sub.length) + 20));
}

interface Size {
  width: number;
  height: number;
}

interface LevelEdge {
  from: string;
  to: string;
  type: string;
}

/** One group's (or the top's) layout, in its own coordinates (from 0, 0). */
interface Level {
  width: number;
  height: number;
  local: Map<string, Box>;
  points: Map<string, { x: number; y: number }[]>; // by `${from}\0${to}`
}

/**
 * Lays out with `lib`, keeping each group's layout by what it holds, across renders and
 * graphs (the key is content: an edit keeps the layouts of the groups it did not touch).
 */
export class Layouter {
  private readonly levels = new Map<string, Level>();

  constructor(private readonly lib: LayoutLibrary) {}

  /** Lays out `v`, re-using the layouts of groups laid out before. */
  layout(v: Visible): Layout {
    return layout(v, this.lib, this.levels);
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** What each group holds and which edges and stubs belong to which group. */
class Levels {
  readonly parentOf = new Map<string, string | null>();
  readonly children = new Map<string | null, string[]>();
  readonly labels = new Map<string, string>();
  readonly sizes = new Map<string, Size>();
  readonly clusters = new Set<string>();
  readonly edges = new Map<string | null, Map<string, LevelEdge>>();
  readonly stubs = new Map<string, { from: string; label: string; type: string }[]>();

  constructor(v: Visible) {
    for (const c of v.clusters) {
      this.parentOf.set(c.id, c.parent);
      this.labels.set(c.id, c.label);
      this.clusters.add(c.id);
    }
    for (const i of v.items) {
      this.parentOf.set(i.id, i.parent);
      this.labels.set(i.id, i.label);
      this.sizes.set(i.id, { width: itemWidth(i.label, i.sub), height: ITEM_H });
      push(this.children, i.parent, i.id);
    }
    for (const c of v.clusters) push(this.children, c.parent, c.id);
    for (const e of v.edges) this.place(e.from, e.to, e.type);
    this.spreadFanOut();
  }

  private ancestors(id: string): (string | null)[] {
    const out: (string | null)[] = [];
    for (let p = this.parentOf.get(id) ?? null; ; p = this.parentOf.get(p) ?? null) {
      out.push(p);
      if (p === null) return out;
    }
  }

  /** The edge at the innermost group holding both ends, between the members holding them. */
  private place(from: string, to: string, type: string): void {
    const above = new Set(this.ancestors(to));
    let a = from;
    let level = this.parentOf.get(a) ?? null;
    while (level !== null && !above.has(level)) {
      a = level;
      level = this.parentOf.get(a) ?? null;
    }
    let b = to;
    for (let p = this.parentOf.get(b) ?? null; p !== level; p = this.parentOf.get(b) ?? null) {
      if (p === null) return;
      b = p;
    }
    if (a === b) return;
    const edges = this.edges.get(level) ?? new Map<string, LevelEdge>();
    this.edges.set(level, edges);
    const key = `${a}\u0000${b}`;
    if (!edges.has(key)) edges.set(key, { from: a, to: b, type });
    if (b !== to) this.stub(to, from, type);
  }

  private stub(to: string, from: string, type: string): void {
    const list = this.stubs.get(to) ?? [];
    if (!list.some((s) => s.from === from)) list.push({ from, label: this.labels.get(from) ?? from, type });
    this.stubs.set(to, list);
  }

  /** A member's value used by more than FANOUT others of its group: stubs instead of edges. */
  private spreadFanOut(): void {
    for (const edges of this.edges.values()) {
      const out = new Map<string, LevelEdge[]>();
      for (const e of edges.values()) push(out, e.from, e);
      for (const [, many] of out) {
        if (many.length <= FANOUT) continue;
        for (const e of many) {
          edges.delete(`${e.from}\u0000${e.to}`);
          this.stub(e.to, e.from, e.type);
        }
      }
    }
  }
}

const NODESEP = 18;
const RANKSEP = 36;

/**
 * A group whose members form one chain (conv → norm → relu, most groups of a ResNet), stacked
 * without dagre: where dagre would put them, for a tenth of its time. Undefined otherwise.
 */
function chain(ids: string[], sizes: Map<string, Size>, edges: LevelEdge[]): Level | undefined {
  if (edges.length !== ids.length - 1) return undefined;
  const next = new Map<string, string>();
  const hasIn = new Set<string>();
  for (const e of edges) {
    if (next.has(e.from) || hasIn.has(e.to)) return undefined;
    next.set(e.from, e.to);
    hasIn.add(e.to);
  }
  const first = ids.filter((id) => !hasIn.has(id));
  if (first.length !== 1) return undefined;
  const order: string[] = [];
  for (let id: string | undefined = first[0]; id !== undefined && order.length <= ids.length; id = next.get(id)) order.push(id);
  if (order.length !== ids.length) return undefined; // a cycle
  const width = Math.max(...order.map((id) => (sizes.get(id) as Size).width));
  const local = new Map<string, Box>();
  let y = 0;
  for (const id of order) {
    const size = sizes.get(id) as Size;
    local.set(id, { x: width / 2, y: y + size.height / 2, ...size });
    y += size.height + RANKSEP;
  }
  const points = new Map<string, { x: number; y: number }[]>();
  for (const e of edges) {
    const a = local.get(e.from) as Box;
    const b = local.get(e.to) as Box;
    points.set(`${e.from}\u0000${e.to}`, [{ x: a.x, y: a.y + a.height / 2 }, { x: b.x, y: b.y - b.height / 2 }]);
  }
  return { width, height: Math.max(0, y - RANKSEP), local, points };
}

function layOut(lib: LayoutLibrary, ids: string[], sizes: Map<string, Size>, edges: LevelEdge[]): Level {
  const simple = chain(ids, sizes, edges);
  if (simple) return simple;
  const g = new lib.graphlib.Graph({ multigraph: false });
  g.setGraph({ rankdir: 'TB', nodesep: NODESEP, ranksep: RANKSEP, marginx: 0, marginy: 0, ranker: ids.length > SIMPLEX_LIMIT ? 'longest-path' : 'network-simplex' });
  g.setDefaultEdgeLabel(() => ({}));
  for (const id of ids) g.setNode(id, { ...(sizes.get(id) as Size) });
  for (const e of edges) g.setEdge(e.from, e.to);
  lib.layout(g);
  const local = new Map<string, Box>();
  for (const id of ids) {
    const n = g.node(id);
    local.set(id, { x: n.x ?? 0, y: n.y ?? 0, width: n.width, height: n.height });
  }
  const points = new Map<string, { x: number; y: number }[]>();
  for (const e of edges) points.set(`${e.from}\u0000${e.to}`, g.edge(e.from, e.to)?.points ?? []);
  const label = g.graph();
  return { width: label.width ?? 0, height: label.height ?? 0, local, points };
}

function layout(v: Visible, lib: LayoutLibrary, cache: Map<string, Level>): Layout {
  const lv = new Levels(v);
  const levels = new Map<string | null, Level>();
  let laidOut = 0;
  // Innermost first: a group's size is known before its parent is laid out.
  const build = (level: string | null): Level => {
    const ids = lv.children.get(level) ?? [];
    for (const id of ids) {
      if (!lv.clusters.has(id)) continue;
      const inner = build(id);
      const title = itemWidth(lv.labels.get(id) ?? '', '') + 10;
      lv.sizes.set(id, { width: Math.max(inner.width + 2 * FRAME_PAD, title), height: inner.height + 2 * FRAME_PAD + FRAME_TITLE });
    }
    const edges = [...(lv.edges.get(level)?.values() ?? [])];
    const key = ids.map((id) => `${id}:${lv.sizes.get(id)?.width},${lv.sizes.get(id)?.height}`).join('|') + '#' + edges.map((e) => `${e.from}>${e.to}`).join('|');
    let laid = cache.get(key);
    if (!laid) {
      laid = layOut(lib, ids, lv.sizes, edges);
      if (cache.size >= CACHE_LIMIT) cache.clear();
      cache.set(key, laid);
      laidOut++;
    }
    levels.set(level, laid);
    return laid;
  };
  const top = build(null);
  const out: Layout = { boxes: new Map(), edges: [], stubs: [], width: top.width + 2 * MARGIN, height: top.height + 2 * MARGIN, laidOut };
  const place = (level: string | null, ox: number, oy: number): void => {
    const laid = levels.get(level) as Level;
    for (const [id, b] of laid.local) {
      const box = { x: ox + b.x, y: oy + b.y, width: b.width, height: b.height };
      out.boxes.set(id, box);
      if (lv.clusters.has(id)) {
        const inner = levels.get(id) as Level;
        place(id, box.x - inner.width / 2, box.y - box.height / 2 + FRAME_PAD + FRAME_TITLE);
      }
    }
    for (const e of lv.edges.get(level)?.values() ?? []) {
      const points = (laid.points.get(`${e.from}\u0000${e.to}`) ?? []).map((p) => ({ x: ox + p.x, y: oy + p.y }));
      out.edges.push({ ...e, points });
    }
  };
  place(null, MARGIN, MARGIN);
  for (const [to, list] of lv.stubs) {
    const box = out.boxes.get(to);
    if (!box) continue;
    list.forEach((s, i) => {
      const x = box.x + (i - (list.length - 1) / 2) * 10;
      out.stubs.push({ to, ...s, x, y: box.y - box.height / 2 });
    });
  }
  return out;
}
