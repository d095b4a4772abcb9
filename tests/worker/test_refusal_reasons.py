"""Each culprit says why its backend refuses it, in real lowerings (rules/refusals.py through
worker/culprits/reasons.py): the backend's own words, else a rule's that holds."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.export import Dim

from torch_mlir_lens.protocol.results import LensDiagnostic
from torch_mlir_lens.worker.lowering import ProgramLowerer, export_program


def _culprits(fn: nn.Module, args: tuple[torch.Tensor, ...], target: str,
              dynamic: object = None) -> list[LensDiagnostic]:
    program = export_program(fn, args, user_files=[__file__], dynamic_shapes=dynamic)
    lowerer = ProgramLowerer(program, module_name=type(fn).__name__, user_files=[__file__])
    result = lowerer.lower(target)
    assert not result.ok
    return [d for d in result.diagnostics if d.kind == "unsupported-op"]


class EmptyPass(nn.Module):
    def forward(self, q):
        return q[..., q.shape[-1]:].sum(-1) + q[..., 0]


class Antialiased(nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=True)


class DynamicCumsum(nn.Module):
    def forward(self, x):
        return (x.reshape(-1, 2, 4) * 2).cumsum(0)


class Erfinv64(nn.Module):
    def forward(self, x):
        return torch.special.erfinv(x)


def test_a_zero_sized_result_on_tosa() -> None:
    first = _culprits(EmptyPass(), (torch.randn(1, 4, 16, 8),), "tosa")[0]
    assert first.reason == "TOSA has no zero-sized tensors, and its result is " \
                           "`tensor<1x4x16x0xf32>`"
    assert first.message.endswith(f"cannot be lowered to TOSA ({first.reason})")


def test_antialias_on_every_backend() -> None:
    for target in ("linalg", "stablehlo"):
        (diag,) = _culprits(Antialiased(), (torch.randn(1, 2, 8, 8),), target)
        assert diag.reason == "`antialias=True`: torch-mlir has no antialiased resampling"
        assert diag.reason in diag.message


def test_a_dynamic_size_on_tosa_is_checked_before_it_is_said() -> None:
    (diag,) = _culprits(DynamicCumsum(), (torch.randn(4, 8),), "tosa", {"x": {0: Dim("b")}})
    assert diag.reason == "its result `tensor<?x2x4xf32>` has a dynamic size, which TOSA's " \
                          "conversion of it does not take"


def test_a_likely_reason_that_does_not_hold_is_not_said() -> None:
    """erfinv fails on TOSA whatever its dtype: f64 is not why, and nothing is made up."""
    (diag,) = _culprits(Erfinv64(), (torch.rand(4, dtype=torch.float64),), "tosa")
    assert diag.reason is None and "64-bit" not in diag.message


class ScatterAdd(nn.Module):  # a graph network's sum of messages per node
    def forward(self, x, index):
        return torch.zeros(3, 4).scatter_add(0, index[:, None].expand(6, 4), x)


class ScatterMax(nn.Module):  # its max-aggregation
    def forward(self, x, index):
        return torch.zeros(3, 4).scatter_reduce(0, index[:, None].expand(6, 4), x, "amax",
                                                include_self=False)


class IndexPutAdd(nn.Module):
    def forward(self, x, index):
        return torch.zeros(3, 4).index_put((index,), x, accumulate=True)


class CheckedCount(nn.Module):
    def forward(self, x):
        n = (x > 0).sum().item()
        torch._check(n <= 24)
        return x[: n // 8] * 2


class EdgeMask(nn.Module):  # drops self-loops of a graph's edge list
    def forward(self, x, edge_index):
        edges = edge_index[:, edge_index[0] != edge_index[1]]
        return x[edges[0]].sum(0)


_NODES = (torch.randn(6, 4), torch.tensor([0, 1, 1, 2, 2, 2]))


def test_each_scatter_that_adds_or_reduces_says_why_on_tosa() -> None:
    for module, how in ((ScatterAdd(), "adds into its target"),
                        (ScatterMax(), 'accumulates (`reduce="amax"`)'),
                        (IndexPutAdd(), "accumulates (`accumulate=True`)")):
        (diag,) = _culprits(module, _NODES, "tosa")
        assert diag.reason is not None, diag.message
        assert diag.reason.startswith(f"it {how}: TOSA's one scatter, `tosa.scatter`")
        assert diag.reason in diag.message


def test_scatter_reduce_says_why_on_stablehlo() -> None:
    (diag,) = _culprits(ScatterMax(), _NODES, "stablehlo")
    assert diag.reason == ('it reduces (`reduce="amax"`): torch-mlir\'s StableHLO conversion '
                           'has `scatter` and `scatter_add` only, not `aten.scatter_reduce.two`')


def test_runtime_asserts_and_scalars_say_why() -> None:
    args = (torch.randn(6, 4),)
    stablehlo = _culprits(CheckedCount(), args, "stablehlo")
    assert stablehlo and all(d.reason and "torch-mlir's StableHLO pipeline has no conversion"
                             in d.reason for d in stablehlo)
    # torch.export's own check is named as the op it is, not `torch.default`
    assert all(d.cause and d.cause.startswith("`aten._assert_scalar`") for d in stablehlo)
    tosa = _culprits(CheckedCount(), args, "tosa")
    assert tosa and all(d.reason and d.reason.startswith("TOSA works on tensors only")
                        for d in tosa)


def test_a_proven_cause_beats_a_verifiers_complaint_and_indexing_is_named_so() -> None:
    (first, *_rest) = _culprits(EdgeMask(), (torch.randn(6, 4),
                                             torch.tensor([[0, 1, 1, 2], [1, 2, 0, 0]])), "tosa")
    assert first.cause is not None and first.cause.startswith("`Tensor[...]`")
    assert "Tensor.Tensor" not in first.message and "Tensor.int" not in first.message
    assert first.reason == ("its result `tensor<2x?xsi64>` has a dynamic size, which TOSA's "
                            "conversion of it does not take")


class GraphConv(nn.Module):
    """torch_geometric's GCNConv, reduced: self-loops removed then added back, each node's
    degree from a scatter_add, messages gathered and summed."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, edge_index):
        edge_index = edge_index[:, edge_index[0] != edge_index[1]]
        loops = torch.arange(x.shape[0]).repeat(2, 1)
        edge_index = torch.cat([edge_index, loops], dim=1)
        src, dst = edge_index[0], edge_index[1]
        degree = torch.zeros(x.shape[0]).scatter_add(0, dst, torch.ones(dst.shape[0]))
        norm = degree.pow(-0.5)[src] * degree.pow(-0.5)[dst]
        messages = self.lin(x).index_select(0, src) * norm[:, None]
        return torch.zeros_like(x).index_add(0, dst, messages)


def test_a_graph_convolution_on_tosa_names_its_dynamic_size_not_only_a_verifier() -> None:
    edges = torch.tensor([[0, 1, 1, 2, 3, 3], [1, 0, 2, 2, 0, 1]])
    found = _culprits(GraphConv(), (torch.randn(4, 4), edges), "tosa")
    reasons = [d.reason for d in found if d.reason]
    assert any("has a dynamic size" in r for r in reasons), reasons
    for reason in reasons:  # a verifier's words alone would mislead
        if "operand and result must have the same size" in reason:
            assert "has a dynamic size, and TOSA's conversion fails: " in reason
