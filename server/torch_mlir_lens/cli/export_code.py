"""`torch-mlir-lens export FILE --module M --target T --emit-python -o OUT.py`: Python that
reproduces the module's IR with plain torch-mlir, the rewrites it lowers with inlined (the
worker writes it: worker/rewrites/snippet.py); nothing of this product is imported by it."""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any

from torch_mlir_lens.cli.common import CliError, EngineFactory, display, running_engine
from torch_mlir_lens.cli.parser import EXIT_OK


def _write(path: str, text: str) -> int:
    """Write `text` to `path` whole or not at all (a temp file renamed over it)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".export-code-", suffix=".py", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return len(text.encode())


async def write_export_code(args: argparse.Namespace, job: Any, make_engine: EngineFactory,
                            path: str) -> int:
    """Ask the worker for the export code of `job` at `args.target` and write it to -o."""
    async with running_engine(args, make_engine, path) as engine:
        code = await engine.export_code(job, args.target)
    try:
        size = _write(args.output, code["code"])
    except OSError as exc:
        raise CliError(f"cannot write: {exc.strerror or exc}", file=args.output) from exc
    used = ", ".join(code.get("rewrites") or []) or "none"
    print(f"wrote {display(os.path.abspath(args.output))} ({size} bytes; rewrites: {used})")
    return EXIT_OK
