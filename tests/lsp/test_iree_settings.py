"""The editor's IREE parts without a server: the settings (IREE targets diagnosed, an
architecture per target), the verdict lens's compact titles, an IREE export's `.vmfb` name,
and the notice that IREE is missing, told once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from torch_mlir_lens.lsp.checks.missing_dependencies import MissingDependencies
from torch_mlir_lens.lsp.document.records import Verdict
from torch_mlir_lens.lsp.features.code_lens import verdict_title
from torch_mlir_lens.lsp.state.settings import parse_settings
from torch_mlir_lens.project import write_policy


def test_settings_take_the_iree_targets_and_architectures() -> None:
    settings, problems = parse_settings({
        "diagnosticTargets": ["tosa", "iree-cuda"], "defaultTarget": "iree-cpu",
        "ireeArchs": {"iree-cpu": "host", "iree-cuda": "sm_86", "iree-vulkan": ""}})
    assert problems == []
    assert settings.diagnostic_targets == ("tosa", "iree-cuda")
    assert settings.check_targets == ("iree-cpu", "tosa", "iree-cuda")
    assert dict(settings.iree_archs) == {"iree-cuda": "sm_86"}  # defaults left out
    bad, problems = parse_settings({"ireeArchs": {"iree-cuda": "sm_86 --x"}})
    assert bad.iree_archs == {} and "ireeArchs" in problems[0]
    _, problems = parse_settings({"ireeArchs": {"linalg": "x"}})
    assert problems


def test_compact_verdict_titles() -> None:
    verdicts = {"linalg": Verdict(ok=True), "iree-cpu": Verdict(ok=True),
                "iree-rocm": Verdict(ok=True, not_run=True),
                "iree-cuda": Verdict(ok=False, unsupported=("aten.x",))}
    title, click = verdict_title(verdicts, ("linalg", "iree-cpu", "iree-rocm", "iree-cuda"),
                                 "linalg")
    assert title == "Linalg ✓ · IREE CPU ✓ · ROCm ✓ (not run) · CUDA ✗ 1 op"
    assert click == "iree-cuda"
    missing = {"iree-cpu": Verdict(ok=False, error="IREE CPU needs IREE ...",
                                   error_kind="missing-dependency")}
    assert verdict_title(missing, ("iree-cpu",), "linalg")[0] == "IREE CPU ✗ not installed"


class _Client:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def notify(self, method: str, params: Any) -> None:
        self.sent.append((method, params))


def test_a_missing_iree_is_told_once() -> None:
    client = _Client()
    notice = MissingDependencies(client)  # type: ignore[arg-type]
    notice.tell("IREE CPU needs IREE ...", "linalg")  # not an IREE target: nothing to install
    notice.tell("IREE CPU needs IREE ...", "iree-cpu")
    notice.tell("IREE ROCm needs IREE ...", "iree-rocm")
    assert [(m, p.extra, p.packages) for m, p in client.sent] == [
        ("torchMlirLens/missingDependency", "iree", ["iree-base-compiler", "iree-base-runtime"])]


def test_an_iree_export_is_a_vmfb(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    ok = write_policy.check_export(str(tmp_path / "m.vmfb"), source=str(source),
                                   roots=[str(tmp_path)], compiled=True)
    assert ok.endswith("m.vmfb")
    for name, compiled in (("m.mlir", True), ("m.vmfb", False)):
        with pytest.raises(write_policy.WriteRefused):
            write_policy.check_export(str(tmp_path / name), source=str(source),
                                      roots=[str(tmp_path)], compiled=compiled)
