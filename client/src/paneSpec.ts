// What an IR pane shows, and its `torch-mlir-lens:` URI (pure; unit-tested).
// The path is the tab title ("MLP · linalg.mlir"); the query says what to lower, so two files
// with a module of the same name get two panes.

export const SCHEME = 'torch-mlir-lens';

export interface PaneSpec {
  source: string; // source file URI
  module: string;
  target: string; // a target name, or "custom" with `pipeline`
  pipelineName?: string;
  pipeline?: string;
  pass?: number; // index into printAfterAll's passes
  passName?: string;
  blocks?: 'inline' | 'stitched'; // repeated blocks; absent: the stitchBlocks setting
  via?: 'onnx'; // through torch.onnx.export and the ONNX importer; absent: torch.export
}

export interface PaneUriParts {
  path: string;
  query: string;
}

function label(spec: PaneSpec): string {
  return spec.pipelineName ?? spec.target;
}

/** Path segments may not hold "/"; pass names like "func.func(canonicalize)" keep their look. */
function clean(text: string): string {
  return text.replace(/[\\/]/g, '∕');
}

export function paneTitle(spec: PaneSpec): string {
  const pass = spec.pass !== undefined ? ` · after ${clean(spec.passName ?? `pass ${spec.pass + 1}`)}` : '';
  const blocks = spec.blocks === 'inline' ? ' · blocks inline' : spec.blocks === 'stitched' ? ' · blocks once' : '';
  const via = spec.via === 'onnx' ? ' · via ONNX' : '';
  return `${clean(spec.module)} · ${clean(label(spec))}${via}${blocks}${pass}.mlir`;
}

export function toUriParts(spec: PaneSpec): PaneUriParts {
  const q = new URLSearchParams();
  q.set('source', spec.source);
  q.set('module', spec.module);
  q.set('target', spec.target);
  if (spec.pipelineName) q.set('pipelineName', spec.pipelineName);
  if (spec.pipeline) q.set('pipeline', spec.pipeline);
  if (spec.pass !== undefined) q.set('pass', String(spec.pass));
  if (spec.passName) q.set('passName', spec.passName);
  if (spec.blocks) q.set('blocks', spec.blocks);
  if (spec.via) q.set('via', spec.via);
  return { path: '/' + paneTitle(spec), query: q.toString() };
}

export function fromQuery(query: string): PaneSpec | undefined {
  const q = new URLSearchParams(query);
  const source = q.get('source');
  const module = q.get('module');
  const target = q.get('target');
  if (!source || !module || !target) return undefined;
  const spec: PaneSpec = { source, module, target };
  const pipelineName = q.get('pipelineName');
  const pipeline = q.get('pipeline');
  const pass = q.get('pass');
  const passName = q.get('passName');
  if (pipelineName) spec.pipelineName = pipelineName;
  if (pipeline) spec.pipeline = pipeline;
  if (pass !== null && /^\d+$/.test(pass)) spec.pass = Number(pass);
  if (passName) spec.passName = passName;
  const blocks = q.get('blocks');
  if (blocks === 'inline' || blocks === 'stitched') spec.blocks = blocks;
  if (q.get('via') === 'onnx') spec.via = 'onnx';
  return spec;
}

/** Text shown in a pane while lowering or when it failed. */
export function placeholder(spec: PaneSpec, what: 'loading' | 'no-server'): string {
  const t = label(spec);
  return what === 'loading'
    ? `// Torch-MLIR Lens: lowering ${spec.module} to ${t}…\n`
    : `// Torch-MLIR Lens: the server is not running; see the output channel (Torch-MLIR Lens: Show Output).\n`;
}

export interface FailureInfo {
  ok: boolean;
  /** The target IR of everything the backend accepts; the server's header lists the rest. */
  partial?: boolean;
  ir: string;
  diagnostics: { severity: string; message: string; line: number | null; op: string | null }[];
}

/**
 * IR as shown: a failed lowering shows its diagnostics as comments above the IR it reached; a
 * partial lowering (the backend took all but some ops) is shown as the server wrote it.
 * `irOffset` is how many lines precede the IR, so the server's IR line numbers still map.
 */
export function paneText(spec: PaneSpec, res: FailureInfo): { text: string; irOffset: number } {
  if ((res.ok || res.partial) && res.ir) {
    return { text: res.ir.endsWith('\n') ? res.ir : res.ir + '\n', irOffset: 0 };
  }
  const lines = [`// Torch-MLIR Lens: lowering ${spec.module} to ${label(spec)} failed.`];
  for (const d of res.diagnostics) {
    const where = d.line ? ` (line ${d.line})` : '';
    const op = d.op ? ` [${d.op}]` : '';
    for (const [i, text] of d.message.split('\n').entries()) {
      lines.push(i === 0 ? `// ${d.severity}${op}${where}: ${text}` : `//   ${text}`);
    }
  }
  if (!res.ir) return { text: lines.join('\n') + '\n', irOffset: 0 };
  return { text: lines.join('\n') + '\n\n' + res.ir, irOffset: lines.length + 1 };
}
