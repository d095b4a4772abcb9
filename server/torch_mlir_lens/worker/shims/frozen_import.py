"""Import an exported program into MLIR with every lifted tensor frozen in as a literal.

torch-mlir 20261001's `FxImporter.import_frozen_program` looks every lifted buffer up in
`ExportedProgram.state_dict`, but `torch.export` keeps the buffers registered with
`persistent=False` in `ExportedProgram.constants` (llvm/torch-mlir#4744; the fix, #4745, is not
released). Every RoPE LLM (`rotary_emb.inv_freq`) and the BERT family (`position_ids`) has one,
so the importer fails with "Could not find state mapping for buffer".

`import_frozen` hands the importer a view of the program whose state_dict also holds those
buffers: values frozen in exactly as persistent buffers are, no dangling `main` arguments.
When a pinned torch-mlir has the fix, `_StateView` can go; `missing_state` stays, as it is
what names a value that is really missing.

Before importing, every lifted input is checked to have a value; a missing one raises a
LensError naming it (`lm.model.rotary_emb.inv_freq`), the class that owns it, the line that
registered it where it can be found, at the user's line whose code reaches it. A lifted value
used inside a tensor list (Swin's relative-position index) is routed through an attribute
first: list_constants.py, another shim of the same importer.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections import deque
from dataclasses import dataclass
from typing import Any

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.worker.ir.locations import UserFiles
from torch_mlir_lens.worker.shims.list_constants import attributes_for_list_uses

_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')
_KINDS = {"PARAMETER": "parameter", "BUFFER": "buffer", "CONSTANT_TENSOR": "constant"}


class _StateView:
    """The program as the importer reads it, with non-persistent buffers in its state_dict.

    Attribute reads other than `state_dict` go to the program itself (the importer mutates
    its graph in place, as it would without the view).
    """

    def __init__(self, program: Any) -> None:
        self._program = program
        state = dict(program.state_dict)
        constants = getattr(program, "constants", None) or {}
        for name in program.graph_signature.non_persistent_buffers:
            if name not in state and name in constants:
                state[name] = constants[name]
        self.state_dict = state

    def __getattr__(self, name: str) -> Any:
        return getattr(self._program, name)


@dataclass
class MissingState:
    """A lifted input of the graph with no value to freeze in."""

    kind: str  # "parameter" | "buffer" | "constant"
    name: str  # qualified name, e.g. "lm.model.rotary_emb.inv_freq"
    placeholder: str  # the graph's input node


def missing_state(program: Any) -> list[MissingState]:
    """Lifted parameters, buffers and tensor constants the importer would find no value for."""
    view = program if isinstance(program, _StateView) else _StateView(program)
    constants = getattr(program, "constants", None) or {}
    missing: list[MissingState] = []
    for spec in program.graph_signature.input_specs:
        kind = _KINDS.get(getattr(spec.kind, "name", ""))
        target = getattr(spec, "target", None)
        if kind is None or target is None:
            continue
        source = constants if kind == "constant" else view.state_dict
        if target not in source:
            missing.append(MissingState(kind, target, spec.arg.name))
    return missing


def import_frozen(importer: Any, program: Any, *, users: UserFiles,
                  func_name: str = "main") -> None:
    """`importer.import_frozen_program(program)`, non-persistent buffers included.

    Raises LensError(export-error) naming the first lifted value that has none.
    """
    view = _StateView(program)
    missing = missing_state(view)
    if missing:
        raise missing_state_error(program, missing[0], users)
    constants = getattr(program, "constants", None) or {}
    attributes_for_list_uses(program, {**constants, **view.state_dict})
    importer.import_frozen_program(view, func_name=func_name)


# --- naming what is missing ---------------------------------------------------------------------


def missing_state_error(program: Any, missing: MissingState, users: UserFiles) -> LensError:
    """A located, self-explaining error for a lifted value with no value."""
    owner_path, _, attr = missing.name.rpartition(".")
    owner = _owner_class(program, owner_path)
    where = ""
    if owner is not None:
        registered = _registration_line(owner, attr)
        where = f" of {owner.__name__}"
        if registered is not None:
            where += f" (registered at {registered[0]}:{registered[1]})"
    file, line = _user_line_reaching(program, missing.placeholder, users)
    return LensError(
        ErrorKind.EXPORT_ERROR,
        f"torch-mlir cannot import the program: no value for {missing.kind} "
        f"'{missing.name}'{where}",
        file=file, line=line)


def _owner_class(program: Any, owner_path: str) -> type | None:
    """The class of the submodule at `owner_path`, from the graph's module stacks."""
    for node in program.graph.nodes:
        stack = node.meta.get("nn_module_stack") or {}
        for path, type_name in stack.values():
            if path == owner_path:
                return _class_named(type_name)
    return None


def _class_named(qualified: Any) -> type | None:
    if isinstance(qualified, type):
        return qualified
    module_name, _, name = str(qualified).rpartition(".")
    found = getattr(sys.modules.get(module_name), name, None)
    return found if isinstance(found, type) else None


def _registration_line(cls: type, attr: str) -> tuple[str, int] | None:
    """Where `cls` (or a base) registers `attr`: a `register_buffer("attr", ...)`,
    `register_parameter("attr", ...)` or `self.attr = ...` line in its source."""
    pattern = re.compile(
        rf"""register_(?:buffer|parameter)\(\s*["']{re.escape(attr)}["']"""
        rf"""|self\.{re.escape(attr)}\s*(?::[^=]+)?=[^=]""")
    for klass in cls.__mro__:
        try:
            lines, first = inspect.getsourcelines(klass)
            file = inspect.getsourcefile(klass)
        except (OSError, TypeError):
            continue
        for offset, text in enumerate(lines):
            if file and pattern.search(text):
                return file, first + offset
    return None


def _user_line_reaching(program: Any, placeholder: str,
                        users: UserFiles) -> tuple[str | None, int | None]:
    """The innermost user frame of the first node (breadth-first from the input) that has one."""
    start = next((n for n in program.graph.nodes if n.name == placeholder), None)
    queue = deque([start] if start is not None else [])
    seen: set[Any] = set()
    while queue:
        node = queue.popleft()
        if node in seen:
            continue
        seen.add(node)
        frames = [(f, int(n)) for f, n in _FILE_LINE.findall(node.meta.get("stack_trace") or "")
                  if f in users]
        if frames:
            return frames[-1]
        queue.extend(node.users)
    return None, None
