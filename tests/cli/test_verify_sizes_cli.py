"""`torch-mlir-lens verify` on a module with dynamic dims: one line per size run, `--json`'s
`sizes`, and on a mismatch the first diverging line (the job runs in-process)."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from torch_mlir_lens.cli import verify
from torch_mlir_lens.cli.parser import Parser
from torch_mlir_lens.protocol.jobs import ModuleJob, VerifyJob
from torch_mlir_lens.protocol.verify_results import VerifyResult

MODELS = Path(__file__).resolve().parents[1] / "worker" / "models" / "dynamic_views.py"


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="torch-mlir-lens")
    verify.add_parser(parser.add_subparsers(dest="command", parser_class=Parser))
    return parser


class _InProcessEngine:
    """Runs the worker's verify job in this process (`mutate_ir`: the compiled side only)."""

    def __init__(self, mutate_ir: Callable[[str], str] | None = None) -> None:
        self.mutate_ir = mutate_ir

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def verify(self, job: ModuleJob, *, rtol: float | None = None,
                     atol: float | None = None, opt_level: int = 0) -> VerifyResult:
        from torch_mlir_lens.worker.verify.job import run_verify_job

        request = job.as_job(VerifyJob, rtol=rtol, atol=atol, opt_level=opt_level)
        return run_verify_job(request, mutate_ir=self.mutate_ir)


def _run(argv: list[str], engine: _InProcessEngine) -> int:
    args = _parser().parse_args(argv)
    return asyncio.run(verify.run(args, make_engine=lambda _args: engine))


def _line_of(needle: str) -> int:
    return next(i for i, text in enumerate(MODELS.read_text().splitlines(), 1) if needle in text)


def test_each_size_on_its_line_and_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["verify", str(MODELS), "--module", "AttentionViews"]
    assert _run(argv, _InProcessEngine()) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("AttentionViews: ✓ matches eager at 4 sizes")
    at = [ln for ln in lines if ln.startswith("  at ")]
    assert [ln.split(":")[0] for ln in at] == [
        "  at batch=2, seq=5 (the example's)", "  at batch=3, seq=2", "  at batch=5, seq=7",
        "  at batch=2, seq=16"]
    assert all("✓ matches eager" in ln for ln in at)
    assert sum(ln.startswith("    ✓ output 0: ") for ln in lines) == 4

    assert _run([*argv, "--json"], _InProcessEngine()) == 0
    result = json.loads(capsys.readouterr().out)
    assert [s["dims"] for s in result["sizes"]][1] == [{"name": "batch", "size": 3},
                                                       {"name": "seq", "size": 2}]
    assert result["sizes"][3]["outputs"][0]["shape"] == [2, 16, 32]


def test_a_dynamic_mismatch_names_its_line(capsys: pytest.CaptureFixture[str]) -> None:
    def times_2_5(ir: str) -> str:  # `rows = merged.reshape(-1, 32) * 2.0` becomes * 2.5
        assert ir.count("arith.constant 2.000000e+00 : f32") == 1
        return ir.replace("arith.constant 2.000000e+00 : f32", "arith.constant 2.500000e+00 : f32")

    code = _run(["verify", str(MODELS), "--module", "AttentionViews"], _InProcessEngine(times_2_5))
    out = capsys.readouterr().out
    assert code == 1
    line = _line_of("rows = merged.reshape(-1, 32) * 2.0")
    assert out.splitlines()[0].startswith("AttentionViews: ✗ differs at batch=2, seq=5: output 0")
    assert out.splitlines()[0].endswith(f"— first differs at line {line}")
    assert f"dynamic_views.py:{line}: error: compiled values first differ from eager here: " \
           f"float32 [10, 32]" in out
    assert "(at batch=2, seq=5)" in out
