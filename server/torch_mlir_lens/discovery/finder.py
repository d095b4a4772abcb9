"""`find_modules`: a file's module classes and lowerable functions, each with its inputs status.

No torch import and no execution: only the AST (and the `# torch-mlir-lens:` comments). The
steps: parse tolerantly (`parsing`), find the module classes (`classes`), read each class's
facts (cached with its node), link parents, set statuses (`statuses`, `siblings`), add the
annotated top-level functions. Results go through the result cache (`caches`).
"""

from __future__ import annotations

import ast
import hashlib
from typing import Any

from torch_mlir_lens.discovery import caches
from torch_mlir_lens.discovery.analyzer import Analyzer
from torch_mlir_lens.discovery.classes import FoundClass
from torch_mlir_lens.discovery.model import ModuleInfo
from torch_mlir_lens.discovery.names import dotted_name
from torch_mlir_lens.discovery.parsing import parse_tolerant
from torch_mlir_lens.discovery.siblings import link_sibling_parents
from torch_mlir_lens.discovery.statuses import (
    class_convention,
    derive_statuses,
    link_parents,
    own_statuses,
    settings_key_for,
)
from torch_mlir_lens.discovery.syntax import find_method, init_signature, name_columns, params_of
from torch_mlir_lens.source.annotations import parse_annotation_block


def find_modules(
    text: str,
    path: str | None = None,
    *,
    settings_inputs: dict[str, str] | None = None,
    workspace: str | None = None,
) -> list[ModuleInfo]:
    """All module classes (and annotated top-level functions) of a file, in source order.

    Never raises: a file with syntax errors yields the modules of the parts that parse.
    """
    key = (
        hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), path, workspace,
        tuple(sorted((settings_inputs or {}).items())),
    )
    cached = caches.cached_result(key)
    if cached is not None:
        return cached
    with caches.noting_consulted() as consulted:
        try:
            infos = _find_modules(text, path, settings_inputs, workspace)
        except Exception:  # a bug here must not take the language server down
            return []
    caches.store_result(key, infos, consulted)
    return infos


def _find_modules(
    text: str, path: str | None, settings: dict[str, str] | None, workspace: str | None,
) -> list[ModuleInfo]:
    return _analyze(text, path, settings, workspace, siblings=True)[0]


def _analyze(
    text: str, path: str | None, settings: dict[str, str] | None, workspace: str | None,
    *, siblings: bool,
) -> tuple[list[ModuleInfo], Analyzer]:
    body = parse_tolerant(text)
    an = Analyzer(text, path, body)
    infos: list[ModuleInfo] = []
    for c in an.classes:
        if c.node.name in an.module_names:
            infos.append(_class_info(an, c, settings, path, workspace))
    link_parents(an, infos)
    own_statuses(an.body, infos)
    if siblings and path:
        # Classes still without inputs look for parents in sibling files too.
        link_sibling_parents(path, [i for i in infos if i.inputs == "missing"], _analyze_sibling)
    derive_statuses(infos)
    infos.extend(_function_infos(an, body, settings, path, workspace))
    infos.sort(key=lambda m: m.line)
    return infos, an


def _analyze_sibling(file: str, text: str) -> tuple[list[ModuleInfo], Analyzer]:
    return _analyze(text, file, None, None, siblings=False)


def _class_info(
    an: Analyzer, c: FoundClass, settings: dict[str, str] | None, path: str | None,
    workspace: str | None,
) -> ModuleInfo:
    node = c.node
    facts = caches.node_cache_get(node, "facts")
    if facts is None:
        facts = _class_facts(an, node)
        caches.node_cache_put(node, "facts", facts)
    # Fresh containers: callers may change an info without touching the cached facts.
    fields: dict[str, Any] = {
        k: v.copy() if isinstance(v, list | dict) else v for k, v in facts.items()
    }
    return ModuleInfo(
        name=c.qualname, kind="class", inputs="missing",
        annotation=parse_annotation_block(an.lines, facts["decorator_line"]),
        settings_key=settings_key_for(c.qualname, path, settings, workspace),
        first_layer=an.first_layer(node),
        **fields,
    )


def _class_facts(an: Analyzer, node: ast.ClassDef) -> dict[str, Any]:
    """What depends on the class's own text only (cached with its parsed chunk)."""
    fwd = find_method(node, "forward")
    params, required = params_of(fwd, skip_self=True) if fwd else ([], 0)
    init_required, init_defaults = init_signature(node)
    col, end_col = name_columns(an.lines, node)
    return {
        "line": node.lineno, "end_line": node.end_lineno or node.lineno,
        "name_col": col, "name_end_col": end_col,
        "forward_line": fwd.lineno if fwd else None,
        "forward_end_line": (fwd.end_lineno or fwd.lineno) if fwd else None,
        "bases": [dotted_name(b) or ast.unparse(b) for b in node.bases],
        "decorator_line": min([d.lineno for d in node.decorator_list] + [node.lineno]),
        "forward_params": params, "forward_required": required,
        "init_required": init_required, "init_defaults": init_defaults,
        "convention": class_convention(node, an.scan(node)[1]),
        "annotate_args": an.annotate_args_source(fwd),
    }


def _function_infos(
    an: Analyzer, body: list[ast.stmt], settings: dict[str, str] | None, path: str | None,
    workspace: str | None,
) -> list[ModuleInfo]:
    """Top-level functions with parameters and an inputs comment or settings entry."""
    infos: list[ModuleInfo] = []
    for stmt in body:
        if not isinstance(stmt, ast.FunctionDef) or stmt.name == "example_inputs":
            continue
        params, required = params_of(stmt, skip_self=False)
        if not params:
            continue
        deco_line = min([d.lineno for d in stmt.decorator_list] + [stmt.lineno])
        ann = parse_annotation_block(an.lines, deco_line)
        key = settings_key_for(stmt.name, path, settings, workspace)
        commented = ann is not None and bool(ann.inputs or ann.errors)
        status = "comment" if commented else "settings" if key else None
        if status is None:
            continue
        col, end_col = name_columns(an.lines, stmt)
        end = stmt.end_lineno or stmt.lineno
        infos.append(ModuleInfo(
            name=stmt.name, kind="function", line=stmt.lineno, end_line=end,
            name_col=col, name_end_col=end_col, forward_line=stmt.lineno, forward_end_line=end,
            bases=[], inputs=status, annotation=ann, decorator_line=deco_line,
            forward_params=params, forward_required=required, settings_key=key,
        ))
    return infos
