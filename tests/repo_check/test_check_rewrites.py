"""`check` and rewrites, as a process: each finding says whether a proven rewrite takes the
module past it and its error; SARIF carries it as a fix (valid against the schema) which,
applied, makes the module pass; `--rewrites auto` lowers through every proven rewrite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())

MODEL = '''import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(4, 8),)
@torch.no_grad()
def gauss(x):
    return torch.special.erfinv(torch.tanh(x)) * 2
'''


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torch_mlir_lens", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=900)


def _apply(text: str, fix: dict[str, Any]) -> str:
    """A SARIF fix of whole lines applied to a file's text."""
    (change,) = fix["artifactChanges"]
    (replacement,) = change["replacements"]
    region = replacement["deletedRegion"]
    lines = text.splitlines(keepends=True)
    start, end = region["startLine"] - 1, region["endLine"] - 1
    return "".join([*lines[:start], replacement["insertedContent"]["text"], *lines[end:]])


def test_findings_carry_proven_rewrites_and_sarif_fixes_that_work(tmp_path: Path) -> None:
    model = tmp_path / "model.py"
    model.write_text(MODEL)
    first = run("check", "model.py", "--targets", "tosa,stablehlo", "--format", "json",
                "-o", "report.json", cwd=tmp_path)
    assert first.returncode == 1, first.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    findings = report["modules"][0]["findings"]
    assert {f["rule"] for f in findings} == {"tosa/aten.erfinv", "stablehlo/aten.erfinv"}
    for f in findings:
        rewrite = f["rewrite"]
        assert rewrite["rewrites"] == ["erfinv"] and 0 < rewrite["max_abs"] < 1e-6
        assert rewrite["verify"].startswith("✓")
        # One edit for the module: both backends, whichever finding's fix is applied.
        assert rewrite["edit"] == {"line": 6, "replace": False,
                                   "text": "# torch-mlir-lens: rewrites=erfinv@tosa, "
                                           "erfinv@stablehlo"}

    sarif = run("merge", "report.json", "--format", "sarif", "-o", "report.sarif",
                cwd=tmp_path)
    assert sarif.returncode == 1, sarif.stderr
    log = json.loads((tmp_path / "report.sarif").read_text())
    assert not list(jsonschema.Draft4Validator(SCHEMA).iter_errors(log))
    results = log["runs"][0]["results"]
    fixes = [r["fixes"][0] for r in results]
    assert {f["description"]["text"] for f in fixes} == {
        f"Lower `aten.erfinv` on {t} through a rewrite (max error "
        f"{findings[0]['rewrite']['max_abs']:.2g} on the example inputs)"
        for t in ("TOSA", "StableHLO")}
    model.write_text(_apply(MODEL, fixes[0]))

    fixed = run("check", "model.py", "--targets", "tosa,stablehlo", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr[-2000:]
    assert "tosa ok (through rewrites erfinv), stablehlo ok (through rewrites erfinv)" \
        in fixed.stdout

    model.write_text(MODEL)
    auto = run("check", "model.py", "--targets", "linalg", "--rewrites", "auto", "--format",
               "json", cwd=tmp_path)
    assert auto.returncode == 0, auto.stderr[-2000:]
    verdict = json.loads(auto.stdout)["modules"][0]["targets"]["linalg"]
    assert verdict["ok"] and verdict["rewrites"] == ["erfinv"]


def test_export_code_and_verify_through_rewrites_from_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(MODEL)
    export = run("export", "model.py", "--module", "gauss", "--target", "tosa", "--rewrites",
                 "erfinv@tosa", "--emit-python", "-o", "export_gauss.py", cwd=tmp_path)
    assert export.returncode == 0, export.stderr[-2000:]
    assert "rewrites: erfinv" in export.stdout
    code = (tmp_path / "export_gauss.py").read_text()
    assert "def erfinv_newton(" in code and "torch_mlir_lens" not in code
    verify = run("verify", "model.py", "--target", "tosa", "--rewrites", "erfinv@tosa",
                 cwd=tmp_path)
    assert verify.returncode == 0, verify.stdout + verify.stderr[-2000:]
    assert verify.stdout.startswith("gauss: ✓ matches eager")
    bad = run("verify", "model.py", "--rewrites", "erfinv@tpu", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown backend `tpu`" in bad.stderr


def test_export_code_never_replaces_a_file_it_did_not_write(tmp_path: Path) -> None:
    """`--emit-python` writes a `.py` file: a new one, or its own earlier output; the module's
    file and any other existing file are refused (exit 2) before any worker runs, unchanged."""
    model = tmp_path / "model.py"
    model.write_text(MODEL)
    mine = tmp_path / "train.py"
    mine.write_text("print('the user wrote this')\n")
    args = ["export", "model.py", "--module", "gauss", "--target", "linalg", "--emit-python"]
    for target, why in ((model, "the module's own source file"),
                        (mine, "is not export code this command wrote")):
        refused = run(*args, "-o", target.name, cwd=tmp_path)
        assert refused.returncode == 2 and why in refused.stderr, refused.stderr[-2000:]
    assert model.read_text() == MODEL and mine.read_text() == "print('the user wrote this')\n"
    first = run(*args, "-o", "gauss_ir.py", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    again = run(*args, "-o", "gauss_ir.py", cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]


QUANTIZER = '''import torch
from torch import nn


class Codebook(nn.Module):  # a vector quantizer's codebook, initialised once
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.register_buffer("initted", torch.tensor(True))
        self.register_buffer("embed", torch.randn(16, 8))

    def forward(self, x):
        embed = self.embed
        if not self.initted:
            embed = x.mean(0, keepdim=True).expand_as(self.embed)
        return embed[(x[:, None] - embed[None]).pow(2).sum(-1).argmin(-1)]


# torch-mlir-lens: inputs=(torch.randn(4, 8),)
class Quantizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.vq = Codebook()

    def forward(self, x):
        return self.vq(x)
'''


def test_an_export_refusal_gets_its_proven_pin_as_a_sarif_fix_that_works(
        tmp_path: Path) -> None:
    model = tmp_path / "model.py"
    model.write_text(QUANTIZER)
    first = run("check", "model.py", "--targets", "linalg,tosa", "--format", "sarif",
                "-o", "report.sarif", cwd=tmp_path)
    assert first.returncode == 1, first.stderr[-2000:]
    log = json.loads((tmp_path / "report.sarif").read_text())
    assert not list(jsonschema.Draft4Validator(SCHEMA).iter_errors(log))
    results = log["runs"][0]["results"]
    assert results and all("a proven way past it" in r["message"]["text"] for r in results)
    titles = {r["fixes"][0]["description"]["text"].split(" (max error")[0]: r["fixes"][0]
              for r in results}
    # The codebook (inputs derived from the quantizer) and the quantizer, each its own name.
    assert set(titles) == {"Export past the refusal: pin `initted` to its value",
                           "Export past the refusal: pin `vq.initted` to its value"}
    fixed_text = _apply(QUANTIZER, titles["Export past the refusal: pin `vq.initted` to its "
                                          "value"])
    assert "# torch-mlir-lens: rewrites=pin.vq.initted\n" in fixed_text
    model.write_text(fixed_text)
    fixed = run("check", "model.py", "--module", "Quantizer", "--targets", "linalg,tosa",
                cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr[-2000:]
    assert "linalg ok (through rewrites pin.vq.initted)" in fixed.stdout

    model.write_text(QUANTIZER)
    auto = run("check", "model.py", "--targets", "tosa", "--rewrites", "auto", "--format",
               "json", cwd=tmp_path)
    assert auto.returncode == 0, auto.stderr[-2000:]
    verdicts = {m["name"]: m["targets"]["tosa"] for m in json.loads(auto.stdout)["modules"]}
    assert verdicts["Quantizer"]["ok"] and verdicts["Quantizer"]["rewrites"] == [
        "pin.vq.initted"]
    assert verdicts["Codebook"]["ok"] and verdicts["Codebook"]["rewrites"] == ["pin.initted"]


TABULAR = '''import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(6, 5), torch.tensor([0, 3, 1, 2, 1, 0]))
class TabularEncoder(nn.Module):  # zeroes the rows of a missing category, when there are some
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(4, 5)
        self.proj = nn.Linear(5, 8)

    def forward(self, numeric, codes):
        is_special = codes == 3
        h = numeric + self.embed(codes)
        if is_special.any():
            h = torch.where(is_special[:, None], torch.zeros_like(h), h)
        return self.proj(h)
'''


def test_a_data_dependent_refusal_gets_the_proven_specialisation_as_a_sarif_fix(
        tmp_path: Path) -> None:
    model = tmp_path / "model.py"
    model.write_text(TABULAR)
    first = run("check", "model.py", "--targets", "linalg", "--format", "sarif",
                "-o", "report.sarif", cwd=tmp_path)
    assert first.returncode == 1, first.stderr[-2000:]
    log = json.loads((tmp_path / "report.sarif").read_text())
    assert not list(jsonschema.Draft4Validator(SCHEMA).iter_errors(log))
    (result,) = log["runs"][0]["results"]
    assert "a proven way past it" in result["message"]["text"]
    assert "holds only for inputs that decide these lines the same way" in \
        result["message"]["text"]
    fix = result["fixes"][0]
    assert fix["description"]["text"].startswith(
        "Export past the refusal: specialise it to the example's decisions")
    fixed_text = _apply(TABULAR, fix)
    assert "# torch-mlir-lens: rewrites=export.specialize\n" in fixed_text
    model.write_text(fixed_text)
    fixed = run("check", "model.py", "--targets", "linalg,tosa", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr[-2000:]
    assert "linalg ok (through rewrites export.specialize)" in fixed.stdout
