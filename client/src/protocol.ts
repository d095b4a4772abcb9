// The server's custom requests, notifications and commands, typed: the same shapes as
// server/torch_mlir_lens/protocol/lsp.py (camelCase here, snake_case there). Every interface
// below has a class of the same name there with the same fields; a field is optional here
// exactly when it has a default there. tests/test_protocol_agreement.py checks both.
// Lines in `map` and `diagnostics` are 1-based, as in the engine's results.

import { NotificationType, RequestType } from 'vscode-languageclient/node';

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export type ServerState = 'starting' | 'ready' | 'lowering' | 'error' | 'untrusted';
export type InputsStatus = 'comment' | 'convention' | 'settings' | 'derived' | 'inferred' | 'missing';
export type OnnxNodeState = 'ok' | 'rejected' | 'knock-on' | 'unknown';

export interface LowerParams {
  uri: string;
  module?: string | null;
  position?: Position | null;
  target?: string | null;
  pipeline?: string | null; // a name from the `pipelines` setting, or a pipeline string
  printAfterAll?: boolean;
  workDoneToken?: number | string | null;
  inlineBlocks?: boolean | null; // repeated blocks inline; absent: the stitchBlocks setting
  via?: string | null; // "onnx": through torch.onnx.export and the ONNX importer
}

export interface IrLineMapping {
  irLine: number; // 1-based line of `ir`
  uri: string; // source file URI
  line: number; // 1-based source line
  depth: number; // 0 innermost user frame; callers have higher depths
  cell?: number | null; // a notebook cell's 1-based number (uri, line: in that cell)
}

/**
 * Whole call chains of the IR lines made inside library code (e.g. a wrapped `transformers`
 * model), deduplicated: `chains[i]` is [file, line, file, line, ...] innermost frame first
 * (file = index into `files`, a URI; lines 1-based); `library` lists the file indices that
 * are library code (the others are the user's); `rows` are [irLine, chain index].
 */
export interface FrameTable {
  files: string[];
  library: number[];
  chains: number[][];
  rows: [number, number][];
}

export interface RelatedLocation {
  uri: string;
  line: number; // 1-based
  message: string;
}

export interface KnockOn {
  op: string | null;
  uri: string | null;
  line: number | null;
}

export interface LensDiagnostic {
  severity: string;
  message: string;
  kind: string;
  uri: string | null;
  line: number | null;
  op: string | null;
  target: string | null;
  related: RelatedLocation[]; // library lines behind a finding inside library code
  cause: string | null;
  ops: string[] | null;
  knockOn: KnockOn[] | null;
  cell?: number | null; // a notebook cell's 1-based number
  reason?: string | null; // why the backend refuses the op, when known
  node?: OnnxNodeRef | null; // in an .onnx file: the node (`line` is its index)
}

/** A node of an ONNX graph: its 1-based position (a result's `line`), name, operator. */
export interface OnnxNodeRef {
  index: number;
  name: string; // "" when it has none
  opType: string;
  domain: string; // "" for ONNX's own operators
  opset: number;
}

export interface PassIr {
  name: string;
  ir: string;
}

export interface LowerError {
  kind: string;
  message: string;
  uri: string | null;
  line: number | null;
  cell?: number | null;
}

export interface LowerResponse {
  module: string;
  target: string;
  ok: boolean;
  ir: string;
  map: IrLineMapping[];
  diagnostics: LensDiagnostic[];
  stats: Record<string, unknown>; // engine counters, camelCase: ops, mappedOps, irBytes, ...
  timings: Record<string, number | string>; // seconds per phase: load, export, lower, total, ...
  inputsSource: string | null; // how the inputs were found: "comment", "inferred", ...
  /** ok is false, but `ir` is the target IR with each rejected op kept as a call. */
  partial: boolean;
  frames?: FrameTable | null; // absent when no op comes from library code
  passes?: PassIr[] | null; // with printAfterAll only
  error?: LowerError | null; // a lowering that produced no IR at all
  rewrites?: string[] | null; // the rewrites it was lowered through, by name
}

export interface ModulesParams {
  uri: string;
}

export interface ModuleInfo {
  name: string;
  kind: 'class' | 'function';
  range: Range;
  selectionRange: Range;
  forwardRange: Range | null;
  inputs: InputsStatus;
  parents: string[];
}

export interface ModulesResponse {
  modules: ModuleInfo[];
}

export interface VerifyParams {
  uri: string;
  module: string;
  rtol?: number | null;
  atol?: number | null;
  target?: string | null; // the backend whose IR runs (default Linalg)
}

export interface OutputComparison {
  index: number;
  shape: number[];
  dtype: string;
  maxAbsErr: number | string; // "inf" / "nan" as strings: JSON has no such numbers
  maxRelErr: number | string;
  worstIndex: number[];
  ok: boolean;
  rtol: number;
  atol: number;
  message: string;
}

export interface FileRelatedLocation {
  file: string; // a file path, as the CLI's --json
  line: number;
  message: string;
}

export interface FileKnockOn {
  op: string | null;
  file: string | null;
  line: number | null;
}

/** A finding as the CLI's --json gives it: located by file path, not URI. */
export interface FileDiagnostic {
  severity: string;
  message: string;
  kind: string;
  file: string | null;
  line: number | null;
  op: string | null;
  target: string | null;
  cause: string | null;
  ops: string[] | null;
  knockOn: FileKnockOn[] | null;
  related?: FileRelatedLocation[]; // absent when empty
}

/** The first user line whose eager and compiled values differ. */
export interface Divergence {
  file: string;
  line: number;
  shape: number[];
  dtype: string;
  maxAbsErr: number | string; // "inf" / "nan" as strings: JSON has no such numbers
  worstIndex: number[];
  message: string;
}

export interface DimSize {
  name: string; // as the dynamic= comment names the dim
  size: number;
}

export interface VerifyAtSize {
  dims: DimSize[];
  example: boolean; // the example inputs' own sizes
  ok: boolean;
  message: string;
  maxAbsErr: number | string; // "inf" / "nan" as strings: JSON has no such numbers
  outputs: OutputComparison[];
}

export interface VerifyResponse {
  module: string;
  ok: boolean; // every output matched within its tolerances
  outputs: OutputComparison[];
  rtol: number | null; // null: per-dtype defaults (each output says what it used)
  atol: number | null;
  timings: Record<string, number | string>; // seconds: lowerLlvm, jit, run, eager, compare, total, ...
  diagnostics: FileDiagnostic[];
  message: string;
  kind: string | null; // null when ok
  maxAbsErr: number | string; // "inf" / "nan" as strings: JSON has no such numbers
  divergence: Divergence | null; // on a mismatch, when a diverging line was found
  sizes: VerifyAtSize[]; // dynamic dims: one per size run, the example's first; else empty
  speed?: CompiledSpeed | null; // an IREE target's run: its time against eager's
}

/** An IREE target's compiled module timed against eager on the same inputs and threads (ms per call). */
export interface CompiledSpeed {
  target: string;
  device: string;
  compiledMs: number | null;
  eagerMs: number | null;
  threads: number | null;
  runs: number | null;
}

export interface ServerInfoParams {
  waitForWorker?: boolean | null;
}

/** The effective settings (torchMlirLens.* merged with the defaults and pyproject.toml). */
export interface ServerSettings {
  defaultTarget: string;
  lensTargets: string[];
  diagnostics: string;
  diagnosticTargets: string[];
  timeoutSeconds: number;
  memoryLimitMb: number;
  exampleInputs: Record<string, string>; // keys are the user's names, as given
  pipelines: Record<string, string>;
  strictExport: boolean;
  cacheSizeMb?: number;
  ireeArchs?: Record<string, string>; // an IREE target → its architecture, where not the default
}

/** The engine's state and counters; the worker's are absent while it is busy. */
export interface EngineStats {
  restarts: number;
  ready: boolean;
  busy: boolean;
  workerPid: number | null;
  earlyPid: number | null;
  jobsRun?: number | null;
  exportsRun?: number | null;
  cachedPrograms?: number | null;
  pid?: number | null;
  cacheEntries?: number | null;
  cacheHits?: number | null;
  workerBusy?: boolean; // the worker did not answer in time: its counters are absent
  error?: string | null;
  // The persistent result cache in this server's process (null: off).
  persistentHits?: number | null;
  persistentMisses?: number | null;
  persistentStale?: number | null; // entries found whose files or libraries changed
  persistentWrites?: number | null;
}

export interface ServerInfoResponse {
  pid: number;
  version: string;
  torchImported: boolean;
  torchMlirImported: boolean;
  trusted: boolean; // some folder (or the documents the client opens) is trusted
  trustedFolders: string[]; // the trusted folders' real paths
  status: StatusParams; // as the last torchMlirLens/status
  settings: ServerSettings;
  engine: EngineStats | null; // null: no engine (untrusted, not started)
}

export interface StatusParams {
  state: ServerState;
  detail?: string | null;
}

/** A target needs a package the server's interpreter lacks (server → client, once per extra). */
export interface MissingDependencyParams {
  message: string; // what to install, in words
  extra: string; // the package's extra that brings it: torch-mlir-lens[extra]
  packages: string[];
}

export interface SetTrustedParams {
  trusted: boolean;
  folders?: string[] | null; // URIs; omitted: every workspace folder of the server
}

export interface ModuleArgs {
  uri: string;
  module: string;
}

export interface ExportModuleArgs {
  uri: string;
  module: string;
  target?: string | null;
  output?: string | null;
  bytecode?: boolean;
  overwrite?: boolean;
  /** Only for a path from the save dialog: it may then be outside the workspace folders. */
  chosenByUser?: boolean;
}

export interface ExportModuleResponse {
  path: string;
  uri: string;
  bytes: number | null;
  leftOut?: string | null; // an IREE module compiled without weights: what was left out
}

export interface ExportReproArgs {
  uri: string;
  module: string;
  target?: string | null;
  outputDir?: string | null;
  /** Only for a folder from the open dialog: it may then be outside the workspace folders. */
  chosenByUser?: boolean;
}

export interface ExportReproResponse {
  mlirPath: string;
  mlirUri: string;
  command: string;
}

export interface ExportCodeArgs {
  uri: string;
  module: string;
  target?: string | null;
}

/** Python that reproduces the module's IR with plain torch-mlir, its rewrites inlined. */
export interface ExportCodeResponse {
  code: string;
  rewrites: string[];
}

/** torchMlirLens.profile: time the module compiled for IREE CPU against eager, per line. */
export interface ProfileArgs {
  uri: string;
  module: string;
  target?: string | null; // default iree-cpu
}

export interface LineCost {
  uri: string;
  line: number; // 1-based
  ms: number;
  share: number; // of the compiled module's dispatch time, 0..1
}

export interface ProfileResponse {
  module: string;
  target: string;
  speed: CompiledSpeed | null;
  lineCosts: LineCost[]; // heaviest first
  message: string | null; // why there is no profile
}

export interface SetTrustedResponse {
  trusted: boolean;
}

export interface ExplainInputsResponse {
  message: string;
  template: string;
  /** Where the inputs come from: comment, convention, settings, derived, inferred, missing. */
  inputs: string;
}

/** The module whose graph to build (torchMlirLens/graph), verdicts at `targets`. */
export interface GraphParams {
  uri: string;
  module: string;
  targets?: string[] | null;
}

/** The graph as `torch-mlir-lens graph --format json` writes it (snake_case keys). */
export interface GraphResponse {
  graph: Record<string, unknown>;
}

/** The .onnx file to show, with verdicts at `targets` (backends; default: the diagnosed ones). */
export interface OnnxModelParams {
  uri: string;
  targets?: string[] | null;
}

/** A graph input or output: each dim a size, a dynamic dim's name, or "?". */
export interface OnnxValueInfo {
  name: string;
  dtype: string;
  dims: (number | string)[];
}

export interface OnnxNodeVerdict {
  target: string;
  state: OnnxNodeState;
  why: string | null;
}

/** One node: its 1-based position (the line of diagnostics and IR maps), what it is, its values' types, its verdicts. */
export interface OnnxNodeRow {
  index: number;
  name: string;
  opType: string;
  domain: string;
  opset: number;
  inputs: string[]; // operand types as imported: "f32[2,3]", "none"
  outputs: string[];
  verdicts: OnnxNodeVerdict[];
}

export interface OnnxTargetSummary {
  target: string;
  ok: boolean;
  partial: boolean;
  rejected: number; // nodes it rejects
  message: string | null; // why it failed when no node is to blame
}

/** The model's graph with each node's verdict per backend; `module` is what `lower` takes. */
export interface OnnxModelResponse {
  uri: string;
  module: string;
  graph: string;
  opsets: Record<string, number>; // domain ("" ONNX's own) → version
  inputs: OnnxValueInfo[];
  outputs: OnnxValueInfo[];
  nodes: OnnxNodeRow[];
  targets: OnnxTargetSummary[];
  fixes: string[];
  error?: LowerError | null; // the model could not be read or imported
}

export const LowerRequest = new RequestType<LowerParams, LowerResponse, void>('torchMlirLens/lower');
export const ModulesRequest = new RequestType<ModulesParams, ModulesResponse, void>('torchMlirLens/modules');
export const VerifyRequest = new RequestType<VerifyParams, VerifyResponse, void>('torchMlirLens/verify');
export const ServerInfoRequest = new RequestType<ServerInfoParams, ServerInfoResponse, void>('torchMlirLens/serverInfo');
export const StatusNotification = new NotificationType<StatusParams>('torchMlirLens/status');
export const GraphRequest = new RequestType<GraphParams, GraphResponse, void>('torchMlirLens/graph');
export const SetTrustedNotification = new NotificationType<SetTrustedParams>('torchMlirLens/setTrusted');
export const OnnxModelRequest = new RequestType<OnnxModelParams, OnnxModelResponse, void>('torchMlirLens/onnxModel');
export const MissingDependencyNotification = new NotificationType<MissingDependencyParams>('torchMlirLens/missingDependency');

export const LOWER = LowerRequest.method;
export const MODULES = ModulesRequest.method;
export const VERIFY = VerifyRequest.method;
export const GRAPH = GraphRequest.method;
export const STATUS = StatusNotification.method;
export const SET_TRUSTED = SetTrustedNotification.method;
export const ONNX_MODEL = OnnxModelRequest.method;
export const MISSING_DEPENDENCY = MissingDependencyNotification.method;

/** Server-side commands (workspace/executeCommand), with their argument and answer types. */
export const SERVER_COMMANDS = {
  exportModule: 'torchMlirLens.exportModule', // ExportModuleArgs → ExportModuleResponse
  exportRepro: 'torchMlirLens.exportRepro', // ExportReproArgs → ExportReproResponse
  explainInputs: 'torchMlirLens.explainInputs', // ModuleArgs → ExplainInputsResponse
  verify: 'torchMlirLens.verify', // VerifyParams → VerifyResponse
  exportCode: 'torchMlirLens.exportCode', // ExportCodeArgs → ExportCodeResponse
  setTrusted: 'torchMlirLens.setTrusted', // SetTrustedParams → SetTrustedResponse
  profile: 'torchMlirLens.profile', // ProfileArgs → ProfileResponse
} as const;

export const TARGETS = ['fx', 'raw', 'torch', 'linalg', 'tosa', 'stablehlo', 'llvm', 'iree-cpu', 'iree-cuda', 'iree-rocm', 'iree-vulkan'] as const;
/** Targets IREE compiles (rules/iree_targets.py): their export is a compiled module (.vmfb). */
export const IREE_TARGETS: readonly string[] = ['iree-cpu', 'iree-cuda', 'iree-rocm', 'iree-vulkan'];
export const TARGET_TITLES: Record<string, string> = {
  fx: 'FX',
  raw: 'Raw',
  torch: 'Torch',
  linalg: 'Linalg',
  tosa: 'TOSA',
  stablehlo: 'StableHLO',
  llvm: 'LLVM',
  'iree-cpu': 'IREE CPU',
  'iree-cuda': 'IREE CUDA',
  'iree-rocm': 'IREE ROCm',
  'iree-vulkan': 'IREE Vulkan',
  custom: 'Custom',
};

export function targetTitle(target: string): string {
  return TARGET_TITLES[target] ?? target;
}
