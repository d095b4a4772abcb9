"""rules/targets.py is the one home of the pass-pipeline strings (torch-free, read by the
worker)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import torch_mlir_lens
from torch_mlir_lens.rules import targets

PACKAGE_DIR = Path(torch_mlir_lens.__file__).parent


def _pipeline_literals(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value.startswith("builtin.module(")]


def test_pipeline_strings_are_written_only_in_targets() -> None:
    elsewhere = {str(p.relative_to(PACKAGE_DIR)): found for p in sorted(PACKAGE_DIR.rglob("*.py"))
                 if p != PACKAGE_DIR / "rules" / "targets.py" and (found := _pipeline_literals(p))}
    assert elsewhere == {}, elsewhere


def test_every_backend_has_its_pipeline() -> None:
    assert set(targets.BACKEND_PIPELINES) == set(targets.BACKENDS)
    assert set(targets.LEFTOVER_PIPELINES) <= set(targets.BACKENDS)
    for name, pipeline in targets.BACKEND_PIPELINES.items():
        assert pipeline == targets.TARGETS[name].backend_pipeline


def test_targets_imports_without_torch() -> None:
    code = ("import sys, torch_mlir_lens.rules.targets\n"
            "sys.exit(3 if 'torch' in sys.modules else 0)\n")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
