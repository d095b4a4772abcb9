"""Reach the user's class or function, build the module, call user code: failures explained.

Every failure becomes a `LensError` at the user's line (the innermost traceback frame in the
file): a constructor that needs arguments says which and how to give them.
"""

from __future__ import annotations

import inspect
import os
import types
from collections.abc import Callable
from typing import Any

from torch_mlir_lens.discovery import ModuleInfo
from torch_mlir_lens.protocol.results import ErrorKind, LensError


def lookup(mod: types.ModuleType, name: str) -> Any:
    """The class or function `name` (dotted for nested classes) of the loaded module."""
    obj: Any = mod
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise LensError(
                ErrorKind.UNKNOWN_MODULE,
                f"no module or function named {name!r} in {os.path.basename(mod.__file__ or '')}",
                file=mod.__file__,
            )
    return obj


class LazyInstance:
    """Builds the module once, on demand (several precedence levels may need it)."""

    def __init__(self, obj: Any, name: str, init: tuple[tuple[Any, ...], dict[str, Any]],
                 info: ModuleInfo | None, path: str, init_src: str) -> None:
        self.obj, self.name, self.init, self.info, self.path = obj, name, init, info, path
        self.init_src = init_src
        self.value: Any = None

    def get(self) -> Any:
        """The module, built on the first call."""
        if self.value is None:
            self.value = construct_module(self.obj, self.name, *self.init, self.info,
                                          self.path, self.init_src)
        return self.value


def construct_module(obj: Any, name: str, init_args: tuple[Any, ...],
                     init_kwargs: dict[str, Any], info: ModuleInfo | None, path: str,
                     init_src: str) -> Any:
    """`obj(*init_args, **init_kwargs)` with failures explained."""
    try:
        return obj(*init_args, **init_kwargs)
    except Exception as exc:
        no_init = not init_args and not init_kwargs
        if no_init and isinstance(exc, TypeError) and "argument" in str(exc):
            needed = _required_init_params(obj)
            raise LensError(
                ErrorKind.INPUTS_MISSING,
                f"{name} needs constructor arguments ({', '.join(needed) or str(exc)}): add "
                f"`# torch-mlir-lens: init=(...)` above the class or pass --init",
                file=path, line=info.line if info else None,
            ) from None
        raise LensError(
            ErrorKind.BAD_INPUTS,
            f"constructing {name} failed ({init_src}): {type(exc).__name__}: {exc}",
            file=path, line=user_line(exc, path),
        ) from None


def _required_init_params(obj: Any) -> list[str]:
    try:
        params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return []
    return [p.name for p in params
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def user_line(exc: BaseException, path: str) -> int | None:
    """The line of the innermost traceback frame in the user's file."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def call_user(fn: Callable[[], Any], what: str, path: str) -> Any:
    """`fn()` (user code); a failure becomes bad-inputs at the user's line."""
    try:
        return fn()
    except LensError:
        raise
    except Exception as exc:
        line = user_line(exc, path)
        raise LensError(ErrorKind.BAD_INPUTS, f"{what} failed: {type(exc).__name__}: {exc}",
                        file=path, line=line) from None
