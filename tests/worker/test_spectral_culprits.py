"""A 2-D Fourier neural operator from a library, on TOSA: every op that fails alone is named,
at the user's line that calls the library, with repeated blocks traced once as with every
layer inline.

The library is a package on `sys.path` outside the user's folder, shaped like the classic FNO
code: a complex spectral convolution (`torch.fft.rfft2`, a complex `einsum` that becomes
`bmm`, `torch.zeros(..., dtype=torch.cfloat)`, slices and `slice_scatter` of complex
tensors, `irfft2`) repeated in an `nn.ModuleList`. On TOSA the complex `bmm` aborts torch-mlir
when lowered alone, and a complex weight cannot become a TOSA constant: the culprits used to
shrink to the two FFT ops (and the block's copies went to the wrapper's `def forward` line).
Real jobs through `run_job`, the real torch-mlir.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from torch_mlir_lens.worker.job_handlers import run_job

LIBRARY = textwrap.dedent(
    """\
    import torch
    import torch.nn.functional as F
    from torch import nn


    class SpectralConv2d(nn.Module):
        def __init__(self, cin, cout, m1, m2):
            super().__init__()
            self.m1, self.m2, self.cout = m1, m2, cout
            scale = 1 / (cin * cout)
            self.w1 = nn.Parameter(scale * torch.rand(cin, cout, m1, m2, dtype=torch.cfloat))
            self.w2 = nn.Parameter(scale * torch.rand(cin, cout, m1, m2, dtype=torch.cfloat))

        def compl_mul2d(self, a, w):
            return torch.einsum("bixy,ioxy->boxy", a, w)

        def forward(self, x):
            b = x.shape[0]
            x_ft = torch.fft.rfft2(x)
            out_ft = torch.zeros(b, self.cout, x.size(-2), x.size(-1) // 2 + 1,
                                 dtype=torch.cfloat)
            out_ft[:, :, :self.m1, :self.m2] = self.compl_mul2d(
                x_ft[:, :, :self.m1, :self.m2], self.w1)
            out_ft[:, :, -self.m1:, :self.m2] = self.compl_mul2d(
                x_ft[:, :, -self.m1:, :self.m2], self.w2)
            return torch.fft.irfft2(out_ft, s=(x.size(-2), x.size(-1)))


    class FNO2d(nn.Module):
        def __init__(self, modes=4, width=8, layers=4):
            super().__init__()
            self.lift = nn.Linear(3, width)
            self.convs = nn.ModuleList(
                [SpectralConv2d(width, width, modes, modes) for _ in range(layers)])
            self.ws = nn.ModuleList([nn.Conv2d(width, width, 1) for _ in range(layers)])
            self.project = nn.Linear(width, 1)

        def forward(self, x):
            x = self.lift(x).permute(0, 3, 1, 2)
            for conv, w in zip(self.convs, self.ws):
                x = F.gelu(conv(x) + w(x))
            return self.project(x.permute(0, 2, 3, 1))
    """
)

USER = textwrap.dedent(
    """\
    import torch
    from torch import nn

    from lens_fno_library.operators import FNO2d


    # torch-mlir-lens: inputs=(torch.randn(1, 16, 16, 3),)
    class Operator(nn.Module):
        def __init__(self):
            super().__init__()
            self.fno = FNO2d()

        def forward(self, x):
            return self.fno(x)
    """
)
CALL_LINE = 14  # `return self.fno(x)`
DEF_LINE = 13

# What fails alone on TOSA (the complex bmm aborts torch-mlir alone).
EXPECTED = {"torch.aten.fft_rfft2", "torch.aten.fft_irfft2", "torch.aten.bmm",
            "torch.aten.slice.Tensor", "torch.aten.slice_scatter",
            "torch.aten.empty.memory_format", "torch.aten.permute", "torch.aten.view"}


@pytest.fixture(scope="module")
def user_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fno")
    library = root / "site" / "lens_fno_library"
    library.mkdir(parents=True)
    (library / "__init__.py").write_text("")
    (library / "operators.py").write_text(LIBRARY)
    user = root / "project"
    user.mkdir()
    path = user / "lens_fno_user.py"
    path.write_text(USER)
    return path


def _tosa(path: Path, **extra: Any) -> dict[str, Any]:
    import sys

    site = str(path.parent.parent / "site")
    sys.path.insert(0, site)
    try:
        reply = run_job({"id": 1, "op": "lower", "path": str(path), "module": "Operator",
                         "targets": ["tosa"], **extra})
    finally:
        sys.path.remove(site)
    assert reply["ok"], reply
    [result] = reply["result"]["results"]
    return dict(result)


@pytest.fixture(scope="module")
def stitched(user_file: Path) -> dict[str, Any]:
    return _tosa(user_file)


@pytest.fixture(scope="module")
def inline(user_file: Path) -> dict[str, Any]:
    return _tosa(user_file, inline_blocks=True)


def _named(result: dict[str, Any]) -> set[str]:
    return {op for d in result["diagnostics"] for op in (d.get("ops") or [d["op"]])}


def test_every_complex_op_that_fails_alone_is_named(stitched: dict[str, Any]) -> None:
    assert not stitched["ok"]
    assert stitched["stats"]["blocks"], "the spectral layers were not traced once"
    assert _named(stitched) >= EXPECTED, stitched["diagnostics"]


def test_culprits_are_at_the_call_line_once_as_with_every_layer_inline(
        stitched: dict[str, Any], inline: dict[str, Any]) -> None:
    lines = [d["line"] for d in stitched["diagnostics"]]
    assert DEF_LINE not in lines
    assert set(lines) == {CALL_LINE}
    assert len(lines) == len(set(map(tuple, (sorted(d.get("ops") or []) for d in
                                             stitched["diagnostics"]))))  # each cause once

    def key(result: dict[str, Any]) -> list[tuple[int, tuple[str, ...]]]:
        return sorted((d["line"], tuple(sorted(d.get("ops") or [d["op"]])))
                      for d in result["diagnostics"])

    assert key(stitched) == key(inline)
