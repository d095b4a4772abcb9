"""Weights into MLIR without Python lists, or without values at all.

torch-mlir's FX importer turns every parameter, buffer and lifted constant into a Python list
(`np.array(tensor.tolist())`) before it becomes a `dense_resource` blob: for a 124 M-parameter
model that is most of the import time and several GB of memory. `LiteralHooks` (an
`FxImporterHooks`, passed as `FxImporter(hooks=...)`) builds the same attribute instead:

- a tensor with values: a `dense_resource` blob made straight from the tensor's memory (no copy
  for parameters: the blob keeps the tensor alive; buffers and constants are copied once, as
  they may change in place), same key, type and bytes as torch-mlir's own;
- a tensor without values (fake or meta: the module was built without its weights, see
  `construct.py`): a `dense_resource` of the right type and shape that has no blob. The IR
  parses, lowers and prints like the real one; its weights are simply absent.

The hook sees every tensor the importer freezes into the graph, whatever its origin
(`ExportedProgram.state_dict` parameters and buffers, `ExportedProgram.constants`: lifted
tensor constants and non-persistent buffers). One-element tensors with values keep
torch-mlir's own path (a splat `dense<...>`, cheap). Dtypes numpy cannot hold are viewed as
integers of the same width, so the bytes are torch's own.

`mark_elided(asm)` rewrites the printed IR of the elided view so that every resource whose
data was not printed reads `dense_resource<__elided__>` (MLIR's own spelling for elided data):
IR copied from the view then says plainly that it has no weights, instead of naming a blob
that is not there.
"""

from __future__ import annotations

import re
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch_mlir import ir
from torch_mlir.extras.fx_importer import FxImporterHooks, create_mlir_tensor_type

ELIDED_KEY = "__elided__"

# numpy has no such dtypes: hand MLIR the bytes through an integer view of the same width.
_SAME_WIDTH_INT = {
    torch.bfloat16: torch.int16,
    torch.float8_e5m2: torch.uint8,
    torch.float8_e4m3fn: torch.uint8,
    torch.float8_e5m2fnuz: torch.uint8,
    torch.float8_e4m3fnuz: torch.uint8,
}
_NUMPY_DTYPES = {
    torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
    torch.float32, torch.float64, torch.complex64, torch.complex128, torch.bool,
}


def has_values(tensor: torch.Tensor) -> bool:
    """False for tensors that only describe a shape (fake or meta)."""
    return not (isinstance(tensor, FakeTensor) or tensor.is_meta)


def blob_key(tensor: torch.Tensor) -> str:
    """The resource key torch-mlir gives a tensor (`torch_tensor_32_16_torch.float32`)."""
    shape = "_".join(str(d) for d in tensor.shape)
    return f"torch_tensor_{shape}_{tensor.dtype}"


def _host_array(tensor: torch.Tensor) -> Any:
    """A numpy array sharing the tensor's (contiguous, CPU) memory, or None if impossible."""
    t = tensor.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if not t.is_contiguous():
        t = t.contiguous()
    if t.dtype in _NUMPY_DTYPES:
        return t.numpy()
    view = _SAME_WIDTH_INT.get(t.dtype)
    return t.view(view).numpy() if view is not None else None


class LiteralHooks(FxImporterHooks):
    """FX importer hooks: weights from memory, or resources without data for fake tensors.

    `stats` counts what was imported: {"from_memory", "without_values", "bytes"}.
    """

    def __init__(self) -> None:
        # id(tensor) → (tensor, attribute): a tensor used twice (tied weights) is one resource;
        # keeping the tensor here keeps its id from being reused.
        self._attrs: dict[int, tuple[torch.Tensor, ir.Attribute]] = {}
        self.stats: dict[str, int] = {"from_memory": 0, "without_values": 0, "bytes": 0}

    def resolve_literal(self, gni: Any, literal: Any, info: Any) -> Any:
        """The `torch.vtensor.literal` of a tensor, or None to let torch-mlir do it."""
        if not isinstance(literal, torch.Tensor) or type(literal) not in (
                torch.Tensor, torch.nn.Parameter, torch.nn.Buffer, FakeTensor):
            return None  # subclasses (quantized, functional wrappers): torch-mlir's own path
        valued = has_values(literal)
        if valued and literal.numel() <= 1:
            return None  # a splat dense<...> (torch-mlir's choice for one element)
        attr = self._attribute(literal, valued)
        if attr is None:
            return None
        vtensor_type = gni._cc.tensor_to_vtensor_type(literal)
        return ir.Operation.create(name="torch.vtensor.literal", results=[vtensor_type],
                                   attributes={"value": attr}).result

    def attribute(self, tensor: torch.Tensor) -> ir.Attribute | None:
        """The `dense_resource` of `tensor` (None for one element with a value: a splat is
        torch-mlir's choice then, and for what no blob can hold). Needs an active context."""
        valued = has_values(tensor)
        return None if valued and tensor.numel() <= 1 else self._attribute(tensor, valued)

    def _attribute(self, tensor: torch.Tensor, valued: bool) -> ir.Attribute | None:
        known = self._attrs.get(id(tensor))
        if known is not None:
            return known[1]
        tensor_type = create_mlir_tensor_type(tensor)
        attr: ir.Attribute
        if valued:
            array = _host_array(tensor)
            if array is None or array.size == 0:
                return None
            if not isinstance(tensor, torch.nn.Parameter):
                # Buffers and constants may change in place (a forward that updates a
                # buffer, run eagerly by verify): the IR keeps the values it was made with.
                # Parameters are the bulk, and nothing writes them: shared, not copied.
                array = array.copy()
            attr = ir.DenseResourceElementsAttr.get_from_buffer(array, blob_key(tensor),
                                                                tensor_type)
            self.stats["from_memory"] += 1
            self.stats["bytes"] += int(array.nbytes)
        else:
            # A resource with no blob: parsing declares the key (made unique by MLIR if taken).
            attr = ir.Attribute.parse(f"dense_resource<{blob_key(tensor)}> : {tensor_type}",
                                      context=tensor_type.context)
            self.stats["without_values"] += 1
        self._attrs[id(tensor)] = (tensor, attr)
        return attr


# ---------------------------------------------------------------------------------------------
# Printing

_KEY = r'(?:[A-Za-z_][\w.$-]*|"(?:[^"\\]|\\.)*")'
_RESOURCE_USE = re.compile(r"dense_resource<(" + _KEY + r")>")
_RESOURCE_ENTRY = re.compile(r"^\s*(" + _KEY + r')\s*:\s*"0x')


def mark_elided(asm: str) -> str:
    """`dense_resource<KEY>` → `dense_resource<__elided__>` for each KEY whose data the printed
    text does not hold (elided by the printer, or never there: a module built without values)."""
    start = asm.find("\n{-#")
    printed: set[str] = set()
    if start >= 0:
        for line in asm[start:].splitlines():
            m = _RESOURCE_ENTRY.match(line)
            if m:
                printed.add(m.group(1))
    body, tail = (asm[:start], asm[start:]) if start >= 0 else (asm, "")

    def swap(m: re.Match[str]) -> str:
        return m.group(0) if m.group(1) in printed else f"dense_resource<{ELIDED_KEY}>"

    return _RESOURCE_USE.sub(swap, body) + tail


__all__ = ["ELIDED_KEY", "LiteralHooks", "blob_key", "has_values", "mark_elided"]
