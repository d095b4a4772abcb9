"""Static shape inference: a module's first layer and a small input that fits it.

`FirstLayers` reads, without running anything, which registered layer `forward` calls first
(followed into `nn.Sequential`/`nn.ModuleList` and same-file submodules) and its literal
constructor arguments; `layer_inputs_expr` turns that into a `torch.randn(...)` expression.
The worker's inference uses the same expression, so the quick fix and the worker agree.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from typing import Any

from torch_mlir_lens.discovery.caches import node_cache_get, node_cache_put
from torch_mlir_lens.discovery.model import FirstLayer
from torch_mlir_lens.discovery.names import dotted_name, is_torch_module_qualname, qualify
from torch_mlir_lens.discovery.syntax import find_method, fold_literal, init_signature

# First layers whose input shape can be inferred (see `layer_inputs_expr`).
INFERABLE_LAYERS = frozenset({
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "Embedding", "EmbeddingBag", "LSTM", "GRU", "RNN",
    "LayerNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
})
# Constructor parameter names of those layers, in order (to read positional literal arguments).
_LAYER_PARAMS: dict[str, tuple[str, ...]] = {
    "Linear": ("in_features", "out_features"),
    "LazyLinear": ("out_features",),
    "Conv1d": ("in_channels", "out_channels", "kernel_size"),
    "Conv2d": ("in_channels", "out_channels", "kernel_size"),
    "Conv3d": ("in_channels", "out_channels", "kernel_size"),
    "ConvTranspose1d": ("in_channels", "out_channels", "kernel_size"),
    "ConvTranspose2d": ("in_channels", "out_channels", "kernel_size"),
    "ConvTranspose3d": ("in_channels", "out_channels", "kernel_size"),
    "Embedding": ("num_embeddings", "embedding_dim"),
    "EmbeddingBag": ("num_embeddings", "embedding_dim"),
    "LSTM": ("input_size", "hidden_size"),
    "GRU": ("input_size", "hidden_size"),
    "RNN": ("input_size", "hidden_size"),
    "LayerNorm": ("normalized_shape",),
    "BatchNorm1d": ("num_features",),
    "BatchNorm2d": ("num_features",),
    "BatchNorm3d": ("num_features",),
}
_CONTAINERS = frozenset({"Sequential", "ModuleList"})
DEFAULT_DIM = 16  # placeholder feature size when a layer's size is not a literal


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a body, entering compound statements but not nested def/class."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for name in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(stmt, name, []))
        for handler in getattr(stmt, "handlers", []):
            yield from _statements(handler.body)


def _self_assignments(cls: ast.ClassDef) -> dict[str, ast.expr]:
    """`self.<attr> = <value>` in `__init__`, in order."""
    init = find_method(cls, "__init__")
    found: dict[str, ast.expr] = {}
    if init is None:
        return found
    for node in _statements(init.body):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                        and t.value.id == "self" and node.value is not None):
                    found.setdefault(t.attr, node.value)
    return found


def _calls_in_evaluation_order(node: ast.AST) -> Iterator[ast.Call]:
    """Calls under `node` in the order they complete (arguments before the call itself)."""
    if isinstance(node, ast.Call):
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            yield from _calls_in_evaluation_order(arg)
        yield from _calls_in_evaluation_order(node.func)
        yield node
        return
    for child in ast.iter_child_nodes(node):
        yield from _calls_in_evaluation_order(child)


def _first_used_attr(cls: ast.ClassDef, attrs: dict[str, ast.expr]) -> str | None:
    """The first registered layer `forward` calls (`self.<attr>(...)`), else the first it uses."""
    fwd = find_method(cls, "forward")
    if fwd is None:
        return None
    for call in _calls_in_evaluation_order(fwd):
        func = call.func
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id == "self" and func.attr in attrs):
            return func.attr
    uses = [
        n for n in ast.walk(fwd)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
        and n.value.id == "self" and n.attr in attrs
    ]
    uses.sort(key=lambda n: (n.lineno, n.col_offset))
    return uses[0].attr if uses else None


class FirstLayers:
    """The first layers of one file's module classes (see the module docstring).

    `classes`: the file's class nodes by simple name; `module_names`: which of them are module
    classes; `aliases`: the file's import aliases; `context`: what a cached answer depends on
    besides the class's own node (the imports and the set of module classes).
    """

    def __init__(
        self, classes: dict[str, ast.ClassDef], module_names: set[str],
        aliases: dict[str, str], context: Any,
    ) -> None:
        self.classes = classes
        self.module_names = module_names
        self.aliases = aliases
        self.context = context
        self._deps: list[tuple[str, ast.ClassDef]] = []

    def first_layer(self, cls: ast.ClassDef, depth: int = 0) -> FirstLayer | None:
        """The first layer `forward` uses (else the first registered), followed into containers
        and same-file submodules. Cached per class node while the imports, the set of module
        classes and the classes it was followed into stay the same."""
        if depth > 0:
            return self._first_layer(cls, depth)
        hit = node_cache_get(cls, "first_layer")
        if hit is not None:
            context, result, deps = hit
            if context == self.context and all(
                name in self.classes and self.classes[name] is node for name, node in deps
            ):
                return copy.copy(result)
        self._deps = []
        result = self._first_layer(cls, 0)
        node_cache_put(cls, "first_layer", (self.context, result, tuple(self._deps)))
        return copy.copy(result)

    def _first_layer(self, cls: ast.ClassDef, depth: int) -> FirstLayer | None:
        attrs = self._layer_attrs(cls)
        if not attrs or depth > 4:
            return None
        attr = _first_used_attr(cls, attrs) or next(iter(attrs))
        layer = self._layer_of_expr(attrs[attr], depth, self._init_defaults(cls))
        if layer is not None:
            layer.attr = attr
        return layer

    def _init_defaults(self, cls: ast.ClassDef) -> dict[str, Any]:
        return init_signature(cls)[1]

    def _layer_attrs(self, cls: ast.ClassDef) -> dict[str, ast.expr]:
        return {k: v for k, v in _self_assignments(cls).items() if self._is_layer_expr(v)}

    def _is_layer_expr(self, value: ast.expr) -> bool:
        if isinstance(value, ast.Call):
            callee = dotted_name(value.func)
            if callee is None:
                return False
            return callee in self.module_names or is_torch_module_qualname(
                qualify(callee, self.aliases)
            )
        return False

    def _layer_of_expr(
        self, value: ast.expr, depth: int, defaults: dict[str, Any],
    ) -> FirstLayer | None:
        if not isinstance(value, ast.Call):
            return None
        callee = dotted_name(value.func) or ""
        if callee in self.classes and callee in self.module_names:
            self._deps.append((callee, self.classes[callee]))
            return self.first_layer(self.classes[callee], depth + 1)
        kind = qualify(callee, self.aliases).rsplit(".", 1)[-1]
        if kind in _CONTAINERS:
            items = value.args
            if items and isinstance(items[0], ast.List | ast.Tuple | ast.ListComp):
                first = items[0]
                items = first.elts if not isinstance(first, ast.ListComp) else [first.elt]
            if items and isinstance(items[0], ast.Starred):
                inner = items[0].value
                items = inner.elts if isinstance(inner, ast.List | ast.Tuple) else []
            return self._layer_of_expr(items[0], depth + 1, defaults) if items else None
        if kind not in INFERABLE_LAYERS:
            return FirstLayer(kind=kind)
        return FirstLayer(kind=kind, params=self._layer_params(kind, value, defaults))

    @staticmethod
    def _layer_params(kind: str, call: ast.Call, defaults: dict[str, Any]) -> dict[str, Any]:
        """Literal constructor arguments; names that are `__init__` params use their default."""

        def value(node: ast.expr) -> Any:
            return fold_literal(node, defaults)

        params: dict[str, Any] = {}
        for name, arg in zip(_LAYER_PARAMS.get(kind, ()), call.args, strict=False):
            params[name] = value(arg)
        for kw in call.keywords:
            if kw.arg:
                params[kw.arg] = value(kw.value)
        return params


def _dim(params: dict[str, Any], name: str) -> int:
    value = params.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else (
        DEFAULT_DIM
    )


def layer_inputs_expr(kind: str, params: dict[str, Any]) -> str | None:
    """A Python expression (using `torch`) for a small input that fits a first layer of `kind`.

    `params` holds the layer's constructor values (`in_features`, `in_channels`, ...); missing
    ones fall back to a placeholder size. Shared by the quick-fix template and the worker's
    inference, so both suggest the same thing. None when the layer kind is not known.
    """
    if kind in ("Linear", "Bilinear"):
        return f"torch.randn(2, {_dim(params, 'in_features')})"
    if kind == "LazyLinear":
        return f"torch.randn(2, {DEFAULT_DIM})"
    spatial = {"1d": "32", "2d": "32, 32", "3d": "8, 16, 16"}
    if kind.startswith(("Conv", "ConvTranspose")) and kind[-2:] in spatial:
        return f"torch.randn(1, {_dim(params, 'in_channels')}, {spatial[kind[-2:]]})"
    if kind in ("Embedding", "EmbeddingBag"):
        return f"torch.randint(0, {_dim(params, 'num_embeddings')}, (2, 8))"
    if kind in ("LSTM", "GRU", "RNN"):
        size = _dim(params, "input_size")
        shape = f"2, 8, {size}" if params.get("batch_first") else f"8, 2, {size}"
        return f"torch.randn({shape})"
    if kind == "LayerNorm":
        normalized = params.get("normalized_shape")
        if isinstance(normalized, list | tuple):
            dims = list(normalized)
        else:
            dims = [_dim(params, "normalized_shape")]
        return f"torch.randn(2, 8, {', '.join(str(d) for d in dims)})"
    if kind.startswith("BatchNorm") and kind[-2:] in spatial:
        n = _dim(params, "num_features")
        extra = {"1d": "", "2d": ", 16, 16", "3d": ", 4, 8, 8"}[kind[-2:]]
        return f"torch.randn(2, {n}{extra})"
    return None
