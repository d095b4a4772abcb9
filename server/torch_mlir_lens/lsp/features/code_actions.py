"""Quick fixes: insert the inputs comment above a module without example inputs; apply the
fixes torch.export suggests for dynamic dims to the module's comment (dynamic_fixes.py); lower
through the rewrites proven for a rejected op (rewrite_fixes.py).

The comment comes from `discovery.input_template` (shaped after the first layer when it is
known, indented like the class); once it is there the module lowers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from torch_mlir_lens import discovery
from torch_mlir_lens.lsp.checks import cell_positions
from torch_mlir_lens.lsp.checks.finding_records import INPUTS_MISSING
from torch_mlir_lens.lsp.checks.publish import SOURCE
from torch_mlir_lens.lsp.document import Document
from torch_mlir_lens.lsp.features import dynamic_fixes
from torch_mlir_lens.lsp.features.rewrite_fixes import rewrite_fixes

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session


def code_action(session: Session, params: types.CodeActionParams) -> list[types.CodeAction]:
    """`textDocument/codeAction`: the quick fixes of the diagnostics in range."""
    doc, cell = cell_positions.resolve(session, params.text_document.uri)
    if doc is None:
        return []
    only = params.context.only
    if only and not any(str(k).startswith(types.CodeActionKind.QuickFix) for k in only):
        return []
    if cell is not None:  # a notebook cell: ask in program lines, answer in the cells'
        program_params = types.CodeActionParams(
            text_document=params.text_document,
            range=cell_positions.to_program_range(cell, params.range),
            context=types.CodeActionContext(
                diagnostics=[cell_positions.diagnostic_in_program(cell, d)
                             for d in params.context.diagnostics],
                only=only,
            ),
        )
        return cell_positions.actions_to_cells(doc, quick_fixes(session, doc, program_params),
                                              cell)
    return quick_fixes(session, doc, params)


def quick_fixes(
    session: Session, doc: Document, params: types.CodeActionParams
) -> list[types.CodeAction]:
    """The quick fixes for a request in the document's own lines."""
    modules = session.modules_of(doc)
    by_name = {m.name: m for m in modules}
    wanted: dict[str, types.Diagnostic | None] = {}
    fixes: list[types.CodeAction] = []
    diag: types.Diagnostic | None
    for diag in params.context.diagnostics:
        if diag.source == SOURCE and isinstance(diag.data, dict) and diag.data.get("rewrites"):
            owner = by_name.get(str(diag.data.get("module")))
            if owner is not None:
                fixes += rewrite_fixes(doc, owner, diag)
        if diag.source == SOURCE and diag.code == dynamic_fixes.EXPORT_ERROR:
            data = diag.data if isinstance(diag.data, dict) else {}
            owner = by_name.get(str(data.get("module")))
            if owner is not None:
                fixes += dynamic_fixes.export_error_fixes(doc.uri, doc.lines, owner, diag)
        if diag.source == SOURCE and diag.code == INPUTS_MISSING:
            data = diag.data if isinstance(diag.data, dict) else {}
            info = by_name.get(str(data.get("module"))) or discovery.module_at_line(
                modules, diag.range.start.line + 1
            )
            if info is not None:
                wanted[info.name] = diag
    # Without a diagnostic in the request (e.g. a lightbulb on the class line), still
    # offer the fix for the module under the cursor when it lacks inputs.
    here = discovery.module_at_line(modules, params.range.start.line + 1)
    if here is not None and here.inputs == "missing" and here.kind == "class":
        wanted.setdefault(here.name, None)
    actions = fixes
    for name, diag in wanted.items():
        info = by_name.get(name)
        # Statically missing, or found missing by the worker (e.g. inference failed).
        if info is not None and (info.inputs == "missing" or diag is not None):
            actions.append(insert_inputs_action(doc, info, diag))
    return actions


def insert_inputs_action(
    doc: Document, info: discovery.ModuleInfo, diag: types.Diagnostic | None
) -> types.CodeAction:
    """The quick fix inserting `# torch-mlir-lens: inputs=...` above the module."""
    comment = discovery.input_template(info, doc.text)
    line = (info.decorator_line or info.line) - 1  # above the decorators, if any
    at = types.Position(line=line, character=0)
    edit = types.TextEdit(range=types.Range(start=at, end=at), new_text=comment + "\n")
    return types.CodeAction(
        title=f"Add example inputs for {info.name}",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diag] if diag is not None else None,
        is_preferred=True,
        edit=types.WorkspaceEdit(changes={doc.uri: [edit]}),
    )
