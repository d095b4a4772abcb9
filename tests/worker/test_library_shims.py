"""Shims that let real library code through: negative scatter dims, unsorted top-k, slice
writes "to the end", custom ops with a Python implementation, `torch.sym_min` of a
data-dependent size, frozen tensors in tensor lists (worker/shims/scatter_dims.py, topk_sorted.py,
slice_bounds.py, custom_ops.py, sym_minmax.py, list_constants.py). Each that lowers is
checked against eager PyTorch by running the compiled Linalg (Verify), not only for lowering.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers.integrations import moe

from torch_mlir_lens.worker.lowering import ProgramLowerer, export_program
from torch_mlir_lens.worker.shims.custom_ops import grouped_mm_by_row
from torch_mlir_lens.worker.verify.job import verify_callable

HERE = str(Path(__file__).resolve())


class RouterOps(torch.nn.Module):
    """What library code does that torch-mlir misread: the three scatters whose Linalg
    conversion crashed on a negative dim and an unsorted top-k (mixture-of-experts routers),
    a slice written to the end (StableHLO allocated until `std::bad_alloc`)."""

    def forward(self, x: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        _, idx = x.max(dim=-1, keepdim=True)
        a = torch.scatter(x, -1, idx, float("-inf"))  # a MoE router's mask
        b = torch.scatter(x, -1, idx, src)
        c = torch.zeros_like(x).scatter_add(-1, idx, src)
        chosen = torch.topk(x, k=2, dim=-1, sorted=False)[1]
        shifted = torch.zeros_like(x)
        shifted[:, 1:] = x[:, :-1]  # a slice write to the end (Funnel's relative shift)
        return (a.amax(-1) + b.sum(-1) + c.sum(-1) + x.gather(1, chosen).sum(-1)
                + shifted.sum(-1))


class GroupedExperts(torch.nn.Module):
    """A MoE layer as transformers writes it on CPU: tokens sorted by expert, one grouped
    matmul through `transformers::grouped_mm_fallback` (a custom op)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 8, 16))

    def forward(self, x: torch.Tensor, expert: torch.Tensor) -> torch.Tensor:
        order = torch.argsort(expert)
        counts = (expert[:, None] == torch.arange(4)[None, :]).sum(dim=0)
        offs = torch.cumsum(counts, dim=0).to(torch.int32)
        return torch.ops.transformers.grouped_mm_fallback(x[order], self.weight, offs)


class ReturnsItsState(torch.nn.Module):
    """Returns a buffer it also indexes with (a tensor list: Swin's relative-position
    index), a plain tensor attribute (a lifted constant) and a parameter, as they are."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("index", torch.tensor([2, 0, 1]))
        self.table = torch.arange(4.0)
        self.scale = torch.nn.Parameter(torch.tensor([0.5, 2.0]))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        picked = x[self.index]  # aten.index.Tensor(x, [index]): the buffer inside a list
        return picked * 2, self.index, self.table, self.scale


class MaskedTopK(torch.nn.Module):
    """A top-k over a data-dependent selection, k bounded by its size (GLM-5's indexer)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        chosen = x[:, x.sum(0) > 0]
        k = torch.sym_min(2, chosen.shape[1])
        return torch.topk(chosen, k, dim=1).values.sum(1)


@pytest.mark.parametrize("offs", [[3, 3, 7, 10], [0, 10, 10, 10], [2, 5, 6, 8]])
def test_the_grouped_matmul_equivalent_matches_the_librarys(offs: list[int]) -> None:
    """Empty groups, one group, rows past the last offset (left zero) alike."""
    torch.manual_seed(0)
    x, w = torch.randn(10, 8), torch.randn(4, 8, 16)
    offsets = torch.tensor(offs, dtype=torch.int32)
    expected = moe._grouped_mm_fallback(x, w, offsets)
    torch.testing.assert_close(grouped_mm_by_row(x, w, offsets), expected)


def test_a_custom_op_with_a_python_implementation_is_decomposed_before_import() -> None:
    torch.manual_seed(0)
    args = (torch.randn(10, 8), torch.tensor([2, 0, 1, 3, 3, 1, 0, 2, 2, 1]))
    program = export_program(GroupedExperts(), args, user_files=[HERE])
    targets = {str(n.target) for n in program.graph.nodes if n.op == "call_function"}
    assert not any("transformers" in t for t in targets), targets
    lowerer = ProgramLowerer(program, module_name="GroupedExperts", user_files=[HERE])
    torch_ir = lowerer.lower("torch")
    assert torch_ir.ok and "grouped_mm" not in torch_ir.ir
    result = verify_callable(GroupedExperts(), args, module_name="GroupedExperts",
                             user_files=[HERE])
    assert result.ok, result.message


def test_router_ops_lower_everywhere_and_match_eager() -> None:
    torch.manual_seed(0)
    args = (torch.randn(4, 6), torch.randn(4, 1))
    program = export_program(RouterOps(), args, user_files=[HERE])
    lowerer = ProgramLowerer(program, module_name="RouterOps", user_files=[HERE])
    raw = lowerer.lower("raw").ir
    assert "torch.aten.scatter.value %" in raw and "torch.aten.topk" in raw
    # Clamped to the dimension (unclamped, StableHLO's conversion allocates until it fails).
    writes = [ln for ln in raw.splitlines() if "torch.aten.slice_scatter" in ln]
    assert writes and not any(str(2**63 - 1) in ln for ln in writes), writes
    for target in ("linalg", "stablehlo"):
        res = lowerer.lower(target)
        assert res.ok, (target, [d.message for d in res.diagnostics])
    tosa = lowerer.lower("tosa")  # TOSA has no scatter-add: that one op, and no crash
    assert [d.op for d in tosa.diagnostics] == ["torch.aten.scatter_add"], tosa.diagnostics
    result = verify_callable(RouterOps(), args, module_name="RouterOps", user_files=[HERE])
    assert result.ok, result.message


def test_state_returned_as_it_is_keeps_its_type_and_matches_eager() -> None:
    """The tensor-list shim reroutes only list arguments of calls: a returned buffer made a
    `get_attr`, `main` declared that result `none`, and every backend failed."""
    args = (torch.randn(3, 2),)
    program = export_program(ReturnsItsState(), args, user_files=[HERE])
    lowerer = ProgramLowerer(program, module_name="ReturnsItsState", user_files=[HERE])
    assert "!torch.none" not in lowerer.lower("raw").ir
    for target in ("linalg", "tosa", "stablehlo"):
        res = lowerer.lower(target)
        assert res.ok, (target, [d.message for d in res.diagnostics])
    result = verify_callable(ReturnsItsState(), args, module_name="ReturnsItsState",
                             user_files=[HERE])
    assert result.ok, result.message


def test_sym_min_of_a_data_dependent_size_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch-mlir's importer stopped at `torch.sym_min` ("Unimplemented call_function"); as
    `prim::min.int` it imports, and each backend names what it cannot lower at its line.
    (Linalg's conversion of the data-dependent index segfaults: passes are guarded here as in
    a worker after such a crash, see test_crash_guard.py.)"""
    from torch_mlir_lens.worker.ir import crash_guard

    monkeypatch.setenv(crash_guard.GUARD_PASSES_ENV, "1")
    program = export_program(MaskedTopK(), (torch.randn(4, 6),), user_files=[HERE])
    lowerer = ProgramLowerer(program, module_name="MaskedTopK", user_files=[HERE])
    raw = lowerer.lower("raw")
    assert raw.ok and "torch.prim.min.int" in raw.ir, [d.message for d in raw.diagnostics]
    linalg = lowerer.lower("linalg")
    assert linalg.diagnostics and all(d.line for d in linalg.diagnostics), linalg.diagnostics
