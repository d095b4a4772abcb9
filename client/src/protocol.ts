// Shapes of the server's custom requests and notifications (docs/contracts.md).
// Lines in `map` and `diagnostics` are 1-based, as in the engine's results.

export const LOWER = 'torchMlirLens/lower';
export const MODULES = 'torchMlirLens/modules';
export const VERIFY = 'torchMlirLens/verify';
export const STATUS = 'torchMlirLens/status';
export const SET_TRUSTED = 'torchMlirLens/setTrusted';

/** Server-side commands (workspace/executeCommand). */
export const SERVER_COMMANDS = {
  exportModule: 'torchMlirLens.exportModule',
  exportRepro: 'torchMlirLens.exportRepro',
  explainInputs: 'torchMlirLens.explainInputs',
  verify: 'torchMlirLens.verify',
} as const;

export const TARGETS = ['fx', 'raw', 'torch', 'linalg', 'tosa', 'stablehlo', 'llvm'] as const;
export const TARGET_TITLES: Record<string, string> = {
  fx: 'FX',
  raw: 'Raw',
  torch: 'Torch',
  linalg: 'Linalg',
  tosa: 'TOSA',
  stablehlo: 'StableHLO',
  llvm: 'LLVM',
  custom: 'Custom',
};

export interface IrLineMapping {
  irLine: number; // 1-based line of `ir`
  uri: string; // source file URI
  line: number; // 1-based source line
  depth: number; // 0 innermost user frame; callers have higher depths
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
  rows: number[][];
}

export interface RelatedLocation {
  uri: string;
  line: number; // 1-based
  message: string;
}

export interface LensDiagnostic {
  severity: string;
  message: string;
  kind: string;
  uri: string | null;
  line: number | null;
  op: string | null;
  target: string | null;
  related?: RelatedLocation[]; // library lines behind a finding inside library code
}

export interface LowerParams {
  uri: string;
  module?: string;
  position?: { line: number; character: number };
  target?: string;
  pipeline?: string;
  printAfterAll?: boolean;
}

export interface LowerResponse {
  module: string;
  target: string;
  ok: boolean;
  /** ok is false, but `ir` is the target IR with each rejected op kept as a call. */
  partial?: boolean;
  ir: string;
  map: IrLineMapping[];
  frames?: FrameTable; // absent when no op comes from library code
  diagnostics: LensDiagnostic[];
  stats?: Record<string, unknown>;
  timings?: Record<string, number>;
  passes?: { name: string; ir: string }[];
}

export interface ModuleInfo {
  name: string;
  kind: 'class' | 'function';
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  forwardRange?: unknown;
  inputs: 'comment' | 'convention' | 'settings' | 'derived' | 'inferred' | 'missing';
}

export interface ModulesResponse {
  modules: ModuleInfo[];
}

export type ServerState = 'starting' | 'ready' | 'lowering' | 'error' | 'untrusted';

export interface StatusParams {
  state: ServerState;
  detail?: string;
}

export function targetTitle(target: string): string {
  return TARGET_TITLES[target] ?? target;
}
