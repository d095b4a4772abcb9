"""A module a backend only partly accepts (examples/partial_lowering.py), through the real CLI.

`lower`, `check`, `verify` and `export` name the same culprit ops at the same lines; `lower`
prints the partial IR and still exits 1 (the requested target was not fully reached).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "partial_lowering.py"


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torch_mlir_lens", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def line_of(needle: str) -> int:
    lines = EXAMPLE.read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if needle in text)


LINALG = {line_of("torch.erfinv("): "`aten.erfinv`", line_of("torch.fft.fft("): "`aten.fft_fft`",
          line_of("torch.masked_select("): "`aten.masked_select`"}
# A culprit, and why its backend refuses it when that is known ("(its result ... dynamic)").
DIAG = re.compile(r"^partial_lowering\.py:(\d+): error: (.*) cannot be lowered to (\w+)"
                  r"(?: \(.*\))?$")


def stderr_culprits(stderr: str) -> dict[int, str]:
    out = {}
    for text in stderr.splitlines():
        m = DIAG.match(text)
        if m:
            out[int(m.group(1))] = m.group(2)
    return out


def test_lower_prints_the_partial_ir_and_exits_1() -> None:
    proc = run_cli("lower", EXAMPLE.name, "--target", "linalg", cwd=EXAMPLE.parent)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("// Partial Linalg lowering: 3 lines")
    assert "linalg.matmul" in proc.stdout
    for line, cause in LINALG.items():
        assert f"//   line {line}: {cause}" in proc.stdout
    assert stderr_culprits(proc.stderr) == LINALG
    assert "Traceback" not in proc.stderr


def test_check_verify_and_export_name_the_same_ops_at_the_same_lines(tmp_path: Path) -> None:
    # Culprits and their lines are the subject, not their rewrites (test_check_rewrites.py).
    check = run_cli("check", EXAMPLE.name, "--json", "--rewrites", "off", cwd=EXAMPLE.parent)
    assert check.returncode == 1, check.stderr
    targets = json.loads(check.stdout)["modules"][0]["targets"]
    assert {u["line"]: u["cause"] for u in targets["linalg"]["unsupported"]} == LINALG

    verify = run_cli("verify", EXAMPLE.name, cwd=EXAMPLE.parent)
    assert verify.returncode == 1, verify.stderr
    head, *rest = verify.stdout.splitlines()
    assert head.startswith("PortingCandidate: ✗ cannot lower to Linalg: ")
    assert stderr_culprits("\n".join(rest)) == LINALG
    assert "torch.constant" not in verify.stdout  # not torch-mlir's first raw error

    # TOSA: lower and check agree too (six lines, roll named after its Python call).
    lower = run_cli("lower", EXAMPLE.name, "--target", "tosa", cwd=EXAMPLE.parent)
    tosa = stderr_culprits(lower.stderr)
    assert {u["line"]: u["cause"] for u in targets["tosa"]["unsupported"]} == tosa
    assert len(tosa) == 6
    assert tosa[line_of("torch.roll(")] == (
        "`torch.roll` (decomposed to `aten.slice.Tensor`)")

    out = tmp_path / "out.mlir"
    export = run_cli("export", EXAMPLE.name, "--module", "PortingCandidate", "--target", "tosa",
                     "-o", str(out), cwd=EXAMPLE.parent)
    assert export.returncode == 1
    error = next(t for t in export.stderr.splitlines() if t.startswith("torch-mlir-lens: error:"))
    assert error.startswith(f"torch-mlir-lens: error: partial_lowering.py:{min(tosa)}: "
                            "cannot lower to TOSA: ")
    for line, cause in tosa.items():
        assert f"{cause} (line {line})" in error
    assert not out.exists()
