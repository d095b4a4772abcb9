"""`torch-mlir-lens`: lower, check and export PyTorch modules from the command line.

A stable contract (scripts depend on it):

    torch-mlir-lens lower FILE [--module NAME | --line N] [--target T | --pipeline STR]
                          [--inputs EXPR | --inputs-file PATH] [--init EXPR] [--annotate]
                          [--frames user|all] [--keep-weights] [--debug-info]
                          [--print-after-all] [--cache-dir DIR] [--json]
    torch-mlir-lens check PATH… [--module NAME] [--targets linalg,tosa,stablehlo] [--inputs …]
                          [-j N] [--format text|json|sarif|github] [-o OUT] [--baseline FILE]
                          [--write-baseline] [--shard I/N] [--exclude PATTERN]
                          [--cache-dir DIR] [--json]
    torch-mlir-lens merge REPORT… [-o OUT] [--format F]
    torch-mlir-lens export FILE --module NAME [--target T] -o OUT [--bytecode]
    torch-mlir-lens verify FILE [--module NAME | --line N] [--rtol R] [--atol A] [--json]
    torch-mlir-lens serve [--tcp --host 127.0.0.1 --port N]

Exit codes: 0 done; 1 the module does not lower (unsupported ops, export or lowering errors);
2 bad input (missing file, syntax error, unknown module or target, bad inputs or pipeline);
3 the job could not run (the worker crashed, timed out or hit the memory limit); 128 + N the
run was ended by signal N (its workers end with it). The table with every case is
`rules/exit_codes.py`, which `--help` prints and the README and docs/ci.md repeat.

The user's code runs in the worker process (the same one the language server uses), never in
this process, which does not import torch: a module that crashes cannot take the CLI down.

Layout: `dispatch.py` builds the parser and dispatches; `common.py` has what the commands
share; one module per command (`lower`, `check` (one check path, inputs named or not), `merge`,
`export` (+ `emit_python`), `verify`, `serve`), each with `add_parser(sub)` and
`run(args, ...)`. `check` and `merge` parse and print: the check gate itself is
`repo_check.run(settings)`, whose package is all of `repo_check` they import. This module
stays small on purpose: `serve`, which an editor starts and waits for, goes straight to its own
module and loads nothing of the other commands.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `torch-mlir-lens` command; returns the exit code (never raises, no traceback)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["serve"]:
        from torch_mlir_lens.cli import serve

        return serve.main(args[1:])
    from torch_mlir_lens.cli import dispatch

    return dispatch.main(args)
