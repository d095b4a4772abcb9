"""The parent's export kept across lowerings that differ only inside a block's `forward`.

An edit to a block's `forward` traces that block again (block_cache.py); without this it would
export the parent again too, though nothing the parent's export sees changed. That export is a
function of the code it runs, the module's state, the example inputs' types and what each
block call returns (its stub's types). An entry is reused only when each is proven the same:

- code: the job's file with the `forward` of every stitched block class blanked out line for
  line (an edit that adds a line moves the parent's lines, so it misses), with the job's
  other fields and the stamps of the .py files beside it (as `protocol.programs.program_key`);
- those forwards did not run while the parent was exported: a class-level sentinel sees any
  call that is not a stub's (a stubbed block's forward is its instance's): an instance left
  unstitched, a subclass calling `super().forward`. An export that ran one is not kept;
- state: every module's class, plain attributes and tensors' types, the blocks' included
  (whatever their constructors set, whatever ran while the model was built), compared with
  those of the module the entry was exported from only once the rest matched;
- calls: each group's blocks, their inputs' and results' types and structure, their weights,
  and the chains.

Only a model built without weights is kept (its ExportedProgram then holds no values of its
own instance, where real weights would be another instance's), and only an export whose
first form worked (the blocks' submodules out of sight: the parent read nothing inside them).
An entry holds the parent's ExportedProgram and its imported module as bytecode, before the
stitch; a hit stitches a parse of it with this lowering's block functions, under the group
numbers and sites its ops carry.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree

from torch_mlir_lens.system.bounded_cache import BoundedCache
from torch_mlir_lens.worker.blocks.prove import Chain, Group
from torch_mlir_lens.worker.blocks.reads import attribute_key, original_class
from torch_mlir_lens.worker.blocks.record import TensorMeta, _plain
from torch_mlir_lens.worker.blocks.stub import GroupKernel, attribute
from torch_mlir_lens.worker.process import WORKER

MAX_ENTRIES = 4
_TABLES = ("_parameters", "_buffers", "_modules")



@dataclass
class Entry:
    """A parent export, before the stitch."""

    parent: Any  # torch.export.ExportedProgram (built without weights)
    raw: bytes  # its imported module, as bytecode
    weight_bytes: int  # what the importer counted of its weights (crash_guard.note_weights)
    groups: list[tuple[int, dict[int, str]]]  # per group, in order: its number, site → path
    chained: int  # block calls made by chain ops
    # The module it was exported from, whose state is compared only when the rest of a key
    # matches (an edit to the parent, the usual one, then costs nothing per layer).
    root: torch.nn.Module
    _state: str | None = None

    def state(self) -> str:
        if self._state is None:
            self._state = module_state(self.root)
        return self._state


@dataclass
class _Parents:
    """The parent exports this worker keeps, and how often one was re-used (the worker's
    part)."""

    entries: BoundedCache[str, Entry] = field(default_factory=lambda: BoundedCache(MAX_ENTRIES))
    reused: int = 0


def _parents() -> _Parents:
    return WORKER.part(_Parents)


def counters() -> dict[str, int]:
    """How many parent exports were re-used."""
    return {"parent_exports_reused": _parents().reused}


def _sha(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()


def masked_text(text: str, path: str, classes: list[type]) -> str:
    """`text` (the file at `path`) with the `forward` of each class defined in it blanked,
    line for line; a class defined elsewhere, or whose forward is not a plain `def` there,
    is left as it is."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    wanted = {cls.__qualname__: cls for cls in classes if _defined_in(cls, path)}
    for qualname, node in _classes(tree):
        cls = wanted.get(qualname)
        if cls is None:
            continue
        first = cls.__dict__["forward"].__code__.co_firstlineno
        for stmt in node.body:
            if (isinstance(stmt, ast.FunctionDef) and stmt.name == "forward"
                    and not stmt.decorator_list and stmt.lineno == first
                    and stmt.end_lineno is not None):
                for index in range(stmt.lineno - 1, stmt.end_lineno):
                    lines[index] = "\n"
    return "".join(lines)


def _defined_in(cls: type, path: str) -> bool:
    forward = cls.__dict__.get("forward")
    code = getattr(forward, "__code__", None)
    return code is not None and os.path.normpath(code.co_filename) == os.path.normpath(path)


def _classes(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.ClassDef]]:
    """(qualname, node) of every class of a module, nested ones too (not those in functions)."""
    body = getattr(tree, "body", [])
    for node in body:
        if isinstance(node, ast.ClassDef):
            qualname = f"{prefix}{node.name}"
            yield qualname, node
            yield from _classes(node, f"{qualname}.")


def _module_state(module: torch.nn.Module) -> tuple[Any, ...]:
    """One module's class, plain attributes and tensors' types, as comparable data."""
    plain = tuple((name, attribute_key(name, value))
                  for name, value in sorted(vars(module).items()) if name not in _TABLES)
    tensors = tuple((table, name, None if t is None else TensorMeta.of(t))
                    for table in ("_parameters", "_buffers")
                    for name, t in getattr(module, table).items())
    children = tuple((name, None if m is None else original_class(type(m)))
                     for name, m in module._modules.items())
    return (original_class(type(module)), plain, tensors, children)


def module_state(root: torch.nn.Module) -> str:
    """Every module's state (`_module_state`), in the order `modules()` gives, hashed (classes
    by their qualified names: each load of a file makes new class objects; their code is the
    key's part)."""
    return _sha(tuple(_module_state(m) for m in root.modules()))


def _inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
    return (str(spec), tuple(TensorMeta.of(v) if isinstance(v, torch.Tensor) else _plain(v)
                             for v in leaves))


def _calls(groups: list[Group], chains: list[Chain]) -> tuple[Any, ...]:
    out: list[Any] = []
    for group in groups:
        rep = group.representative
        out.append((group.symbol, group.class_name, tuple(c.path for c in group.calls),
                    str(rep.in_spec), tuple(rep.tensor_at), tuple(rep.in_metas),
                    tuple(_plain(leaf) for i, leaf in enumerate(rep.leaves)
                          if i not in rep.tensor_at),
                    str(rep.out_spec), tuple(rep.outputs), tuple(rep.out_metas),
                    tuple(rep.weights), tuple(rep.weight_metas)))
    out.extend((c.group.symbol, tuple(x.path for x in c.calls), c.carried) for c in chains)
    return tuple(out)


def key(job_key: str | None, root: torch.nn.Module, args: tuple[Any, ...],
        kwargs: dict[str, Any], texts: dict[str, str], groups: list[Group],
        chains: list[Chain]) -> str | None:
    """The key of this parent export but for the module's state (compared on a match, see
    `lookup`), or None when it may not be kept (no key of the job, real weights)."""
    from torch_mlir_lens.worker.loading.construct import is_fake_module

    if job_key is None or not is_fake_module(root) or len(texts) != 1:
        return None
    (path, text), = texts.items()
    classes = list({type(g.representative.module): None for g in groups})
    return _sha(job_key, masked_text(text, path, classes), _inputs(args, kwargs),
                _calls(groups, chains))


@contextlib.contextmanager
def forwards_watched(classes: list[type]) -> Iterator[list[str]]:
    """While the body runs, a call of any of the classes' own `forward` is noted (the
    yielded list gets the class's name): a stub's call is its instance's, never noted."""
    ran: list[str] = []
    saved: dict[type, Any] = {}
    for cls in classes:
        original = cls.__dict__.get("forward")
        if original is None:
            continue

        def sentinel(self: Any, *args: Any, __original: Any = original,
                     __name: str = cls.__qualname__, **kwargs: Any) -> Any:
            ran.append(__name)
            return __original(self, *args, **kwargs)

        saved[cls] = original
        type.__setattr__(cls, "forward", functools.wraps(original)(sentinel))
    try:
        yield ran
    finally:
        for cls, original in saved.items():
            type.__setattr__(cls, "forward", original)


def lookup(entry_key: str | None, root: torch.nn.Module) -> Entry | None:
    """The parent export kept under `entry_key` from a module whose state is `root`'s."""
    parents = _parents()
    entry = parents.entries.peek(entry_key) if entry_key is not None else None
    if entry is None or entry.state() != module_state(root):
        return None
    parents.entries.get(entry_key)  # type: ignore[arg-type]  # now the most recently used
    parents.reused += 1
    return entry


def store(entry_key: str, root: torch.nn.Module, parent: Any, raw_op: Any, weight_bytes: int,
          kernels: list[GroupKernel], chained: int) -> None:
    """Keep a parent export of `root` (its imported module `raw_op` not yet stitched) under
    `entry_key`; the oldest entries go past MAX_ENTRIES."""
    buf = io.BytesIO()
    raw_op.operation.write_bytecode(buf)
    groups = [(k.number, {site: k.paths.get(id(module), "")
                          for site, (module, _names) in k.sites.items()}) for k in kernels]
    _parents().entries.put(
        entry_key, Entry(parent, buf.getvalue(), weight_bytes, groups, chained, root))


def kernels_for(entry: Entry, root: torch.nn.Module,
                made: list[tuple[GroupKernel, list[str]]]) -> list[GroupKernel]:
    """This lowering's kernels (with their block functions, and `made`'s weight names)
    under the numbers and sites of the entry's ops, each site's block from `root`: the
    stitch adds each block's own weights. Not registered for eager runs: a model built
    without weights is never run."""
    out = []
    for (number, sites), (kernel, names) in zip(entry.groups, made, strict=True):
        alias = GroupKernel(number, list(kernel.out_metas), kernel.run)
        for site, path in sites.items():
            module = root.get_submodule(path)
            alias.sites[site] = (module, list(names))
            alias.paths[id(module)] = path
            for name in names:
                attribute(module, name)  # the weight exists (else: AttributeError, no reuse)
        out.append(alias)
    return out


def clear() -> None:
    """Forget every kept parent export."""
    _parents().entries.clear()


__all__ = ["MAX_ENTRIES", "Entry", "clear", "counters", "forwards_watched", "kernels_for",
           "key", "lookup", "masked_text", "module_state", "store"]
