"""Quick fixes that lower a module through proven rewrites: "Lower `aten.erfinv` on TOSA
through a rewrite (max error 3e-07 on the example inputs)".

The diagnostic carries the rewrites the worker proved for its culprit (`data.rewrites`:
target, names, max error; diagnostics/rewrite_offers.py). Applying the fix writes them into
the module's `# torch-mlir-lens:` comment (`rewrites=erfinv@tosa`, rules/rewrite_specs.py):
the user's model code is never edited, and the next check lowers through them.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from torch_mlir_lens import discovery
from torch_mlir_lens.lsp.document import Document
from torch_mlir_lens.rules.rewrite_specs import (
    CommentEdit,
    at_export,
    comment_edit,
    offer_title,
    pin_title,
)
from torch_mlir_lens.rules.targets import target_title


def _text_edit(edit: CommentEdit) -> types.TextEdit:
    start = types.Position(line=edit.line - 1, character=0)
    end = types.Position(line=edit.line if edit.replace else edit.line - 1, character=0)
    return types.TextEdit(range=types.Range(start=start, end=end), new_text=edit.text + "\n")


def _action(doc: Document, info: discovery.ModuleInfo, title: str,
            pairs: list[tuple[str, str | None]], diag: types.Diagnostic,
            preferred: bool) -> types.CodeAction:
    edit = comment_edit(doc.lines, info, pairs)
    return types.CodeAction(
        title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
        is_preferred=preferred,
        edit=types.WorkspaceEdit(changes={doc.uri: [_text_edit(edit)]}),
    )


def rewrite_fixes(doc: Document, info: discovery.ModuleInfo,
                  diag: types.Diagnostic) -> list[types.CodeAction]:
    """One quick fix per backend with a proven rewrite for the diagnostic's culprit, and one
    for all of them when there are several."""
    data: Any = diag.data if isinstance(diag.data, dict) else {}
    offers = [o for o in data.get("rewrites") or []
              if isinstance(o, dict) and o.get("target") and o.get("rewrites")]
    actions = []
    pinned = [o for o in offers if all(at_export(str(n)) for n in o["rewrites"])]
    if pinned:  # a pin (or the specialised export) past an export refusal: applied at
        # export, for every backend at once
        names = list(dict.fromkeys(str(n) for o in pinned for n in o["rewrites"]))
        errors = [o["maxAbs"] for o in pinned if isinstance(o.get("maxAbs"), int | float)]
        return [_action(doc, info, pin_title(names, max(errors) if errors else None),
                        [(n, None) for n in names], diag, preferred=True)]
    for offer in offers:
        names = [str(n) for n in offer["rewrites"]]
        title = offer_title(str(offer.get("op") or diag.code), str(offer["target"]), names,
                            offer.get("maxAbs"))
        pairs: list[tuple[str, str | None]] = [(n, str(offer["target"])) for n in names]
        actions.append(_action(doc, info, title, pairs, diag, preferred=len(offers) == 1))
    if len(offers) > 1:
        names = list(dict.fromkeys(str(n) for o in offers for n in o["rewrites"]))
        errors = [o["maxAbs"] for o in offers if isinstance(o.get("maxAbs"), int | float)]
        worst = f" (max error {max(errors):.2g} on the example inputs)" if errors else ""
        kind = "a rewrite" if len(names) == 1 else f"{len(names)} rewrites"
        where = ", ".join(target_title(str(o["target"])) for o in offers)
        pairs = [(str(n), str(o["target"])) for o in offers for n in o["rewrites"]]
        actions.insert(0, _action(
            doc, info, f"Lower `{offers[0].get('op') or diag.code}` on {where} through "
                       f"{kind}{worst}", pairs, diag, preferred=True))
    return actions


__all__ = ["rewrite_fixes"]
