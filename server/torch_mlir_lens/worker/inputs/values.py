"""Values the user wrote as text or files: evaluate expressions, load saved inputs, find files.

Expressions are evaluated in the user's module namespace with `torch` available; failures
become "bad-inputs" errors at the line that holds the expression. `dynamic` dim texts ("batch",
"seq<=512") become `torch.export.Dim`s (the same name gives the same Dim).
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import types
from collections.abc import Iterator
from typing import Any

import torch

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.source.dynamic_dims import DimText, parse_dim_text
from torch_mlir_lens.system.reading import INPUTS_FILE, read_bytes

SEED = 0  # what the example's values and a module's weights are drawn from, on every build


@contextlib.contextmanager
def seeded() -> Iterator[None]:
    """torch's random generator at `SEED` for the block, put back after: an example written
    `torch.randn(4, 8)` and a module's random weights are the same on every build, so what is
    decided on their values (Verify, a branch a proof specialises, an offer) is a function of
    the file's text, not of the draw, and a check says the same thing twice."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        yield


def namespace(mod: types.ModuleType) -> dict[str, Any]:
    """Globals for evaluating expressions: the user's module, plus `torch`."""
    ns = dict(vars(mod))
    ns.setdefault("torch", torch)
    return ns


def evaluate(expr: str, ns: dict[str, Any], what: str, path: str, line: int | None) -> Any:
    """Evaluate an inputs/init/dynamic expression; failures become bad-inputs."""
    try:
        code = compile(expr.strip(), f"<torch-mlir-lens {what}>", "eval")
        return eval(code, dict(ns))
    except Exception as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise LensError(
            ErrorKind.BAD_INPUTS,
            f"{what} expression `{expr.strip()}` failed: {type(exc).__name__}"
            + (f": {detail}" if detail else ""),
            file=path, line=line,
        ) from None


def as_call_args(value: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """tuple/list → positional, dict → keyword, anything else → one positional argument."""
    if isinstance(value, tuple):
        return value, {}
    if isinstance(value, list):
        return tuple(value), {}
    if isinstance(value, dict):
        return (), dict(value)
    return (value,), {}


def _dim_texts(spec: Any, found: dict[str, DimText]) -> None:
    """Every dim text of a spec, by name; a name given two different ranges is a ValueError."""
    if isinstance(spec, str):
        dim = parse_dim_text(spec)
        known = found.get(dim.name)
        bounded = dim.low is not None or dim.high is not None
        if known is None or (bounded and known == DimText(dim.name)):
            found[dim.name] = dim
        elif bounded and known != dim:
            raise ValueError(f"{dim.name!r} is given two ranges: {known.text()!r} and "
                             f"{dim.text()!r} (a name is one dim: give its range once)")
    elif isinstance(spec, dict):
        for value in spec.values():
            _dim_texts(value, found)
    elif isinstance(spec, list | tuple):
        for value in spec:
            _dim_texts(value, found)


def to_dims(spec: Any, dims: dict[str, Any]) -> Any:
    """Replace dim texts ("batch", "seq<=512", "2<=seq<=512", "seq>=4": source/dynamic_dims.py) by
    `torch.export.Dim`s, recursively: one Dim per name, with the range given for it.
    ValueError for a text that is not a dim, or a name given two ranges."""
    texts: dict[str, DimText] = {}
    _dim_texts(spec, texts)
    for name, text in texts.items():
        if name not in dims:
            bounds = {k: v for k, v in (("min", text.low), ("max", text.high)) if v is not None}
            dims[name] = torch.export.Dim(name, **bounds)
    return _with_dims(spec, dims)


def _with_dims(spec: Any, dims: dict[str, Any]) -> Any:
    if isinstance(spec, str):
        return dims[parse_dim_text(spec).name]
    if isinstance(spec, dict):
        return {k: _with_dims(v, dims) for k, v in spec.items()}
    if isinstance(spec, list | tuple):
        return type(spec)(_with_dims(v, dims) for v in spec)
    return spec


def load_inputs_file(file: str, path: str, what: str) -> Any:
    """torch.load a saved tuple/dict of tensors (weights_only first: it cannot run code)."""
    if not os.path.exists(file):
        raise LensError(ErrorKind.BAD_INPUTS, f"{what} {file} does not exist", file=path)
    try:
        data = read_bytes(file, INPUTS_FILE)  # regular files only: never a FIFO or a device
    except OSError as exc:
        raise LensError(ErrorKind.BAD_INPUTS, f"cannot read {what} {file}: {exc}",
                        file=path) from None
    try:
        try:
            return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        except pickle.UnpicklingError:
            # Not plain tensors/containers. The workspace is trusted (its code runs anyway).
            return torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)
    except Exception as exc:
        raise LensError(
            ErrorKind.BAD_INPUTS, f"cannot load {what} {file}: {type(exc).__name__}: {exc}",
            file=path,
        ) from None


def locate(file: str, path: str, workspace: str | None) -> str:
    """A relative inputs file: from the workspace, else the file's folder (never the worker's
    own working directory, which is no folder of the user's)."""
    file = os.path.expanduser(file)
    if os.path.isabs(file):
        return file
    bases = [b for b in (workspace, os.path.dirname(path)) if b]
    for base in bases:
        if os.path.exists(os.path.join(base, file)):
            return os.path.abspath(os.path.join(base, file))
    return os.path.abspath(os.path.join(bases[0], file)) if bases else os.path.abspath(file)


def settings_value(value: str, ns: dict[str, Any], path: str, workspace: str | None,
                    key: str) -> Any:
    """A settings entry: "@file" (relative to the workspace, else the file's folder) or EXPR."""
    if value.startswith("@"):
        base = workspace or os.path.dirname(path)
        file = os.path.join(base, os.path.expanduser(value[1:]))
        return load_inputs_file(os.path.abspath(file), path, f"settings[{key!r}] file")
    return evaluate(value, ns, f"settings[{key!r}]", path, None)
