"""The `torch-mlir-lens` command: outputs, JSON shapes and exit codes, run as a real process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

TIMEOUT = 300  # one CLI run spawns a worker that imports torch: slow on a busy machine
# The job time-out these runs get unless a test sets one: the CLI's default (60 s) counts the
# worker's warm-up still running when the job arrives, which a loaded machine can push past
# it; a test about bad input or output must not turn into a time-out there.
JOB_TIMEOUT = "240"
RUNS_JOBS = {"lower", "export", "check", "verify"}


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    if args and args[0] in RUNS_JOBS and "--timeout" not in args:
        args = (*args, "--timeout", JOB_TIMEOUT)
    return subprocess.run(
        [sys.executable, "-m", "torch_mlir_lens", *args],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd,
    )


def assert_one_line_error(proc: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("torch-mlir-lens: error: "), lines[0]
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


# --- bad input: exit 2, one line, no worker needed -------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.py"
    assert_one_line_error(run_cli("lower", str(missing)), 2, "nope.py", "no such file")


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\n\nclass M(torch.nn.Module:\n    pass\n")
    assert_one_line_error(run_cli("lower", str(bad)), 2, "bad.py:3:", "syntax error")


def test_unknown_target(examples_dir: Path) -> None:
    proc = run_cli("lower", str(examples_dir / "mlp.py"), "--target", "spirv")
    assert_one_line_error(proc, 2, "unknown target 'spirv'")


def test_line_outside_any_module(examples_dir: Path) -> None:
    proc = run_cli("lower", str(examples_dir / "mlp.py"), "--line", "2")
    assert_one_line_error(proc, 2, "mlp.py:2:", "no module at line 2", "MLP")


def test_several_modules_need_a_choice(models_dir: Path) -> None:
    proc = run_cli("lower", str(models_dir / "backends.py"))
    assert_one_line_error(proc, 2, "several modules", "Rolls", "InverseErf")


def test_usage_errors_are_one_line() -> None:
    assert_one_line_error(run_cli("export", "x.py"), 2, "required")


def test_cli_process_never_imports_torch(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from torch_mlir_lens.cli import main\n"
        f"rc = main(['lower', {str(tmp_path / 'nope.py')!r}])\n"
        "import torch_mlir_lens.engine, torch_mlir_lens.cli.annotated_ir\n"
        "print(rc, 'torch' in sys.modules, 'torch_mlir' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.split() == ["2", "False", "False"], proc.stderr


# --- through the worker ----------------------------------------------------------------------


def test_lower_json_shape(examples_dir: Path) -> None:
    mlp = examples_dir / "mlp.py"
    proc = run_cli("lower", str(mlp), "--module", "MLP", "--target", "linalg", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {"module", "target", "ir", "map", "diagnostics", "stats", "timings"} <= set(data)
    assert data["module"] == "MLP" and data["target"] == "linalg"
    assert "linalg.matmul" in data["ir"] or "linalg.generic" in data["ir"]
    assert data["map"], "no IR line mapped to a source line"
    for entry in data["map"]:
        assert {"ir_line", "file", "line"} <= set(entry)
    ir_lines = data["ir"].splitlines()
    forward_lines = {23, 24, 25}  # the three lines of MLP.forward
    mapped = {m["line"] for m in data["map"] if m["file"] == str(mlp)}
    assert forward_lines <= mapped
    assert all(1 <= m["ir_line"] <= len(ir_lines) for m in data["map"])
    assert data["diagnostics"] == []


def test_lower_by_line_picks_the_module(examples_dir: Path) -> None:
    proc = run_cli("lower", str(examples_dir / "mlp.py"), "--line", "24", "--target", "torch")
    assert proc.returncode == 0, proc.stderr
    assert "torch.aten" in proc.stdout
    assert "func.func @main" in proc.stdout


def test_unknown_module_is_bad_input(examples_dir: Path) -> None:
    proc = run_cli("lower", str(examples_dir / "mlp.py"), "--module", "Nope")
    assert_one_line_error(proc, 2, "Nope")


def test_an_unreadable_inputs_comment_is_bad_input_at_its_line(tmp_path: Path) -> None:
    # Without the `;` neither key applies: lowering with other (derived or inferred) inputs
    # and no dynamic dims would answer a question the user did not ask.
    path = tmp_path / "commented.py"
    path.write_text("import torch\nimport torch.nn as nn\n\n"
                    "# torch-mlir-lens: inputs=(torch.randn(4, 16),) dynamic={\"x\": {0: \"b\"}}\n"
                    "class Proj(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                    "        self.fc = nn.Linear(16, 8)\n\n"
                    "    def forward(self, x):\n        return self.fc(x)\n")
    proc = run_cli("lower", str(path), "--module", "Proj")
    assert_one_line_error(proc, 2, "commented.py:4:", "separate `inputs=` and `dynamic=`")
    proc = run_cli("check", str(path), "--json")
    assert proc.returncode == 1, proc.stderr
    (module,) = json.loads(proc.stdout)["modules"]
    assert not module.get("skipped"), module
    assert all("separate `inputs=` and `dynamic=`" in t["error"]
               for t in module["targets"].values()), module


def test_bad_inputs_expression_is_bad_input(examples_dir: Path) -> None:
    proc = run_cli("lower", str(examples_dir / "mlp.py"), "--module", "MLP",
                   "--inputs", "(torch.randn(2, 16)")
    assert_one_line_error(proc, 2)


def test_bad_pipeline_is_bad_input(examples_dir: Path) -> None:
    proc = run_cli("lower", str(examples_dir / "mlp.py"), "--module", "MLP",
                   "--pipeline", "builtin.module(no-such-pass)")
    assert_one_line_error(proc, 2)


def test_check_reports_unsupported_ops_at_their_lines(models_dir: Path) -> None:
    path = models_dir / "backends.py"
    proc = run_cli("check", str(path), "--json")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    by_name = {m["name"]: m for m in data["modules"]}
    assert set(by_name) == {"Rolls", "InverseErf", "NoInputs"}
    assert by_name["NoInputs"]["targets"] == {} and by_name["NoInputs"]["skipped"]
    rolls = by_name["Rolls"]
    assert rolls["line"] == 8
    assert set(rolls["targets"]) == {"linalg", "tosa", "stablehlo"}
    for verdict in rolls["targets"].values():
        assert set(verdict) >= {"ok", "unsupported", "error"}
    assert rolls["targets"]["linalg"]["ok"] is True
    assert rolls["targets"]["stablehlo"]["ok"] is True
    tosa = rolls["targets"]["tosa"]
    assert tosa["ok"] is False
    # With whether a proven rewrite exists: roll as two static slices.
    assert tosa["unsupported"] and set(tosa["unsupported"][0]) == {"op", "line", "cause",
                                                                   "rewrite"}
    assert tosa["unsupported"][0]["rewrite"]["rewrites"] == ["roll"]
    # roll → slice + cat: one culprit, named after the Python call.
    assert [(u["line"], u["cause"]) for u in tosa["unsupported"]] == [
        (13, "`torch.roll` (decomposed to `aten.slice.Tensor`)")]
    erf = by_name["InverseErf"]["targets"]
    assert all(not v["ok"] for v in erf.values())
    assert any(u["line"] == 22 for u in erf["linalg"]["unsupported"]), erf
    assert all(u["rewrite"]["rewrites"] == ["erfinv"] for v in erf.values()
               for u in v["unsupported"]), erf


def test_check_healthy_module_exits_0(examples_dir: Path) -> None:
    proc = run_cli("check", str(examples_dir / "mlp.py"), "--targets", "linalg,stablehlo")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "MLP" in proc.stdout and "linalg ok" in proc.stdout


def test_export_writes_parseable_text_and_bytecode(examples_dir: Path, tmp_path: Path) -> None:
    mlp = str(examples_dir / "mlp.py")
    text_out = tmp_path / "mlp.mlir"
    text_out.write_text("old content\n")
    proc = run_cli("export", mlp, "--module", "MLP", "--target", "linalg", "-o", str(text_out))
    assert proc.returncode == 0, proc.stderr
    assert "linalg" in text_out.read_text()
    bc_out = tmp_path / "mlp.mlirbc"
    proc = run_cli("export", mlp, "--module", "MLP", "--target", "tosa", "-o", str(bc_out),
                   "--bytecode")
    assert proc.returncode == 0, proc.stderr
    assert bc_out.read_bytes()[:4] == b"ML\xefR"  # the MLIR bytecode magic
    parse = (
        "import sys\n"
        "from torch_mlir import ir\n"
        "from torch_mlir.dialects import torch as _t\n"
        "ctx = ir.Context()\n"
        "ctx.allow_unregistered_dialects = True\n"
        "for p in sys.argv[1:]:\n"
        "    data = open(p, 'rb').read()\n"
        "    m = ir.Module.parse(data if p.endswith('bc') else data.decode(), ctx)\n"
        "    assert m.operation.verify()\n"
        "print('parsed')\n"
    )
    check = subprocess.run([sys.executable, "-c", parse, str(text_out), str(bc_out)],
                           capture_output=True, text=True, timeout=120)
    assert check.stdout.strip() == "parsed", check.stderr[-3000:]
    # Nothing but the two outputs: no temporary file left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlp.mlir", "mlp.mlirbc"]


def test_repeated_blocks_export_as_one_function_and_lower_inline_on_request(
        examples_dir: Path, tmp_path: Path) -> None:
    model = str(examples_dir / "transformer.py")
    out = tmp_path / "tiny.mlir"
    proc = run_cli("export", model, "--module", "TinyTransformer", "--target", "linalg",
                   "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert text.count("func.func private @Block(") == 1 and text.count("call @Block(") == 2
    inline = run_cli("lower", model, "--module", "TinyTransformer", "--target", "linalg",
                     "--inline-blocks", "--json")
    assert inline.returncode == 0, inline.stderr
    data = json.loads(inline.stdout)
    assert "func.func private" not in data["ir"]
    assert data["stats"]["blocks"] == [] and data["stats"]["blocks_note"] == "inline: asked for"


def test_failed_export_keeps_the_old_file(examples_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "keep.mlir"
    out.write_text("precious\n")
    proc = run_cli("export", str(examples_dir / "mlp.py"), "--module", "MLP", "-o", str(out),
                   "--inputs", "(torch.randn(2, 999),)")  # wrong shape: the export fails
    assert proc.returncode in (1, 2), proc.stderr
    assert "Traceback" not in proc.stderr
    assert out.read_text() == "precious\n"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.mlir"]


def test_export_never_writes_over_source(examples_dir: Path, tmp_path: Path) -> None:
    """`-o` may name any folder and any file, except a source: the module's own file (however
    spelt, a symlink to it included) or any .py/.ipynb. Exit 2, one line, nothing written."""
    src = tmp_path / "model.py"
    shutil.copy(examples_dir / "mlp.py", src)
    other = tmp_path / "other.py"
    other.write_text("VALUE = 1\n")
    (tmp_path / "link.mlir").symlink_to(src)
    kept = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (src, other)}
    for out, reason in (("model.py", "the module's own source file"),
                        ("./sub/../model.py", "the module's own source file"),
                        ("link.mlir", "the module's own source file"),
                        ("other.py", "Python source"),
                        ("notes.ipynb", "Python source")):
        if "sub" in out:
            (tmp_path / "sub").mkdir(exist_ok=True)
        proc = run_cli("export", "model.py", "--module", "MLP", "-o", out, cwd=tmp_path)
        assert_one_line_error(proc, 2, f"error: {os.path.normpath(out)}: will not write the "
                                       "export here: ", reason)
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (src, other)} == kept
    assert not (tmp_path / "notes.ipynb").exists()


@pytest.mark.parametrize(("module", "kind"), [("Segfault", "SIGSEGV"), ("HardExit", "exit code 3")])
def test_worker_crash_is_exit_3(models_dir: Path, module: str, kind: str) -> None:
    proc = run_cli("lower", str(models_dir / "faulty.py"), "--module", module)
    assert_one_line_error(proc, 3, kind)


def test_cli_leaves_no_process_behind(models_dir: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    env = {**os.environ, "FAULTY_PIDFILE": str(pidfile)}
    proc = subprocess.run(
        [sys.executable, "-m", "torch_mlir_lens", "lower", str(models_dir / "faulty.py"),
         "--module", "Spawner"], capture_output=True, text=True, timeout=TIMEOUT, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 2
    for pid in pids:
        assert not _alive(pid), f"child {pid} outlived the CLI"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_check_export_failure_is_an_error_at_its_line(examples_dir: Path) -> None:
    proc = run_cli("check", str(examples_dir / "export_failures.py"), "--module",
                   "NumpyRoundTrip", "--targets", "linalg", "--json")
    assert proc.returncode == 1, proc.stderr
    (entry,) = json.loads(proc.stdout)["modules"]
    verdict = entry["targets"]["linalg"]
    assert verdict["ok"] is False and verdict["unsupported"] == []
    assert "numpy" in verdict["error"]
    assert verdict["error_line"] == 32


def test_a_reader_that_leaves_ends_the_command_quietly(examples_dir: Path) -> None:
    """`torch-mlir-lens lower … | head`: the pipe closed before the IR is written ends the
    command as Unix tools end (128 + SIGPIPE), with no 'internal error'."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "torch_mlir_lens", "lower", str(examples_dir / "mlp.py"),
         "--module", "MLP", "--timeout", JOB_TIMEOUT],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.close()  # no reader: the command's first write meets a closed pipe
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 128 + signal.SIGPIPE, err
    assert "internal error" not in err and "Traceback" not in err
