// The ONNX model view's data, without the DOM (unit-tested in Node): the nodes grouped and
// searched, each node's verdict badges, the backends' summaries. The shapes are the server's
// `torchMlirLens/onnxModel` answer (client/src/protocol.ts: OnnxModelResponse).

export type NodeState = 'ok' | 'rejected' | 'knock-on' | 'unknown';

export interface NodeVerdict {
  target: string;
  state: NodeState;
  why: string | null;
}

export interface NodeRow {
  index: number;
  name: string;
  opType: string;
  domain: string;
  opset: number;
  inputs: string[];
  outputs: string[];
  verdicts: NodeVerdict[];
}

export interface ValueInfo {
  name: string;
  dtype: string;
  dims: (number | string)[];
}

export interface TargetSummary {
  target: string;
  ok: boolean;
  partial: boolean;
  rejected: number;
  message: string | null;
}

export interface Model {
  uri: string;
  module: string;
  graph: string;
  opsets: Record<string, number>;
  inputs: ValueInfo[];
  outputs: ValueInfo[];
  nodes: NodeRow[];
  targets: TargetSummary[];
  fixes: string[];
  error?: { kind: string; message: string } | null;
}

export type Grouping = 'op' | 'verdict' | 'none';

export interface Group {
  key: string;
  label: string;
  nodes: NodeRow[];
  problems: number; // nodes some backend rejects or fails on
}

export const TITLES: Record<string, string> = { torch: 'Torch', linalg: 'Linalg', tosa: 'TOSA', stablehlo: 'StableHLO' };
export const MARKS: Record<NodeState, string> = { ok: '✓', rejected: '✗', 'knock-on': '↯', unknown: '?' };

export function title(target: string): string {
  return TITLES[target] ?? target;
}

/** `Conv`, or `com.microsoft.FastGelu` outside ONNX's own domain. */
export function operator(node: NodeRow): string {
  return node.domain && node.domain !== 'ai.onnx' ? `${node.domain}.${node.opType}` : node.opType;
}

/** Whether some backend does not take the node. */
export function isProblem(node: NodeRow): boolean {
  return node.verdicts.some((v) => v.state !== 'ok');
}

/** The nodes whose index, name, operator or types hold `query` (case-insensitive; "#12" an index). */
export function search(nodes: readonly NodeRow[], query: string): NodeRow[] {
  const q = query.trim().toLowerCase();
  if (!q) return [...nodes];
  if (/^#\d+$/.test(q)) return nodes.filter((n) => n.index === Number(q.slice(1)));
  return nodes.filter((n) =>
    [String(n.index), n.name, operator(n), ...n.inputs, ...n.outputs].some((t) => t.toLowerCase().includes(q)),
  );
}

/** The worst state of a node over the backends (rejected first). */
export function worst(node: NodeRow): NodeState {
  const order: NodeState[] = ['rejected', 'knock-on', 'unknown', 'ok'];
  return order.find((s) => node.verdicts.some((v) => v.state === s)) ?? 'ok';
}

const VERDICT_LABELS: Record<NodeState, string> = {
  rejected: 'Rejected by a backend',
  'knock-on': 'Failing only because of another node',
  unknown: 'Not known (a backend failed as a whole)',
  ok: 'Lowered by every backend',
};

/** Nodes grouped: by operator (groups with problems first, then the larger), by their worst
 *  verdict, or one group in the file's order. Nodes keep the file's order inside a group. */
export function group(nodes: readonly NodeRow[], by: Grouping): Group[] {
  const groups = new Map<string, Group>();
  for (const node of nodes) {
    const key = by === 'op' ? operator(node) : by === 'verdict' ? worst(node) : 'all';
    const label = by === 'verdict' ? VERDICT_LABELS[key as NodeState] : by === 'op' ? key : 'All nodes';
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { key, label, nodes: [], problems: 0 }));
    g.nodes.push(node);
    if (isProblem(node)) g.problems++;
  }
  const out = [...groups.values()];
  if (by === 'op') out.sort((a, b) => Number(b.problems > 0) - Number(a.problems > 0) || b.nodes.length - a.nodes.length || a.key.localeCompare(b.key));
  if (by === 'verdict') {
    const order = ['rejected', 'knock-on', 'unknown', 'ok'];
    out.sort((a, b) => order.indexOf(a.key) - order.indexOf(b.key));
  }
  return out;
}

/** "Linalg ✓", "TOSA ✗ 2 nodes", "StableHLO ✗ (the pipeline failed)": one backend on the model. */
export function summaryText(s: TargetSummary): string {
  if (s.ok) return `${title(s.target)} ✓`;
  if (s.rejected) return `${title(s.target)} ✗ ${s.rejected} node${s.rejected === 1 ? '' : 's'}`;
  return `${title(s.target)} ✗${s.message ? ` (${s.message})` : ''}`;
}

/** `float [batch, 4]`: a graph input or output. */
export function valueText(v: ValueInfo): string {
  return `${v.dtype} [${v.dims.join(', ')}]`;
}

/** `ai.onnx 17 · com.microsoft 1`. */
export function opsetText(opsets: Record<string, number>): string {
  return Object.entries(opsets)
    .map(([domain, version]) => `${domain || 'ai.onnx'} ${version}`)
    .join(' · ');
}
