"""Async handle on `bench/baseline_worker.py`: the warm plain torch-mlir process."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from tests.harness.lsp_session import child_env

from bench.models import BenchModel

WORKER = Path(__file__).resolve().parent / "baseline_worker.py"


class BaselineProcess:
    """A plain torch-mlir process that times `export_and_import` on request."""

    def __init__(self, python: str = sys.executable, stderr_path: Path | None = None,
                 memory_limit_mb: int | None = None) -> None:
        self.python = python
        self.memory_limit_mb = memory_limit_mb  # RLIMIT_AS of the process, when given
        self.stderr_path = stderr_path
        self.proc: asyncio.subprocess.Process | None = None
        self.import_seconds = 0.0

    @property
    def pid(self) -> int:
        """The baseline process id."""
        assert self.proc is not None
        return self.proc.pid

    async def start(self, timeout: float = 120.0) -> None:
        """Spawn it and wait until torch and torch-mlir are imported."""
        err: Any = asyncio.subprocess.DEVNULL
        if self.stderr_path is not None:
            err = open(self.stderr_path, "ab")  # noqa: SIM115  (owned by the child)
        limit = ("--memory-limit-mb", str(self.memory_limit_mb)) if self.memory_limit_mb else ()
        self.proc = await asyncio.create_subprocess_exec(
            self.python, str(WORKER), *limit, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=err, limit=1 << 24, env=child_env(),
        )
        if self.stderr_path is not None:
            err.close()
        ready = await self._read(timeout)
        self.import_seconds = float(ready.get("import_seconds", 0.0))

    async def _read(self, timeout: float) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not line:
            raise RuntimeError(f"baseline worker exited (code {self.proc.returncode})")
        return dict(json.loads(line))

    async def call(self, req: dict[str, Any], timeout: float = 300.0,
                   check: bool = True) -> dict[str, Any]:
        """Send one request, return the reply; raise if the reply is not ok (with `check`)."""
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        await self.proc.stdin.drain()
        reply = await self._read(timeout)
        if check and not reply.get("ok"):
            raise RuntimeError(f"baseline failed: {reply.get('error')}\n{reply.get('traceback')}")
        return reply

    async def lower(
        self, model: BenchModel, output_type: str = "linalg-on-tensors", print_ir: bool = False,
        timeout: float = 300.0, check: bool = True, exported: bool = False,
    ) -> dict[str, Any]:
        """Time `export_and_import(module, *inputs, output_type=...)` for `model` (with
        `exported`: of the program the last `export` of `model` made)."""
        return await self.call({
            "op": "lower", "path": str(model.path), "module": model.module,
            "inputs": model.inputs, "init": model.init, "output_type": output_type,
            "print": print_ir, "exported": exported,
        }, timeout, check)

    async def export(self, model: BenchModel, timeout: float = 300.0,
                     check: bool = True) -> dict[str, Any]:
        """Time `torch.export.export(module, inputs)` alone for `model`."""
        return await self.call({
            "op": "export", "path": str(model.path), "module": model.module,
            "inputs": model.inputs, "init": model.init,
        }, timeout, check)

    async def precision(self, model: BenchModel, timeout: float = 600.0,
                        check: bool = True, missed: bool = False) -> dict[str, Any]:
        """The product's culprits of `model`, each checked alone (op_isolation); with `missed`,
        also the ops no culprit names that fail alone."""
        return await self.call({
            "op": "precision", "path": str(model.path), "module": model.module,
            "inputs": model.inputs, "init": model.init, "missed": missed,
        }, timeout, check)

    async def stop(self) -> None:
        """Ask it to quit; kill it (only it) if it does not."""
        if self.proc is None or self.proc.returncode is not None:
            return
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(b'{"op": "quit"}\n')
            await self.proc.stdin.drain()
            self.proc.stdin.close()
            await asyncio.wait_for(self.proc.wait(), 10)
        except Exception:
            self.proc.kill()
            await self.proc.wait()
