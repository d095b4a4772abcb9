"""`torch-mlir-lens export`: write a module's IR at a target to a file (atomically).

`-o OUT` is the user's own choice, typed in a terminal: any folder, any name, and an existing
file is replaced, except a source: the module's own file or any `.py`, `.pyi`, `.pyw`,
`.ipynb` is refused (exit 2), as the language server refuses it (`project/write_policy.py`).
`--emit-python` writes Python: a `.py` name, a new file or export code written before, never
the module's own file nor any other existing file.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from torch_mlir_lens.cli import iree_options
from torch_mlir_lens.cli.common import (
    CliError,
    EngineFactory,
    add_inputs,
    display,
    load_source,
    make_engine,
    module_job,
    running_engine,
)
from torch_mlir_lens.cli.parser import EXIT_OK
from torch_mlir_lens.project import write_policy
from torch_mlir_lens.rules.iree_targets import is_iree_target
from torch_mlir_lens.rules.targets import TARGETS
from torch_mlir_lens.source.onnx_files import THE_GRAPH


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the `export` subcommand."""
    export: argparse.ArgumentParser = sub.add_parser(
        "export", help="write a module's IR to a file (atomically)")
    export.add_argument("file")
    export.add_argument("--module", metavar="NAME",
                        help="the module (required but for an ONNX model: its one graph)")
    export.add_argument("--target", default="linalg", metavar="T")
    export.add_argument("-o", "--output", required=True, metavar="OUT")
    export.add_argument("--bytecode", action="store_true", help="MLIR bytecode instead of text")
    export.add_argument("--emit-python", action="store_true",
                        help="write Python that reproduces the IR with plain torch-mlir (its "
                             "rewrites inlined) instead of the IR")
    iree_options.add_arch(export)
    export.add_argument("--without-weights", action="store_true",
                        help="with an IREE target: build the module without its weights and "
                             "compile them as named parameters, for models too big to build "
                             "(supply an IREE parameter archive at run time)")
    add_inputs(export)
    return export


async def run(args: argparse.Namespace, make_engine: EngineFactory = make_engine) -> int:
    """The `export` command: the worker writes the file; this prints where and how big."""
    if args.target not in TARGETS:
        raise CliError(f"unknown target {args.target!r} (choose from {', '.join(TARGETS)})")
    out_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(out_dir):
        raise CliError("the output folder does not exist", file=args.output)
    check = write_policy.check_cli_code_output if args.emit_python \
        else write_policy.check_cli_output
    try:
        check(args.output, source=os.path.abspath(args.file))
    except write_policy.WriteRefused as err:
        raise CliError(f"will not write the export here: {err.reason}",
                       file=args.output) from None
    src = load_source(args.file)
    if not args.module and not src.onnx:
        raise CliError("the following arguments are required: --module", file=args.file)
    if src.onnx and args.emit_python:
        raise CliError("--emit-python writes PyTorch code: an ONNX model has none (export "
                       "its IR instead)", file=src.path)
    job = module_job(src, args.module or THE_GRAPH, args)
    arch = iree_options.arch_for(args.target, args.iree_arch)
    iree_options.require([args.target])
    if args.bytecode and is_iree_target(args.target):
        raise CliError("--bytecode writes MLIR: an IREE target's export is its compiled module "
                       "(.vmfb)")
    if args.without_weights:
        if not is_iree_target(args.target) or args.emit_python:
            raise CliError("--without-weights compiles an IREE target's module: use --target "
                           "iree-cpu (or another IREE target) without --emit-python")
        job.construct = "meta"
    if args.emit_python:
        from torch_mlir_lens.cli.emit_python import write_python

        return await write_python(args, job, make_engine, src.path)
    async with running_engine(args, make_engine, src.path) as engine:
        written = await engine.export(job, args.target, os.path.abspath(args.output),
                                      bytecode=args.bytecode, iree_arch=arch)
    size = "?" if written.bytes is None else written.bytes
    print(f"wrote {display(written.path)} ({size} bytes)")
    if written.left_out:
        print(f"note: {written.left_out}")
    return EXIT_OK
