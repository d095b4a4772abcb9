"""Rewrites past rejected ops (worker/rewrites/): proven before they are offered, applied at
export time when a module asks for them, never offered when wrong.

Through the worker's own entry point (`run_job`, in-process) on the modules of
models/rewrite_cases.py, with the real torch-mlir.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

from torch_mlir_lens.worker.job_handlers import run_job
from torch_mlir_lens.worker.rewrites import library
from torch_mlir_lens.worker.rewrites.library import special
from torch_mlir_lens.worker.rewrites.table import Rewrite

CASES = Path(__file__).parent / "models" / "rewrite_cases.py"


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rewrites") / "rewrite_cases.py"
    shutil.copy(CASES, path)
    return path


def _job(op: str, path: Path, module: str, **fields: Any) -> dict[str, Any]:
    reply = run_job({"id": 1, "op": op, "path": str(path), "module": module, **fields})
    assert reply["ok"], reply.get("error")
    return reply["result"]


def _offers(path: Path, module: str, targets: list[str]) -> list[dict[str, Any]]:
    return _job("rewrites", path, module, targets=targets)["offers"]


def test_erfinv_is_proven_on_tosa_and_stablehlo_with_its_error(cases: Path) -> None:
    offers = _offers(cases, "Gauss", ["tosa", "stablehlo"])
    assert [(o["target"], o["op"], o["rewrites"], o["verified"]) for o in offers] == [
        ("tosa", "aten.erfinv", ["erfinv"], True), ("stablehlo", "aten.erfinv", ["erfinv"], True)]
    for offer in offers:
        assert offer["line"] == 20 and 0 < offer["max_abs"] < 1e-6
        assert offer["verify"].startswith("✓ matches eager")
        (check,) = offer["checks"]
        assert check["ok"] and check["source"] == "library"
        assert check["examples"]["values"] == 32 and check["edge_cases"] >= 1
        assert check["edges"]["max_rel"] < 1e-6  # ±1 → ±inf, NaN, denormals: all as torch


def test_a_module_asking_for_a_rewrite_lowers_with_it_and_verifies(tmp_path: Path) -> None:
    text = CASES.read_text().replace(
        "# torch-mlir-lens: inputs=(torch.randn(4, 8),)",
        "# torch-mlir-lens: inputs=(torch.randn(4, 8),)\n# torch-mlir-lens: rewrites=erfinv@tosa")
    path = tmp_path / "asks.py"
    path.write_text(text)
    results = _job("lower", path, "Gauss", targets=["linalg", "tosa"])["results"]
    linalg, tosa = results
    assert not linalg["ok"] and "rewrites" not in linalg  # asked for TOSA only
    assert tosa["ok"] and tosa["rewrites"] == ["erfinv"], tosa["diagnostics"]
    marked = [ln for ln in tosa["ir"].splitlines() if ln.endswith("// rewrite erfinv")]
    assert any("tosa.erf " in ln for ln in marked)
    verified = _job("verify", path, "Gauss", target="tosa")
    assert verified["ok"], verified["message"]


def test_an_unknown_rewrite_is_an_error_at_its_comment(tmp_path: Path) -> None:
    path = tmp_path / "unknown.py"
    path.write_text(CASES.read_text().replace(
        "# torch-mlir-lens: inputs=(torch.randn(4, 8),)",
        "# torch-mlir-lens: inputs=(torch.randn(4, 8),); rewrites=erfinx@tosa"))
    reply = run_job({"id": 1, "op": "lower", "path": str(path), "module": "Gauss",
                     "targets": ["tosa"]})
    assert not reply["ok"]
    assert reply["error"]["kind"] == "bad-inputs" and reply["error"]["line"] == 12
    assert "no rewrite is named `erfinx`" in reply["error"]["message"]


def _scaled(y: torch.Tensor) -> torch.Tensor:  # off by 0.1 %
    return special.erfinv_newton(y) * 1.001


def _clamped(y: torch.Tensor) -> torch.Tensor:  # right inside (-1, 1), finite at ±1
    return special.erfinv_newton(y.clamp(-0.999999, 0.999999))


WRONG = {
    "erfinv_scaled": ("differs from the op on the example inputs", _scaled),
    "erfinv_clamped": ("differs from the op on edge cases", _clamped),
    "erfinv_prims": ("does not lower alone on TOSA", torch._refs.erfinv),  # prims.erf_inv
}


def _wrong(name: str) -> Rewrite:
    return Rewrite(name=name, culprits=("aten.erfinv",), method="wrong on purpose",
                   entries=(("aten.erfinv.default", WRONG[name][1]),))


def test_a_wrong_rewrite_is_never_offered(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrong candidates ahead of the right one: each is refused by the step that catches it,
    and only the right one is offered; with no right one, nothing is. (A file of its own: the
    worker keeps the offers of a program it has proven.)"""
    cases = tmp_path / "wrong_candidates.py"
    shutil.copy(CASES, cases)
    wrong = {name: _wrong(name) for name in WRONG}
    monkeypatch.setattr(library, "LIBRARY", {**wrong, "erfinv": library.LIBRARY["erfinv"]})
    import torch_mlir_lens.worker.rewrites.candidates as candidates

    monkeypatch.setattr(candidates, "LIBRARY", library.LIBRARY)
    (offer,) = _offers(cases, "Gauss", ["tosa"])
    assert offer["rewrites"] == ["erfinv"] and offer["verified"]
    refused = {c["rewrite"]: c["why"] for c in offer["checks"] if not c["ok"]}
    assert set(refused) == set(WRONG)
    for name, (why, _fn) in WRONG.items():
        assert why in refused[name], (name, refused[name])

    monkeypatch.setattr(candidates, "LIBRARY", wrong)  # no right candidate left
    (offer,) = _offers(cases, "Gauss", ["stablehlo"])
    assert offer["rewrites"] == [] and not offer["verified"]
    assert "passes its proof" in offer["why"]
    assert all(not c["ok"] for c in offer["checks"] if c["rewrite"] in WRONG)


@pytest.mark.parametrize("module", ["PartialRotary", "Sections"])
def test_empty_slices_are_dropped_on_tosa(cases: Path, module: str) -> None:
    offers = _offers(cases, module, ["tosa"])
    assert offers and all(o["rewrites"] == ["empty_tensors"] and o["verified"] for o in offers)
    assert all(o["max_abs"] == 0.0 for o in offers)  # nothing computed: exact


def test_histc_is_counted_exactly_on_every_backend(cases: Path) -> None:
    offers = _offers(cases, "Router", ["linalg", "tosa", "stablehlo"])
    assert [(o["target"], o["rewrites"], o["verified"]) for o in offers] == [
        (t, ["histc"], True) for t in ("linalg", "tosa", "stablehlo")]
    assert all(o["max_abs"] == 0.0 for o in offers)


def test_histc_matches_torch_on_its_edges() -> None:
    """Values at the bins' edges, outside the range, NaN and infinities: counted as torch
    counts them (the proof checks the module's own values; this checks the method)."""
    from torch_mlir_lens.worker.rewrites.library.counting import histc_by_comparison

    x = torch.tensor([0.0, 0.75, 1.5, 2.25, 3.0, 2.9999, -0.0, -1e-9, 3.0001, math.nan,
                      math.inf, -math.inf, 1.0, 2.0])
    for lo, hi in ((0.0, 3.0), (0.0, 0.0)):
        finite = x[torch.isfinite(x)] if lo == hi else x  # auto range: torch refuses NaN
        assert torch.equal(histc_by_comparison(finite, bins=4, min=lo, max=hi),
                           torch.histc(finite, bins=4, min=lo, max=hi))


@pytest.mark.parametrize(("module", "rewrite"), [
    ("Pool3d", "max_pool"), ("ScatterMax", "scatter"), ("Angles", "trig"),
    ("Products", "cumprod")])
def test_library_rewrites_are_proven_on_tosa(cases: Path, module: str, rewrite: str) -> None:
    """A few of the library's rewrites, each on a module of the kind the e2e suite fails on
    TOSA: proven, and the module lowered through them runs TOSA's IR as eager does."""
    offers = _offers(cases, module, ["tosa"])
    assert offers and all(o["rewrites"] == [rewrite] and o["verified"] for o in offers), offers
    assert all(o["verify"].startswith("✓ matches eager") and "ran" not in o["verify"]
               for o in offers)


def test_a_stitched_module_is_proven_and_lowered_through_rewrites_inline(cases: Path) -> None:
    """Its layers lower as one function; the proof and a lowering through the rewrite need the
    program torch.export made whole, so neither takes the stitched program the lowering kept."""
    (tosa,) = _job("lower", cases, "GaussStack", targets=["tosa"])["results"]
    assert not tosa["ok"] and tosa["stats"]["blocks"], tosa["stats"]  # stitched, erfinv refused
    (offer,) = _offers(cases, "GaussStack", ["tosa"])
    assert offer["rewrites"] == ["erfinv"] and offer["verified"], offer
    (through,) = _job("lower", cases, "GaussStack", targets=["tosa"],
                      rewrites=["erfinv@tosa"])["results"]
    assert through["ok"] and through["rewrites"] == ["erfinv"], through["diagnostics"]
    assert not through["stats"]["blocks"] and "rewrites" in through["stats"]["blocks_note"]
