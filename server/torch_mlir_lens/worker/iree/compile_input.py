"""The Linalg IR as IREE's compiler reads it: one file, weights in it or named outside it.

    write_input(linalg, folder, weightless=...)   → CompileInput (the file, the parameters)

- Locations stay (IREE carries them through to its errors and its dispatch regions), except
  the entry function's own: IREE wraps `main` in its ABI function and inlines it, appending
  the function's location to every op's call stack (`linear.py:134 at model.py:24 at
  model.py:23`, line 23 being only where `main` starts). Each top-level function is rebuilt
  with an unknown location, so an op's frames are its own.
- A program with weights goes as MLIR bytecode (its `dense_resource` blobs binary, read by
  IREE as they are: no text round trip of a 500 MB model).
- A program built without its weights (`worker/loading/construct.py`: big models) has
  resources without data, which IREE refuses ("resource does not exist"). Each such weight
  becomes a named parameter (`util.global` = `#flow.parameter.named<"model"::KEY>`, read with
  `util.global.load`), so the module compiles with its weights kept outside it, in an IREE
  parameter archive (.irpa) supplied at run time; `CompileInput.parameters` says what was
  left out.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from typing import Any

from torch_mlir import ir

from torch_mlir_lens.system.atomic_write import write_atomically
from torch_mlir_lens.system.reading import size_text

PARAMETER_SCOPE = "model"  # the scope of the parameters (`--parameters=model=FILE.irpa`)

_RESOURCE_ENTRY = re.compile(r'^\s*([A-Za-z_][\w.$-]*|"(?:[^"\\]|\\.)*")\s*:\s*"0x')
_WEIGHT_CONSTANT = re.compile(
    r"arith\.constant dense_resource<([A-Za-z_][\w.$-]*|\"(?:[^\"\\]|\\.)*\")> : tensor<")
_ELEMENT_BYTES = {"f64": 8, "i64": 8, "f32": 4, "i32": 4, "f16": 2, "bf16": 2, "i16": 2,
                  "i8": 1, "i1": 1, "ui8": 1, "si8": 1, "complex<f32>": 8,
                  "complex<f64>": 16}


@dataclass(frozen=True)
class Parameter:
    """A weight left outside the module: its name in the parameter archive and its type."""

    name: str
    type: str  # `tensor<32x16xf32>`
    bytes: int | None  # None when the element type's size is not known here

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "bytes": self.bytes}


@dataclass
class CompileInput:
    """The file iree-compile reads, and the weights it names as parameters instead of
    holding (empty when every weight is in it)."""

    path: str
    parameters: list[Parameter] = field(default_factory=list)

    def left_out(self) -> str | None:
        """What was left out of the module, in words; None when nothing was."""
        if not self.parameters:
            return None
        sizes = [p.bytes for p in self.parameters if p.bytes is not None]
        total = size_text(sum(sizes)) if sizes else "size unknown"
        return (f"{len(self.parameters)} weights ({total}) left out of the module as named "
                f"parameters of scope '{PARAMETER_SCOPE}' (built without its weights): "
                f"supply them in an IREE parameter archive (.irpa) at run time")


def _copy(linalg: Any) -> ir.Module:
    """A private copy of the lowered module (bytecode round trip: exact, weights binary)."""
    buf = io.BytesIO()
    linalg.operation.write_bytecode(buf)
    return ir.Module.parse(buf.getvalue(), context=linalg.context)


def forget_entry_locations(module: ir.Module) -> None:
    """Rebuild each top-level `func.func` with an unknown location (its body moved, not
    copied), so IREE's inlining of the entry adds no frame to the ops inside."""
    with module.context:
        funcs = [op.operation for op in module.body.operations
                 if op.operation.name == "func.func"]
        for old in funcs:
            attributes = {}
            for i in range(len(old.attributes)):
                named = old.attributes[i]
                attributes[named.name] = named.attr
            new = ir.Operation.create("func.func", results=[], operands=[],
                                      attributes=attributes, regions=len(old.regions),
                                      loc=ir.Location.unknown(), ip=ir.InsertionPoint(old))
            for index, region in enumerate(old.regions):
                for block in list(region.blocks):
                    block.append_to(new.regions[index])
            old.erase()


def name_entry_main(module: ir.Module) -> None:
    """Name the module's one public function `main` (torch-mlir's FX importer does; the ONNX
    importer names it after the graph): the compiled module's entry is `main` for every
    front end, so the runtime, exports and their snippets call one name."""
    with module.context:
        funcs = [op.operation for op in module.body.operations
                 if op.operation.name == "func.func"]
        names = {ir.StringAttr(f.attributes["sym_name"]).value for f in funcs}
        public = [f for f in funcs if "sym_visibility" not in f.attributes
                  or ir.StringAttr(f.attributes["sym_visibility"]).value == "public"]
        if len(public) == 1 and "main" not in names:
            public[0].attributes["sym_name"] = ir.StringAttr.get("main")


def write_input(linalg: Any, folder: str, *, weightless: bool) -> CompileInput:
    """Write the lowered Linalg module for iree-compile into `folder` (the lowerer's own
    module is not changed); `weightless`: the program was built without its weights."""
    module = _copy(linalg)
    forget_entry_locations(module)
    name_entry_main(module)
    if not weightless:
        path = os.path.join(folder, "input.mlirbc")
        buf = io.BytesIO()
        module.operation.write_bytecode(buf)
        write_atomically(path, buf.getvalue())
        return CompileInput(path)
    text, parameters = with_parameters(module.operation.get_asm(enable_debug_info=True))
    path = os.path.join(folder, "input.mlir")
    write_atomically(path, text.encode())
    return CompileInput(path, parameters)


def _type_at(text: str, start: int) -> int:
    """The end of the `tensor<...>` type starting at `start` (its `<`s balanced)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "<":
            depth += 1
        elif text[i] == ">":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _bytes_of(tensor_type: str) -> int | None:
    inner = tensor_type[len("tensor<"):-1]
    *dims, element = inner.split("x") if not inner.startswith("complex") else ["", inner]
    if any(not d.isdigit() for d in dims if d) or element not in _ELEMENT_BYTES:
        return None
    count = 1
    for d in dims:
        if d:
            count *= int(d)
    return count * _ELEMENT_BYTES[element]


def with_parameters(asm: str) -> tuple[str, list[Parameter]]:
    """Printed IR whose weight constants without data become loads of named parameters,
    declared at the top of the module; the parameters, in order."""
    start = asm.find("\n{-#")
    body, tail = (asm[:start], asm[start:]) if start >= 0 else (asm, "")
    with_data = {m.group(1) for line in tail.splitlines()
                 if (m := _RESOURCE_ENTRY.match(line)) is not None}
    parameters: list[Parameter] = []
    names: dict[tuple[str, str], str] = {}
    out: list[str] = []
    pos = 0
    for m in _WEIGHT_CONSTANT.finditer(body):
        key = m.group(1)
        if key in with_data:
            continue
        type_start = m.end() - len("tensor<")
        type_end = _type_at(body, type_start)
        tensor_type = body[type_start:type_end]
        name = key.strip('"')
        symbol = names.get((name, tensor_type))
        if symbol is None:
            symbol = f"__param_{len(parameters)}"
            names[(name, tensor_type)] = symbol
            parameters.append(Parameter(name, tensor_type, _bytes_of(tensor_type)))
        out.append(body[pos:m.start()])
        out.append(f"util.global.load @{symbol} : {tensor_type}")
        pos = type_end
    out.append(body[pos:])
    text = "".join(out)
    if parameters:
        declarations = "".join(
            f'  util.global private @{names[(p.name, p.type)]} = #flow.parameter.named<'
            f'"{PARAMETER_SCOPE}"::"{p.name}"> : {p.type}\n' for p in parameters)
        text = re.sub(r"^(module[^\n]*\{\n)", lambda mm: mm.group(1) + declarations, text,
                      count=1, flags=re.MULTILINE)
    return text + tail, parameters


__all__ = ["PARAMETER_SCOPE", "CompileInput", "Parameter", "forget_entry_locations",
           "with_parameters", "write_input"]
