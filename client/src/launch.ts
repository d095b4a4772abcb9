// How the server's processes are started so that nothing of a workspace runs before trust:
// `-P` keeps Python from importing anything from the working directory, and that directory is
// a neutral one, never the workspace (the server reads its folders from `initialize`).

import * as os from 'node:os';

/** `python -P -m torch_mlir_lens serve`: the server over stdio. */
export const SERVER_ARGS = ['-P', '-m', 'torch_mlir_lens', 'serve'];

/** The working directory of every server and interpreter check: the system's temporary folder. */
export function neutralDirectory(): string {
  return os.tmpdir();
}
