"""Code lenses above each module, from the AST alone (no lowering).

Known inputs: "Show Linalg IR", "Show TOSA IR", … (`lensTargets`; the client's
`torchMlirLens.showIr` opens the IR pane), "Export…" and "Verify" (then its verdict, e.g.
"✓ matches eager (max err 3e-08)"); once the module has been checked, a verdict lens
"Linalg ✓ · TOSA ✗ 3 ops · StableHLO ✓". Unknown inputs: "Set example inputs",
whose command explains how.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from torch_mlir_lens import discovery
from torch_mlir_lens.lsp.checks import cell_positions, verify_view
from torch_mlir_lens.lsp.document import Document, Verdict
from torch_mlir_lens.lsp.wire import convert, lens_specs
from torch_mlir_lens.protocol.frames import in_installed_package
from torch_mlir_lens.rules.targets import target_title

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

SHOW_IR, EXPORT, EXPLAIN_INPUTS, VERIFY = (lens_specs.SHOW_IR, lens_specs.EXPORT,
                                          lens_specs.EXPLAIN_INPUTS, lens_specs.VERIFY)


def code_lens(session: Session, params: types.CodeLensParams) -> list[types.CodeLens]:
    """`textDocument/codeLens`: the document's lenses (a notebook cell's, in a cell)."""
    doc, cell = cell_positions.resolve(session, params.text_document.uri)
    if doc is None:
        return []
    found = lenses(session, doc)
    return cell_positions.lenses_in_cell(cell, found) if cell is not None else found


def lenses(session: Session, doc: Document) -> list[types.CodeLens]:
    """Every lens of a document (none in installed packages: library code is for reading)."""
    out: list[types.CodeLens] = []
    if in_installed_package(doc.path):
        return out
    lines = doc.lines
    modules = session.modules_of(doc)
    for info in modules:
        if not lens_specs.shows_lenses(info):
            continue
        rng = convert.name_range(lines, info.line, info.name_col, info.name_end_col, info.name)
        out.extend(module_lenses(session, doc, info, rng))
    return out


def module_lenses(
    session: Session, doc: Document, info: discovery.ModuleInfo, rng: types.Range
) -> list[types.CodeLens]:
    """The lenses of one module (`lens_specs.module_lens_specs`)."""
    settings = session.settings_for(doc.path)
    verdicts = doc.verdicts(info.name)
    verdict = (verdict_title(verdicts, settings.diagnostic_targets, settings.default_target)
               if verdicts else None)
    specs = lens_specs.module_lens_specs(
        doc.uri, info, settings.lens_targets, settings.default_target,
        verify_view.lens_title(doc.verify_result(info.name)), verdict)
    return [_lens(rng, title, command, arguments) for title, command, arguments in specs]


def verdict_title(
    verdicts: dict[str, Verdict], backends: tuple[str, ...], default_target: str
) -> tuple[str, str]:
    """"Linalg ✓ · TOSA ✗ 3 ops · StableHLO ✓", and the target its click shows."""
    parts = []
    first_bad = None
    errors = {v.error for v in verdicts.values() if v.error}
    if errors and all(v.error for v in verdicts.values()):
        message = next(iter(errors)).splitlines()[0] if errors else ""
        if len(message) > 60:
            message = message[:57] + "…"
        return f"✗ {message}", default_target
    for target in backends:
        verdict = verdicts.get(target)
        if verdict is None:
            continue
        if verdict.ok:
            n = len(verdict.rewrites)
            through = f" with {n} rewrite{'s' if n != 1 else ''}" if n else ""
            parts.append(f"{target_title(target)} ✓{through}")
            continue
        first_bad = first_bad or target
        if verdict.unsupported:
            n = len(verdict.unsupported)
            parts.append(f"{target_title(target)} ✗ {n} op{'s' if n != 1 else ''}")
        else:
            parts.append(f"{target_title(target)} ✗")
    return " · ".join(parts), first_bad or default_target


def _lens(rng: types.Range, title: str, command: str, arguments: list[object]) -> types.CodeLens:
    return types.CodeLens(
        range=rng, command=types.Command(title=title, command=command, arguments=arguments)
    )
