"""How a rejected op's Python call is worded: an alias only where torch's docs say so."""

from __future__ import annotations

import torch
from tests.worker.models import library_calls
from torch import nn

from torch_mlir_lens.worker.culprits import fx_origins
from torch_mlir_lens.worker.ir import op_aliases
from torch_mlir_lens.worker.lowering import export_program


class OneOpCalls(nn.Module):
    """Each line's call becomes one other aten op in torch.export."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = torch.special.erfinv(x)  # documented alias of torch.erfinv
        b = x.reshape(-1)  # one aten.view, same signature: still a decomposition
        c = torch.absolute(x)  # "Alias for torch.abs"
        d = x.clip(0, 1)  # "Alias for Tensor.clamp"
        e = torch.special.psi(x)  # psi and digamma both alias torch.special.digamma
        f = torch.swapaxes(x, 0, 1)  # an alias of transpose, made a permute by torch.export
        return a, b, c, d, e, f


def test_one_op_made_of_a_call_is_an_alias_only_when_torch_documents_it() -> None:
    program = export_program(OneOpCalls(), (torch.rand(3, 4),), user_files={__file__})
    calls = fx_origins.FxCalls(program)
    found = {c.call: (c.op, c.how) for chain, made in calls.by_chain.items()
             if chain and chain[0][0] == __file__ for c in made}
    assert found == {
        "torch.special.erfinv": ("aten.erfinv", fx_origins.ALIAS),
        "Tensor.reshape": ("aten.view", fx_origins.DECOMPOSED),
        "torch.absolute": ("aten.abs", fx_origins.ALIAS),
        "Tensor.clip": ("aten.clamp", fx_origins.ALIAS),
        "torch.special.psi": ("aten.digamma", fx_origins.ALIAS),
        "torch.swapaxes": ("aten.permute", fx_origins.DECOMPOSED),
    }


def test_documented_names_map_to_aten_ops() -> None:
    assert op_aliases.aten_name("torch.special.erfinv") == "special_erfinv"
    assert op_aliases.aten_name("Tensor.clamp_") == "clamp_"
    assert op_aliases.aten_name("torch.linalg.det") == "linalg_det"
    assert op_aliases.are_aliases("aten.linalg_det.default", "aten.det.default")
    assert not op_aliases.are_aliases("aten.flatten.using_ints", "aten.view.default")


class CallsALibrary(nn.Module):
    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return library_calls.builtins_and_python_functions(x, w)


def test_calls_in_a_library_helper_get_their_documented_names() -> None:
    """The helper's frames are not in the stack traces: the names come from torch_fn alone."""
    program = export_program(CallsALibrary(), (torch.rand(1, 2, 4, 4), torch.rand(4, 4)),
                             user_files={__file__})
    calls = {c.call for made in fx_origins.FxCalls(program).by_chain.values() for c in made}
    assert {"F.linear", "torch.special.erfinv", "F.scaled_dot_product_attention",
            "F.interpolate"} <= calls, calls
    assert not any(c.startswith(("torch.special_", "torch.linear", "torch.interpolate"))
                   for c in calls), calls
