// The graph's data (protocol/graph.py's ModuleGraph as JSON) and what of it is visible: a
// group is either expanded (its members drawn inside its frame) or collapsed (one box standing
// for everything under it). Edges run between the visible stand-ins of their ends.

export type Status = 'lowered' | 'rejected' | 'rewritten' | 'knock-on' | 'unknown';

export interface Verdict {
  ok: boolean | null;
  status: Status;
  why: string | null;
  rewrite?: string;
}

export interface GraphNode {
  id: string;
  op: string;
  name: string;
  group: string | null;
  file: string | null;
  line: number | null;
  library_line: { file: string; line: number } | null;
  ir_lines: number[];
  shape: (number | string)[] | null;
  dtype: string | null;
  targets: Record<string, Verdict>;
  block?: string;
  verify?: string;
}

export interface GraphGroup {
  id: string;
  name: string;
  kind: 'module' | 'call' | 'block';
  parent: string | null;
  path: string;
  class: string;
  line?: number;
  paths?: string[];
}

export interface ModuleGraph {
  module: string;
  file: string;
  targets: string[];
  nodes: GraphNode[];
  edges: { from: string; to: string; type: string }[];
  groups: GraphGroup[];
  verdicts: Record<string, Verdict>;
  ir: string;
  stats: Record<string, unknown>;
  /** Verify's verdict, when it has run (its problems are on their nodes: `GraphNode.verify`). */
  verify?: { ok: boolean; message: string; line: number | null };
}

/** Worst first: a group shows the worst status of what it holds. */
export const SEVERITY: Status[] = ['rejected', 'knock-on', 'unknown', 'rewritten', 'lowered'];

export interface VisibleItem {
  id: string; // a node's id, or a collapsed group's
  kind: 'node' | 'group';
  parent: string | null; // the expanded group it is drawn in
  label: string;
  sub: string;
  status: Status;
  counts: Partial<Record<Status, number>>; // a collapsed group: its nodes per status
  verify: boolean; // Verify marked it (a collapsed group: one of its nodes)
}

export interface Visible {
  items: VisibleItem[];
  clusters: { id: string; parent: string | null; label: string }[];
  edges: { from: string; to: string; type: string }[];
}

/** Indexes over one graph: children, members, the ancestors of a node. */
export class GraphIndex {
  readonly nodes = new Map<string, GraphNode>();
  readonly groups = new Map<string, GraphGroup>();
  readonly childGroups = new Map<string | null, GraphGroup[]>();
  readonly childNodes = new Map<string | null, GraphNode[]>();
  private readonly under = new Map<string, GraphNode[]>();

  constructor(readonly graph: ModuleGraph) {
    for (const g of graph.groups) {
      this.groups.set(g.id, g);
      push(this.childGroups, g.parent, g);
    }
    for (const n of graph.nodes) {
      this.nodes.set(n.id, n);
      push(this.childNodes, n.group, n);
      for (const a of this.ancestors(n.group)) push(this.under, a, n);
    }
  }

  /** The group `id` and every group above it, innermost first. */
  ancestors(id: string | null): string[] {
    const out: string[] = [];
    for (let g = id; g !== null && g !== undefined; g = this.groups.get(g)?.parent ?? null) out.push(g);
    return out;
  }

  /** Every node inside a group, at any depth. */
  nodesUnder(id: string): GraphNode[] {
    return this.under.get(id) ?? [];
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

export function statusOf(node: GraphNode, target: string): Status {
  return node.targets[target]?.status ?? 'unknown';
}

export function shapeText(node: GraphNode): string {
  if (!node.shape) return node.dtype ?? '';
  return `${node.dtype ?? '?'}[${node.shape.join(', ')}]`;
}

function opLabel(node: GraphNode): string {
  if (node.op === 'output') return 'output';
  if (node.op === 'input') return `input ${node.name}`;
  if (node.op === 'block') return `${node.name} → block`;
  return node.op.replace(/^aten\.|^prims\./, '').replace(/\.(default|Tensor|Scalar)$/, '');
}

/** What is drawn, given which groups are expanded, for the backend `target`. */
export function visible(index: GraphIndex, expanded: Set<string>, target: string): Visible {
  const items: VisibleItem[] = [];
  const clusters: Visible['clusters'] = [];
  const standIn = new Map<string, string>();
  const walk = (group: string | null, parent: string | null): void => {
    for (const n of index.childNodes.get(group) ?? []) {
      items.push({ id: n.id, kind: 'node', parent, label: opLabel(n), sub: shapeText(n), status: statusOf(n, target), counts: {}, verify: !!n.verify });
      standIn.set(n.id, n.id);
    }
    for (const g of index.childGroups.get(group) ?? []) {
      if (expanded.has(g.id)) {
        clusters.push({ id: g.id, parent, label: g.name });
        walk(g.id, g.id);
        continue;
      }
      const counts: Partial<Record<Status, number>> = {};
      let verify = false;
      for (const n of index.nodesUnder(g.id)) {
        verify ||= !!n.verify;
        const s = statusOf(n, target);
        counts[s] = (counts[s] ?? 0) + 1;
        standIn.set(n.id, g.id);
      }
      const total = index.nodesUnder(g.id).length;
      const status = SEVERITY.find((s) => counts[s]) ?? 'lowered';
      items.push({ id: g.id, kind: 'group', parent, label: g.name, sub: `${total} ops ▸`, status, counts, verify });
    }
  };
  walk(null, null);
  const seen = new Set<string>();
  const edges: Visible['edges'] = [];
  for (const e of index.graph.edges) {
    const from = standIn.get(e.from);
    const to = standIn.get(e.to);
    if (!from || !to || from === to) continue;
    const key = `${from}\u0000${to}`;
    if (seen.has(key)) continue;
    seen.add(key);
    edges.push({ from, to, type: e.type });
  }
  // A cluster left without members (all its content elsewhere) cannot be laid out: drop it.
  const used = new Set(items.map((i) => i.parent).concat(clusters.map((c) => c.parent)));
  return { items, clusters: clusters.filter((c) => used.has(c.id)), edges };
}

/** How many boxes "Expand all" draws at most: past it the deepest groups stay collapsed. */
export const EXPAND_ALL_BUDGET = 1500;

/**
 * The groups to expand: breadth first from the top while what is drawn stays under `budget`
 * boxes. At first (`blocks` false) a repeated block's function stays collapsed (its calls point
 * at it); "Expand all" opens it too.
 */
export function initialExpansion(index: GraphIndex, budget = 40, blocks = false): Set<string> {
  const expanded = new Set<string>();
  let count = (index.childNodes.get(null)?.length ?? 0) + (index.childGroups.get(null)?.length ?? 0);
  let frontier = (index.childGroups.get(null) ?? []).filter((g) => blocks || g.kind !== 'block');
  while (frontier.length) {
    const next: GraphGroup[] = [];
    for (const g of frontier) {
      // Its members replace its box; its frame counts as one more (frames cost dagre most).
      const adds = (index.childNodes.get(g.id)?.length ?? 0) + (index.childGroups.get(g.id)?.length ?? 0);
      if (count + adds > budget) continue;
      expanded.add(g.id);
      count += adds;
      next.push(...(index.childGroups.get(g.id) ?? []));
    }
    frontier = next;
  }
  return expanded;
}

/** Nodes matching a search: op, name, module path or class, case-insensitive. */
export function search(index: GraphIndex, query: string): GraphNode[] {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  return index.graph.nodes.filter((n) => {
    if (n.op.toLowerCase().includes(q) || n.name.toLowerCase().includes(q)) return true;
    const g = n.group ? index.groups.get(n.group) : undefined;
    return !!g && (g.path.toLowerCase().includes(q) || g.name.toLowerCase().includes(q));
  });
}
