"""Quick fixes for export errors about dynamic dims: apply what torch.export suggests.

An export error (`export-error` diagnostic, worded by worker/stages/export_errors.py) may carry
torch.export's `Suggested fixes:` or say that a dynamic dim's example has size 0 or 1
(source/dynamic_dims.py reads both). The fixes edit the module's own comment lines:

- a bound (`seq = Dim('seq', max=512)`): `"seq"` → `"seq<=512"` in `dynamic=`;
- a dim torch.export found to be a constant (`batch = 1`): its entry left out of `dynamic=`;
- two dims that are one (`seq = batch`): the second name written as the first;
- an example of size 1 on a dynamic dim: that size made 2 in the `inputs=` expression
  (each literal shape equal to the example's), or the dim left out of `dynamic=`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from lsprotocol import types

from torch_mlir_lens import discovery
from torch_mlir_lens.protocol.results import ErrorKind
from torch_mlir_lens.source.dynamic_dims import (
    DimFix,
    fix_dynamic_text,
    fix_example_size,
    parse_too_small,
    suggested_fixes,
)

EXPORT_ERROR = str(ErrorKind.EXPORT_ERROR)


def _key_lines(text: list[str], info: discovery.ModuleInfo, key: str) -> list[int]:
    """The 1-based lines of the comment's `key=` value (its first line, then the comment lines
    it continues on, up to the next key or the class)."""
    ann = info.annotation
    first = ann.key_lines.get(key) if ann is not None else None
    if ann is None or first is None:
        return []
    others = sorted(n for n in ann.key_lines.values() if n > first)
    end = min([*others, info.decorator_line or info.line])
    return [n for n in range(first, end) if n == first or (
        n - 1 < len(text) and text[n - 1].lstrip().startswith("#"))]


def _edits(text: list[str], lines: list[int],
           change: Callable[[str], str | None]) -> list[types.TextEdit]:
    """The edits of `change` (one line's text → its new text, or None) over `lines`: each
    replaces the whole line."""
    out = []
    for line in lines:
        if line - 1 >= len(text):
            continue
        old = text[line - 1]
        new = change(old)
        if new is not None and new != old:
            out.append(types.TextEdit(
                range=types.Range(start=types.Position(line=line - 1, character=0),
                                  end=types.Position(line=line - 1, character=len(old))),
                new_text=new))
    return out


def _fixed_dynamic(text: str, *, fix: DimFix) -> str | None:
    return fix_dynamic_text(text, fix)


def _action(uri: str, title: str, edits: list[types.TextEdit], diag: types.Diagnostic,
            preferred: bool) -> types.CodeAction:
    return types.CodeAction(
        title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
        is_preferred=preferred, edit=types.WorkspaceEdit(changes={uri: edits}))


def _dim_fix_title(fix: DimFix) -> str:
    if fix.kind == "bounds":
        return f"Apply torch.export's fix: {fix.describe()}"
    if fix.kind == "static":
        return f'Make "{fix.name}" static (torch.export: it is always {fix.value})'
    return f"Apply torch.export's fix: {fix.describe()}"


def export_error_fixes(uri: str, text: list[str], info: discovery.ModuleInfo,
                       diag: types.Diagnostic) -> list[types.CodeAction]:
    """The quick fixes of one export-error diagnostic of module `info` in the document `uri`
    whose lines are `text` (none when its message suggests nothing the comment can say)."""
    message = diag.message
    dynamic_lines = _key_lines(text, info, "dynamic")
    actions: list[types.CodeAction] = []
    small = parse_too_small(message)
    if small is not None:
        edits = _edits(text, _key_lines(text, info, "inputs"),
                       lambda line: fix_example_size(line, small.shape, small.axis))
        if edits:
            actions.append(_action(uri, f"Give the example `{small.input}` size 2 in dim "
                                        f"{small.axis}", edits, diag, True))
        static = DimFix("static", small.dim, value=small.size)
        edits = _edits(text, dynamic_lines, lambda line: fix_dynamic_text(line, static))
        if edits:
            actions.append(_action(uri, f'Make "{small.dim}" static (leave it out of '
                                        f"dynamic=)", edits, diag, not actions))
    for fix in suggested_fixes(message):
        edits = _edits(text, dynamic_lines, functools.partial(_fixed_dynamic, fix=fix))
        if edits:
            actions.append(_action(uri, _dim_fix_title(fix), edits, diag,
                                   not actions and fix.kind == "bounds"))
    return actions
