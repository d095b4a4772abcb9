"""One file's analysis state: its aliases, classes, module classes, and per-class text scans.

Built once per analysed text and shared by the per-class analyses (facts, parents, statuses,
first layers). Scans are cached with their class nodes, so unchanged classes cost nothing.
"""

from __future__ import annotations

import ast
import re

from torch_mlir_lens.discovery.caches import node_cache_get, node_cache_put
from torch_mlir_lens.discovery.classes import collect_classes, module_class_names
from torch_mlir_lens.discovery.model import FirstLayer
from torch_mlir_lens.discovery.names import dotted_name, import_aliases
from torch_mlir_lens.discovery.shapes import FirstLayers

_IDENT_RE = re.compile(r"[A-Za-z_]\w*")
_EXAMPLE_STORE_RE = re.compile(r"\bself\.example_input_array\s*(?::[^=\n]*)?=(?!=)")


class Analyzer:
    """Per-file state shared by the module analyses."""

    def __init__(self, text: str, path: str | None, body: list[ast.stmt]) -> None:
        self.text = text
        self.lines = text.splitlines()
        self.path = path
        self.body = body
        self.aliases = import_aliases(body)
        self.classes = collect_classes(body)
        self.by_name = {c.node.name: c for c in self.classes}
        self.module_names = module_class_names(body, self.aliases, path)
        self._scans: dict[int, tuple[set[str], bool]] = {}
        self.context = (tuple(sorted(self.aliases.items())), frozenset(self.module_names))
        self._layers = FirstLayers(
            {name: c.node for name, c in self.by_name.items()}, self.module_names, self.aliases,
            self.context,
        )

    def first_layer(self, cls: ast.ClassDef) -> FirstLayer | None:
        """The first layer `forward` uses (see `shapes.FirstLayers`)."""
        return self._layers.first_layer(cls)

    def scan(self, cls: ast.ClassDef) -> tuple[set[str], bool]:
        """(identifiers in the class's text, whether it assigns `self.example_input_array`).

        Read from the source text with regexes rather than by walking the AST: several times
        faster on big files, and a stray match in a comment only adds a harmless candidate.
        """
        cached = self._scans.get(id(cls)) or node_cache_get(cls, "scan")
        if cached is None:
            start = min([d.lineno for d in cls.decorator_list] + [cls.lineno]) - 1
            segment = "\n".join(self.lines[start : cls.end_lineno or cls.lineno])
            names = set(_IDENT_RE.findall(segment))
            cached = (names, bool(_EXAMPLE_STORE_RE.search(segment)))
            node_cache_put(cls, "scan", cached)
        self._scans[id(cls)] = cached
        return cached

    def uses(self, cls: ast.ClassDef) -> set[str]:
        """Names of this file's module classes that `cls`'s body refers to."""
        return {n for n in self.scan(cls)[0] if n in self.module_names and n != cls.name}

    def annotate_args_source(
        self, fwd: ast.FunctionDef | ast.AsyncFunctionDef | None,
    ) -> str | None:
        """The argument source of an `@annotate_args(...)` decorator on forward."""
        if fwd is None:
            return None
        for dec in fwd.decorator_list:
            if isinstance(dec, ast.Call):
                callee = dotted_name(dec.func) or ""
                if callee.rsplit(".", 1)[-1] == "annotate_args" and dec.args:
                    return ast.get_source_segment(self.text, dec.args[0])
        return None


