"""Code lenses above each module, from the AST alone (no lowering).

Known inputs: "Show Linalg IR", "Show TOSA IR", … (`lensTargets`; the client's
`torchMlirLens.showIr` opens the IR pane), "Export…" and "Verify" (then its verdict, e.g.
"✓ matches eager (max err 3e-08)"); once the module has been checked, a verdict lens
"Linalg ✓ · TOSA ✗ 3 ops · StableHLO ✓" (with the IREE targets diagnosed: "IREE CPU ✓ ·
ROCm ✓ (not run) · CUDA ✗ 1 op", and IREE CPU's Verify and timing lenses: `iree_view.py`).
Unknown inputs: "Set example inputs", whose command explains how.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from torch_mlir_lens import discovery
from torch_mlir_lens.lsp.checks import cell_positions, verify_view
from torch_mlir_lens.lsp.document import Document, Verdict
from torch_mlir_lens.lsp.features import iree_view
from torch_mlir_lens.lsp.wire import convert, lens_specs
from torch_mlir_lens.protocol.frames import in_installed_package
from torch_mlir_lens.protocol.results import ErrorKind
from torch_mlir_lens.rules.iree_targets import is_iree_target
from torch_mlir_lens.rules.targets import target_title

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

SHOW_IR, EXPORT, EXPLAIN_INPUTS, VERIFY = (lens_specs.SHOW_IR, lens_specs.EXPORT,
                                          lens_specs.EXPLAIN_INPUTS, lens_specs.VERIFY)
MISSING = ErrorKind.MISSING_DEPENDENCY


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
        verify_view.lens_title(doc.verify_result(info.name, on=not_iree)), verdict,
        iree_view.lenses(doc, info.name, settings.check_targets))
    return [_lens(rng, title, command, arguments) for title, command, arguments in specs]


def not_iree(target: str) -> bool:
    """A Verify the plain Verify lens shows (IREE's runs have a lens of their own)."""
    return not is_iree_target(target)


def verdict_title(
    verdicts: dict[str, Verdict], backends: tuple[str, ...], default_target: str
) -> tuple[str, str]:
    """"Linalg ✓ · TOSA ✗ 3 ops · StableHLO ✓ · IREE CPU ✓ · ROCm ✓ (not run)", and the
    target its click shows. IREE's targets after the first drop "IREE" (`titles`); one whose
    compiler is not installed says so."""
    parts = []
    first_bad = None
    errors = {v.error for v in verdicts.values() if v.error}
    if errors and all(v.error and v.error_kind != MISSING for v in verdicts.values()):
        message = next(iter(errors)).splitlines()[0] if errors else ""
        if len(message) > 60:
            message = message[:57] + "…"
        return f"✗ {message}", default_target
    titles = compact_titles([t for t in backends if t in verdicts])
    for target in backends:
        verdict = verdicts.get(target)
        if verdict is None:
            continue
        title = titles[target]
        if verdict.ok:
            n = len(verdict.rewrites)
            through = f" with {n} rewrite{'s' if n != 1 else ''}" if n else ""
            parts.append(f"{title} ✓{through}{' (not run)' if verdict.not_run else ''}")
            continue
        first_bad = first_bad or target
        if verdict.unsupported:
            n = len(verdict.unsupported)
            parts.append(f"{title} ✗ {n} op{'s' if n != 1 else ''}")
        elif verdict.error_kind == MISSING:
            parts.append(f"{title} ✗ not installed")
        else:
            parts.append(f"{title} ✗")
    return " · ".join(parts), first_bad or default_target


def compact_titles(targets: list[str]) -> dict[str, str]:
    """Each target's title in a verdict lens: "IREE CPU", then "ROCm", "CUDA" for the IREE
    targets after the first (their "IREE" said once)."""
    out: dict[str, str] = {}
    said = False
    for target in targets:
        title = target_title(target)
        if is_iree_target(target):
            title = title.removeprefix("IREE ") if said else title
            said = True
        out[target] = title
    return out


def _lens(rng: types.Range, title: str, command: str, arguments: list[object]) -> types.CodeLens:
    return types.CodeLens(
        range=rng, command=types.Command(title=title, command=command, arguments=arguments)
    )
