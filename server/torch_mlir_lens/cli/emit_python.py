"""`torch-mlir-lens export FILE --module M --target T --emit-python -o OUT.py`: Python that
reproduces the module's IR with plain torch-mlir, the rewrites it lowers with inlined (the
worker writes it: worker/rewrites/snippet.py); nothing of this product is imported by it."""

from __future__ import annotations

import argparse
import os
from typing import Any

from torch_mlir_lens.cli.common import CliError, EngineFactory, display, running_engine
from torch_mlir_lens.cli.parser import EXIT_OK
from torch_mlir_lens.system.atomic_write import write_atomically


async def write_python(args: argparse.Namespace, job: Any, make_engine: EngineFactory,
                       path: str) -> int:
    """Ask the worker for the Python reproducing `job` at `args.target` and write it to -o
    (whole or not at all: `system/atomic_write.py`)."""
    async with running_engine(args, make_engine, path) as engine:
        code = await engine.export_code(job, args.target)
    try:
        size = write_atomically(args.output, code["code"].encode(), sync=True)
    except OSError as exc:
        raise CliError(f"cannot write: {exc.strerror or exc}", file=args.output) from exc
    used = ", ".join(code.get("rewrites") or []) or "none"
    print(f"wrote {display(os.path.abspath(args.output))} ({size} bytes; rewrites: {used})")
    return EXIT_OK
