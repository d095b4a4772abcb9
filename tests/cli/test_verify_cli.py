"""`torch-mlir-lens verify`: parsing, verdict text, exit codes; the job runs in-process here,
except in the last test, which goes through the real worker."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from torch_mlir_lens.cli import verify
from torch_mlir_lens.cli.parser import EXIT_BAD_INPUT, EXIT_NO_RUN, Parser
from torch_mlir_lens.protocol.jobs import ModuleJob, VerifyJob
from torch_mlir_lens.protocol.verify_results import VerifyResult

USER_FILE = textwrap.dedent(
    """\
    import torch
    from torch import nn


    # torch-mlir-lens: inputs=(torch.randn(3, 8),)
    class Scale(nn.Module):
        def forward(self, x):
            return x * 3.0, (x > 0).sum()
    """
)


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="torch-mlir-lens")
    verify.add_parser(parser.add_subparsers(dest="command", parser_class=Parser))
    return parser


MISMATCH = VerifyResult.from_json({
    "module": "Scale", "ok": False, "kind": "verify-mismatch",
    "message": "✗ differs: output 0, max err 0.3 at [1, 4]",
    "outputs": [
        {"index": 0, "shape": [3, 8], "dtype": "float32", "max_abs_err": 0.3,
         "max_rel_err": 0.1, "worst_index": [1, 4], "ok": False, "message": ""},
        {"index": 1, "shape": [], "dtype": "int64", "max_abs_err": 0.0, "max_rel_err": 0.0,
         "worst_index": [], "ok": True, "message": ""},
    ],
    "diagnostics": [{"severity": "error", "message": "compiled result differs from eager",
                     "file": None, "line": None, "op": None}],
})


def test_parse_tolerances_and_defaults() -> None:
    args = _parser().parse_args(["verify", "m.py", "--module", "M", "--rtol", "1e-3",
                                 "--atol", "0", "--json"])
    assert (args.rtol, args.atol, args.opt_level, args.json) == (1e-3, 0.0, 0, True)
    args = _parser().parse_args(["verify", "m.py"])
    assert args.rtol is None and args.atol is None


@pytest.mark.parametrize("bad", [["--rtol", "x"], ["--atol", "-1"], ["--opt-level", "7"]])
def test_bad_options_exit_2(bad: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        _parser().parse_args(["verify", "m.py", *bad])
    assert info.value.code == EXIT_BAD_INPUT


def test_exit_codes_and_text() -> None:
    assert verify.exit_code(MISMATCH) == 1
    assert verify.exit_code(dataclasses.replace(MISMATCH, ok=True)) == 0
    text = verify.format_result(MISMATCH, "m.py")
    assert text.splitlines()[0] == "Scale: ✗ differs: output 0, max err 0.3 at [1, 4]"
    assert "✗ output 0: 3x8 float32" in text and "worst at [1, 4]" in text
    assert "✓ output 1: scalar int64" in text


class _InProcessEngine:
    """Stands in for Engine: runs the worker's verify job in this process.

    `mutate_ir` alters the linalg IR before it is compiled (the eager side is untouched), so
    the compiled module computes something else and verify must say so.
    """

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


def _run(argv: list[str], engine: _InProcessEngine | None = None) -> int:
    args = _parser().parse_args(argv)
    return asyncio.run(verify.run(args, make_engine=lambda _args: engine or _InProcessEngine()))


def test_verify_command_matches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "lens_verify_cli_user.py"
    path.write_text(USER_FILE)
    assert _run(["verify", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] and result["message"].startswith("✓ matches eager")
    assert [o["dtype"] for o in result["outputs"]] == ["float32", "int64"]


def test_verify_command_reports_an_altered_lowering_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "lens_verify_cli_user2.py"
    path.write_text(USER_FILE)
    seen: list[str] = []

    def times_3_5(ir: str) -> str:  # the `x * 3.0` of output 0 becomes `x * 3.5`
        seen.append(ir)
        return ir.replace("3.000000e+00", "3.500000e+00")

    code = _run(["verify", str(path), "--module", "Scale"], _InProcessEngine(times_3_5))
    out = capsys.readouterr().out
    assert seen and seen[0].count("3.000000e+00") == 1  # the constant exists, exactly once
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("Scale: ✗ differs: output 0"), out
    assert any(ln.startswith("  ✗ output 0: 3x8 float32") for ln in lines), out
    assert any(ln.startswith("  ✓ output 1: scalar int64") for ln in lines), out
    # ... and the user's line whose values differ first: `return x * 3.0, ...`
    assert f"{path}:8: error: compiled values first differ from eager" in out, out


def test_verify_cli_never_imports_torch() -> None:
    code = (
        "import sys\n"
        "import torch_mlir_lens.cli.verify\n"
        "sys.exit(1 if 'torch' in sys.modules else 0)\n"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


def test_verify_through_the_worker_names_the_first_differing_line(tmp_path: Path) -> None:
    """The real command and worker (no in-process job): a module whose compiled values differ
    from eager (fresh random noise on each side) is reported at the line that adds the noise."""
    path = tmp_path / "noisy.py"
    path.write_text(textwrap.dedent(
        """\
        import torch
        from torch import nn


        # torch-mlir-lens: inputs=(torch.randn(2, 8),)
        class Noisy(nn.Module):
            def forward(self, x):
                y = x * 2.0
                z = y + torch.rand_like(y)
                return z - 1.0
        """
    ))
    proc = subprocess.run(
        [sys.executable, "-m", "torch_mlir_lens", "verify", str(path), "--module", "Noisy"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout + proc.stderr
    assert "first differs at line 9" in out, out
    assert f"{path}:9: error: compiled values first differ from eager" in out, out


SCATTER_FILE = textwrap.dedent(
    """\
    import torch
    from torch import nn


    # torch-mlir-lens: inputs=(torch.randn(6, 4), torch.tensor([0, 1, 1, 2, 2, 2]))
    class Pool(nn.Module):
        def forward(self, x, index):
            out = torch.zeros(3, 4)
            return out.index_add(0, index, x)  # a graph net's sum over each node's edges
    """
)


class _WorkerJobEngine(_InProcessEngine):
    """Runs the worker's own `verify` job (the program cache, the target) in this process."""

    async def verify(self, job: ModuleJob, *, rtol: float | None = None,
                     atol: float | None = None, opt_level: int = 0,
                     target: str = "linalg") -> VerifyResult:
        from torch_mlir_lens.worker.job_handlers import run_job

        request = job.as_job(VerifyJob, rtol=rtol, atol=atol, opt_level=opt_level,
                             target=target)
        reply = run_job({"id": 1, **request.to_json()})
        assert reply["ok"], reply
        return VerifyResult.from_json(reply["result"])


def test_a_stablehlo_verify_whose_own_conversion_fails_could_not_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # torch-mlir's StableHLO-to-Linalg passes leave `stablehlo.scatter` behind: the LLVM step
    # would then fail on `bufferization.to_tensor`. No verdict: exit 3, not "differs" (1).
    path = tmp_path / "lens_verify_cli_scatter.py"
    path.write_text(SCATTER_FILE)
    argv = ["verify", str(path), "--module", "Pool", "--target", "stablehlo"]
    assert _run([*argv, "--json"], _WorkerJobEngine()) == EXIT_NO_RUN
    result = json.loads(capsys.readouterr().out)
    assert result["kind"] == "verify-error" and not result["ok"]
    assert result["max_abs_err"] is None and result["outputs"] == []
    assert "could not run" in result["message"] and "`stablehlo.scatter`" in result["message"]
    assert [d["line"] for d in result["diagnostics"]] == [9]
    # The same module on Linalg runs and matches: the module itself is fine.
    assert _run(["verify", str(path), "--module", "Pool"], _WorkerJobEngine()) == 0
    assert "✓ matches eager" in capsys.readouterr().out
