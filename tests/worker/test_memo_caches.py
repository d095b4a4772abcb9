"""A library that memoises tensors with `functools.lru_cache` still lowers: what the build on
the meta device or a trace on fake tensors cached is forgotten before anything real uses it.

The library is a package beside the user's file, shaped like an ODE solver's tableau helper
(computed once per order, cached) and a spectral layer's cached frequency grid read in
`forward`; real jobs through `run_job`, the real torch-mlir.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from torch_mlir_lens.worker.job_handlers import run_job
from torch_mlir_lens.worker.loading import construct, memo_caches

LIBRARY = textwrap.dedent(
    """\
    import functools

    import torch
    from torch import nn


    @functools.lru_cache(maxsize=None)
    def _tableau(order):
        nodes = torch.linspace(0.0, 1.0, order + 1, dtype=torch.float64)
        return nodes, nodes[1] - nodes[0]


    class Solver(nn.Module):
        def __init__(self, order=4, width=8, read_step=True):
            super().__init__()
            nodes, step = _tableau(order)
            # a Python float from the cached tensor (meta: "Tensor.item() cannot be called")
            self.step = float(step.item()) if read_step else 0.25
            self.register_buffer("nodes", nodes.float())
            self.fc = nn.Linear(width, width)

        def forward(self, x):
            for c in self.nodes:
                x = x + self.step * torch.tanh(self.fc(x) * c)
            return x


    class Spectral(nn.Module):
        def __init__(self, width=8):
            super().__init__()
            self.fc = nn.Linear(width, width)

        @staticmethod
        @functools.lru_cache(maxsize=8)
        def frequencies(n):
            return torch.arange(n, dtype=torch.float32) / n

        def forward(self, x):
            return self.fc(x) * self.frequencies(x.shape[-1])
    """
)

USER = textwrap.dedent(
    """\
    import torch
    from torch import nn

    from memolib.solvers import Solver, Spectral


    # torch-mlir-lens: inputs=(torch.randn(2, 8),)
    class Flow(nn.Module):
        def __init__(self, order=4):
            super().__init__()
            self.ode = Solver(order, 8)

        def forward(self, x):
            return self.ode(x)


    # torch-mlir-lens: inputs=(torch.randn(2, 8),)
    class QuietFlow(nn.Module):
        def __init__(self):
            super().__init__()
            self.ode = Solver(3, 8, read_step=False)

        def forward(self, x):
            return self.ode(x)


    # torch-mlir-lens: inputs=(torch.randn(2, 8),)
    class Filter(nn.Module):
        def __init__(self):
            super().__init__()
            self.spec = Spectral(8)

        def forward(self, x):
            return self.spec(x)
    """
)


@pytest.fixture(scope="module")
def user_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("memo")
    (root / "memolib").mkdir()
    (root / "memolib" / "__init__.py").write_text("")
    (root / "memolib" / "solvers.py").write_text(LIBRARY)
    path = root / "lens_memo_user.py"
    path.write_text(USER)
    return path


def _job(path: Path, op: str, module: str, tag: str, **extra: Any) -> dict[str, Any]:
    text = path.read_text() + f"\n# {tag}\n"
    reply = run_job({"id": 1, "op": op, "path": str(path), "text": text, "module": module,
                     **extra})
    assert reply["ok"], reply
    result: dict[str, Any] = reply["result"]
    return result


@pytest.mark.parametrize(("policy", "order"), [("auto", 4), (construct.META, 5)])
def test_a_tensor_cached_by_the_meta_build_is_not_handed_to_the_real_build(
        user_file: Path, policy: str, order: int) -> None:
    # The meta build fails on `.item()` after the helper cached its meta tensors; the build
    # with weights that follows calls the same helper (an order no earlier build cached).
    [res] = _job(user_file, "lower", "Flow", f"flow-{policy}", targets=["linalg"],
                 construct=policy, init=f"({order},)")["results"]
    assert res["ok"], res["diagnostics"]
    assert res["stats"]["construction"] == construct.REAL
    assert "meta tensors" in res["stats"]["construction_reason"]  # the meta build did fail


def test_a_meta_build_that_succeeds_leaves_no_meta_buffer_for_the_real_one(
        user_file: Path) -> None:
    # Small: built on meta (succeeds, caching meta nodes), then built for real ("auto").
    [res] = _job(user_file, "lower", "QuietFlow", "quiet", targets=["linalg"],
                 construct="auto")["results"]
    assert res["ok"], res["diagnostics"]
    assert res["stats"]["construction"] == construct.REAL
    verdict = _job(user_file, "verify", "QuietFlow", "quiet-verify")
    assert verdict["ok"], verdict


def test_a_tensor_a_forward_caches_during_one_export_does_not_reach_the_next(
        user_file: Path) -> None:
    for tag in ("first", "second"):  # two exports in one worker, as two edits make
        [res] = _job(user_file, "lower", "Filter", f"filter-{tag}", targets=["linalg"],
                     construct=construct.REAL)["results"]
        assert res["ok"], res["diagnostics"]
    verdict = _job(user_file, "verify", "Filter", "filter-verify")
    assert verdict["ok"], verdict


def test_the_watch_finds_methods_and_clears_only_caches_the_phase_filled(
        user_file: Path) -> None:
    _job(user_file, "lower", "Filter", "filter-load", targets=["torch"])
    import sys

    solvers = sys.modules["memolib.solvers"]
    tableau, frequencies = solvers._tableau, solvers.Spectral.frequencies
    assert {id(tableau), id(frequencies)} <= {id(c) for c in memo_caches.caches()}
    tableau(2)
    seen: list[list[str]] = []
    with memo_caches.watching(seen.append):
        frequencies(5)
    assert frequencies.cache_info().currsize == 0
    assert tableau.cache_info().currsize > 0  # untouched during the phase: kept
    assert seen == [["memolib.solvers.Spectral.frequencies"]]
