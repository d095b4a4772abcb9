"""Why torch.export refused a line, in words, with the values involved.

torch.export says "Could not guard on data-dependent expression Eq(u0, 1)" for an `if` on a
buffer, an `assert` on a time grid and a size computed by `nonzero` alike. The line that did it
(where the error was raised, in the user's code or a library's) and what that line reads say
which it was:

- a branch or check on a tensor's value (`if`, `while`, `assert`, `and` / `or` / `not`,
  `bool(...)`): "a tensor converted to a Python bool"; when the tensor is a buffer, parameter
  or tensor attribute of the module (`if self.initted:`), named with its value:
  "branches on the value of buffer `vq.initted` (True)";
- a tensor converted to a Python number (`.item()`, `.tolist()`, `int(...)`, `float(...)`);
- a size that depends on the data (`nonzero`, `unique`, `masked_select`, a boolean mask).

    reason_of(exc, module, is_code)   → Reason (the line, its code, the words) or None
    words_for(code)                   → the words for a refused line's code alone
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from torch_mlir_lens.system.reading import source_line

_DATA_DEPENDENT = re.compile(r"data-dependent|GuardOnDataDependentSymNode|"
                             r"DataDependentOutputException|unbacked", re.IGNORECASE)
_BRANCH = re.compile(r"^\s*(if|elif|while|assert)\b|\b(and|or|not)\b|\bbool\(")
_NUMBER = re.compile(r"\.(item|tolist)\(\)|\b(int|float)\(")
_DATA_SIZED = re.compile(r"\b(nonzero|unique|unique_consecutive|masked_select|argwhere|"
                         r"bincount|repeat_interleave)\b")
_SELF_ATTR = re.compile(r"\bself((?:\.[A-Za-z_]\w*)+)")
MAX_VALUE_ELEMENTS = 8


@dataclass
class Reason:
    """What the refused line does, in words."""

    file: str
    line: int
    code: str  # the line's code, stripped
    words: str  # "branches on the value of buffer `vq.initted` (True)"
    value_shown: bool = False  # the words carry the value read
    tensor: str | None = None  # the module's one-element tensor it reads: what a pin fixes


def _frames(exc: BaseException) -> list[types.FrameType]:
    """The traceback's frames, outermost first, along the chain of causes (first raised
    first)."""
    chain: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    frames: list[types.FrameType] = []
    for e in reversed(chain):
        tb = e.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
    return frames


def _innermost_code_frame(exc: BaseException,
                          is_code: Callable[[str], bool]) -> types.FrameType | None:
    """The innermost frame of the user's or a library's code (`is_code`): the line that made
    torch fail."""
    inner = None
    for frame in _frames(exc):
        if is_code(frame.f_code.co_filename):
            inner = frame
    return inner


def _value(tensor: torch.Tensor) -> str | None:
    """A small tensor's values, printed as Python prints them; None without values."""
    from torch._subclasses.fake_tensor import FakeTensor

    if isinstance(tensor, FakeTensor) or tensor.is_meta or tensor.numel() > MAX_VALUE_ELEMENTS:
        return None
    try:
        values = tensor.detach().cpu().tolist()
    except Exception:  # a tensor subclass without values
        return None
    return str(values)


def _qualified(module: Any, tensor: torch.Tensor) -> tuple[str, str] | None:
    """(kind, name) of `tensor` in `module`: ("buffer", "vq.initted"), ("parameter", ...),
    ("tensor attribute", ...), found by identity; None when the module does not hold it."""
    if not isinstance(module, torch.nn.Module):
        return None
    for name, value in module.named_buffers():
        if value is tensor:
            return "buffer", name
    for name, value in module.named_parameters():
        if value is tensor:
            return "parameter", name
    for prefix, sub in module.named_modules():
        for name, value in vars(sub).items():
            if value is tensor:
                return "tensor attribute", f"{prefix}.{name}" if prefix else name
    return None


def _attribute_words(frame: types.FrameType, code: str,
                     module: Any) -> tuple[str | None, str | None]:
    """("the value of buffer `vq.initted` (True)", "vq.initted") for a `self.<attr>` of
    the line that is a tensor of the module, else (None, None); the name only for a
    one-element tensor the module holds (what a pin can fix)."""
    owner = frame.f_locals.get("self")
    if owner is None:
        return None, None
    for match in _SELF_ATTR.finditer(code):
        value: Any = owner
        try:
            for part in match.group(1).lstrip(".").split("."):
                value = getattr(value, part)
        except Exception:  # a property that fails outside the trace
            continue
        if not isinstance(value, torch.Tensor):
            continue
        found = _qualified(module, value)
        kind, name = found if found is not None else ("tensor", f"self{match.group(1)}")
        shown = _value(value)
        words = f"the value of {kind} `{name}`" + (f" ({shown})" if shown is not None else "")
        return words, name if found is not None and value.numel() == 1 else None
    return None, None


def reason_of(exc: BaseException, module: Any,
              is_code: Callable[[str], bool]) -> Reason | None:
    """Why torch.export refused, at the innermost line of the user's or a library's code
    (`is_code(file)`) on the way; None when the failure is not one that a line's reading of
    a tensor's value explains."""
    text = f"{type(exc).__name__}: {exc}"
    if not _DATA_DEPENDENT.search(text):
        return None
    frame = _innermost_code_frame(exc, is_code)
    if frame is None:
        return None
    file, line = frame.f_code.co_filename, frame.f_lineno
    code = source_line(file, line).strip()
    if not code:
        return None
    read, tensor = _attribute_words(frame, code, module)
    sized = "Could not extract specialized integer" in text
    return Reason(file, line, code, words_for(code, read, sized=sized), read is not None,
                  tensor if _BRANCH.search(code) or _NUMBER.search(code) else None)


def words_for(code: str, read: str | None = None, *, sized: bool = False) -> str:
    """What a refused line does, from its code: `read` names the module's tensor it reads
    ("the value of buffer `vq.initted` (True)"); `sized`: torch said a size was needed."""
    if _DATA_SIZED.search(code) or sized:
        call = _DATA_SIZED.search(code)
        what = f"`{call.group(1)}(...)`" if call else "a tensor computed here"
        return f"the size of {what} depends on the data, and this line needs it as a number"
    if _BRANCH.search(code):
        verb = "checks" if code.startswith("assert") else "branches on"
        return (f"{verb} {read}, which torch.export does not know while tracing" if read
                else f"{verb} a tensor's value: a tensor converted to a Python bool, which "
                     "torch.export does not know while tracing")
    if _NUMBER.search(code):
        return ("converts " + (read or "a tensor") + " to a Python number, which "
                "torch.export does not know while tracing")
    return ("uses " + (read or "a tensor's value") + " where torch.export needs a value it "
            "does not know while tracing")


__all__ = ["Reason", "reason_of", "words_for"]
