// Folding in IR panes: a run of weight constants (one `dense_resource` literal per weight:
// 723 lines in the 70 B Llama's stitched `main`) folds to one line, folded when the pane opens
// (package.json sets `editor.foldingImportsByDefault` for MLIR; the runs are given the
// "imports" kind for that reason), so what the pane shows first is the computation.

import * as vscode from 'vscode';
import { SCHEME } from './paneSpec';

/** Fewer constants in a row than this are left unfolded: they read fine as they are. */
export const MIN_RUN = 4;

const WEIGHT_CONSTANT = /^\s*%[\w.$-]+ = .*dense_resource</;

/** [first, last] 0-based lines of each run of at least `MIN_RUN` weight constants. */
export function constantRuns(lines: readonly string[]): [number, number][] {
  const runs: [number, number][] = [];
  let start = -1;
  for (let i = 0; i <= lines.length; i++) {
    const constant = i < lines.length && WEIGHT_CONSTANT.test(lines[i]);
    if (constant && start < 0) start = i;
    if (!constant && start >= 0) {
      if (i - start >= MIN_RUN) runs.push([start, i - 1]);
      start = -1;
    }
  }
  return runs;
}

export function registerIrFolding(): vscode.Disposable {
  return vscode.languages.registerFoldingRangeProvider({ scheme: SCHEME }, {
    provideFoldingRanges(doc: vscode.TextDocument): vscode.FoldingRange[] {
      const lines = doc.getText().split('\n');
      return constantRuns(lines).map(([a, b]) => new vscode.FoldingRange(a, b, vscode.FoldingRangeKind.Imports));
    },
  });
}
