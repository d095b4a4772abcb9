"""A group's representative block exported once, as a function of its inputs and weights.

`BlockFunction` is a small module whose forward takes the block's tensor inputs, then its
weights (in the order the survey found them read), and calls the block with those weights in
place of its own (`torch.func.functional_call`); the block itself is not registered, so the
export lifts no state: every weight is an argument. torch.export and torch-mlir's
decompositions run through the product's one export path (`lowering.export_program`), so the
block's ops carry its source lines as inline lowering gives them.

The exported function is checked against the recorded call before it is used: no input or
weight written in place, as many results as recorded, each of the recorded shape and dtype.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils import _pytree as pytree

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.worker.blocks.record import BlockCall, attribute
from torch_mlir_lens.worker.ir.locations import UserFiles
from torch_mlir_lens.worker.loading.kept_state import state_kept


class BlockFunction(torch.nn.Module):
    """`forward(*tensor_inputs, *weights)` → the block's results, as the recorded call."""

    def __init__(self, call: BlockCall) -> None:
        super().__init__()
        object.__setattr__(self, "_call", call)  # not a submodule: no state to lift

    def forward(self, *flat: Any) -> Any:
        call: BlockCall = self._call  # type: ignore[assignment]
        count = len(call.tensor_at)
        leaves = list(call.leaves)
        for position, tensor in zip(call.tensor_at, flat[:count], strict=True):
            leaves[position] = tensor
        args, kwargs = pytree.tree_unflatten(leaves, call.in_spec)
        weights = dict(zip(call.weights, flat[count:], strict=True))
        out = torch.func.functional_call(call.module, weights, tuple(args), dict(kwargs),
                                         tie_weights=False, strict=False)
        out_leaves, spec = pytree.tree_flatten(out)
        if str(spec) != str(call.out_spec) or len(out_leaves) != len(call.outputs):
            raise LensError(ErrorKind.EXPORT_ERROR,
                            "the block returned another structure than when surveyed")
        results: list[Any] = [None] * len(call.out_metas)
        for leaf, kind in zip(out_leaves, call.outputs, strict=True):
            if kind.kind == "result":
                results[kind.index] = leaf
        return tuple(results)


def example_inputs(call: BlockCall) -> tuple[Any, ...]:
    """The tensors the block function is exported with: its inputs, then its weights.

    A block built without weights is exported with the survey's fake inputs (one fake mode
    with its weights); a block with real weights with real zeros of the inputs' types.
    """
    weights = [attribute(call.module, name) for name in call.weights]
    recorded = [call.leaves[p] for p in call.tensor_at]
    if any(isinstance(w, FakeTensor) for w in weights) or (not weights and all(
            isinstance(t, FakeTensor) for t in recorded)):
        return (*recorded, *weights)
    zeros = [torch.empty_strided(m.shape, m.stride, dtype=m.dtype).zero_()
             for m in call.in_metas]
    return (*zeros, *weights)



def export_block(call: BlockCall, users: UserFiles) -> Any:
    """The block of `call` exported (torch-mlir's decompositions applied) as a function of
    its tensor inputs and weights; LensError when it cannot be, or does not match the call."""
    from torch_mlir_lens.worker.stages.torch_export import export_program, register_user_frames

    register_user_frames(call.module, call.module, users)
    with state_kept(call.module):  # the block is not the export's root: nothing else puts it back
        program = export_program(BlockFunction(call), example_inputs(call), {},
                                 user_files=users.given)
    check_program(program, call)
    return program


def check_program(program: Any, call: BlockCall) -> None:
    """LensError unless the exported function is what the recorded call computes."""
    signature = program.graph_signature
    if getattr(signature, "user_inputs_to_mutate", None) or getattr(
            signature, "buffers_to_mutate", None):
        raise LensError(ErrorKind.EXPORT_ERROR, "the block writes to its inputs in place")
    outputs = [n for n in program.graph.nodes if n.op == "output"]
    values = pytree.tree_leaves(outputs[0].args[0]) if outputs else []
    metas = [v.meta.get("val") for v in values if isinstance(v, torch.fx.Node)]
    if len(metas) != len(call.out_metas) or any(
            not isinstance(m, torch.Tensor) or tuple(m.shape) != r.shape or m.dtype != r.dtype
            for m, r in zip(metas, call.out_metas, strict=False)):
        raise LensError(ErrorKind.EXPORT_ERROR,
                        "the exported block's results differ from the surveyed call's")


__all__ = ["BlockFunction", "check_program", "example_inputs", "export_block"]
