"""An export failure says why in words, at the line that made it, with the values involved;
one raised in library code names the library line and its code, and stays on the user's line
that reaches it (the real torch.export, through `export_program`).

The library is a package on `sys.path` outside the user's files, shaped like the code the
issue met: a quantizer's `if not self.initted:` on a buffer, an ODE solver's check that its
time grid increases, a tabular network's `if is_continuous:`.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import torch
from torch import nn

from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.worker.lowering import export_program

LIBRARY = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Codebook(nn.Module):
        def __init__(self, n=16, d=8):
            super().__init__()
            self.register_buffer("initted", torch.tensor(True))
            self.register_buffer("embed", torch.randn(n, d))

        def forward(self, x):
            if not self.initted:
                self.embed.copy_(x[: self.embed.shape[0]])
            return self.embed[torch.cdist(x, self.embed).argmin(-1)]


    class Solver(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x, t):
            assert (t[1:] > t[:-1]).all(), "t must be strictly increasing"
            return x + (t[1] - t[0]) * torch.tanh(self.fc(x))


    class Tabular(nn.Module):
        def forward(self, x):
            is_continuous = x[:, 0].abs().max() > 0.5
            if is_continuous:
                x = x * 2
            return x
    """
)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    root = tmp_path_factory.mktemp("export_lib")
    (root / "lens_export_library").mkdir()
    (root / "lens_export_library" / "__init__.py").write_text("")
    path = root / "lens_export_library" / "layers.py"
    path.write_text(LIBRARY)
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("lens_export_library.layers")
    finally:
        sys.path.remove(str(root))


def _line(module: ModuleType, code: str) -> int:
    lines = Path(module.__file__ or "").read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if code in text)


def _refusal(fn: nn.Module, *args: torch.Tensor) -> LensError:
    with pytest.raises(LensError) as info:
        export_program(fn, args, user_files=[__file__])
    return info.value


class Quantizer(nn.Module):
    def __init__(self, library: ModuleType) -> None:
        super().__init__()
        self.vq = library.Codebook()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.vq(x)  # the user's line: the error stays here


class Flow(nn.Module):
    def __init__(self, library: ModuleType) -> None:
        super().__init__()
        self.solve = library.Solver()

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.solve(x, t)


class Table(nn.Module):
    def __init__(self, library: ModuleType) -> None:
        super().__init__()
        self.net = library.Tabular()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class OwnBranch(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x * 2
        return x


def _user_line(code: str) -> int:
    return _line(sys.modules[__name__], code)


def test_a_branch_on_a_buffer_names_it_with_its_value_and_the_library_line(
        library: ModuleType) -> None:
    err = _refusal(Quantizer(library), torch.randn(4, 8))
    library_line = _line(library, "if not self.initted:")
    assert err.line == _user_line("return self.vq(x)  # the user's line")
    first = err.message.splitlines()[0]
    assert first.startswith(f"torch.export failed: `if not self.initted:` (layers.py:"
                            f"{library_line}) branches on the value of buffer `vq.initted` "
                            f"(True)")
    assert err.related and (err.related[0].file, err.related[0].line) == (
        library.__file__, library_line)
    assert "if not self.initted:" in err.related[0].message
    assert "library code" in err.message  # not advice to edit code the user does not own


def test_a_check_on_a_time_grid_in_a_solver(library: ModuleType) -> None:
    err = _refusal(Flow(library), torch.randn(4, 8), torch.linspace(0, 1, 5))
    assert err.line == _user_line("return self.solve(x, t)")
    assert "`assert (t[1:] > t[:-1]).all()" in err.message
    assert "checks a tensor's value: a tensor converted to a Python bool" in err.message
    assert err.related[0].line == _line(library, "assert (t[1:]")


def test_a_branch_on_a_computed_tensor_in_a_tabular_network(library: ModuleType) -> None:
    err = _refusal(Table(library), torch.randn(4, 8))
    assert "`if is_continuous:`" in err.message
    assert "branches on a tensor's value: a tensor converted to a Python bool" in err.message
    assert err.related[0].line == _line(library, "if is_continuous:")


def test_a_branch_in_the_users_own_code_gets_the_advice_that_applies_there() -> None:
    err = _refusal(OwnBranch(), torch.randn(4, 8))
    assert err.line == _user_line("if x.sum() > 0:")
    assert "`if x.sum() > 0:` (line" in err.message
    assert "torch.cond / torch.where for the branch" in err.message
    assert "library code" not in err.message


class Several(nn.Module):
    def __init__(self, library: ModuleType) -> None:
        super().__init__()
        self.vq = library.Codebook()
        self.net = library.Tabular()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.vq(x)
        if y.abs().sum() < 0:  # never true: the example says False
            y = y + 1
        return self.net(y)


def test_every_refused_line_is_named_in_one_run_with_its_value(library: ModuleType) -> None:
    err = _refusal(Several(library), torch.randn(4, 8))
    lines = err.message.splitlines()
    assert lines[0].startswith("torch.export failed: `if not self.initted:`")
    own = _user_line("if y.abs().sum() < 0:")
    assert (f"also refused: `if y.abs().sum() < 0:  # never true: the example says False` "
            f"(line {own}) branches on a tensor's value") in err.message
    assert "on the example inputs" not in err.message  # random inputs: a value would vary
    table = _line(library, "if is_continuous:")
    assert f"also refused: `if is_continuous:` (layers.py:{table})" in err.message
    assert [(r.file, r.line) for r in err.related] == [
        (library.__file__, _line(library, "if not self.initted:")), (__file__, own),
        (library.__file__, table)]
