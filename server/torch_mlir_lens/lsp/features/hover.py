"""Hover: the MLIR a source line became, at the default target, plus a verdict per backend.

Any line whose ops map to it counts, at any depth of the user-frame chain: the line in a
submodule's `forward` and the parent line that called the submodule both show the ops. A line
that calls into library code (a wrapped `transformers` model) also gets a table of the library
lines its ops come from (`library_hover.py`); with an IREE target lowered, the dispatch regions
the line landed in and, once timed, its share of the time (`iree_view.py`).
Answers from the document's cached check results when it can; otherwise lowers the module
under the cursor on demand (with work-done progress), at the default target only: the other
backends' verdicts fill in when the check's follow-up stage is done. A line that produced
no ops gets no hover (null), never an empty one.
"""

from __future__ import annotations

import logging
import os
import re
from typing import TYPE_CHECKING

from lsprotocol import types

from torch_mlir_lens import discovery
from torch_mlir_lens.findings import iree as iree_words
from torch_mlir_lens.lsp.checks import cell_positions, staging
from torch_mlir_lens.lsp.document import Document
from torch_mlir_lens.lsp.features import iree_view, library_hover
from torch_mlir_lens.lsp.wire import convert
from torch_mlir_lens.protocol.frames import in_installed_package
from torch_mlir_lens.protocol.results import ErrorKind, LensError, LowerResult
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.rules.targets import target_title
from torch_mlir_lens.rules.verdict import backend_verdict

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

log = logging.getLogger(__name__)

MAX_IR_LINES = 24
MAX_IR_LINE_CHARS = 160
MAX_ON_DEMAND = 3  # modules lowered at most for one hover
_CALL = re.compile(r"\bcall @([\w.$-]+)\(")
_CONSTANT = re.compile(r"= (arith\.constant|torch\.vtensor\.literal|\"tosa\.const\"|"
                       r"stablehlo\.constant|torch\.constant\.)")


async def hover(session: Session, params: types.HoverParams) -> types.Hover | None:
    """`textDocument/hover`: the IR a line became and each backend's verdict."""
    doc, cell = cell_positions.resolve(session, params.text_document.uri)
    if doc is None or not doc.path:
        return None
    if cell is None:
        return await hover_line(session, doc, params.position.line + 1,
                                params.work_done_token)
    if not 0 <= params.position.line < cell.count:
        return None
    line = cell_positions.program_line(cell, params.position.line) + 1
    found = await hover_line(session, doc, line, params.work_done_token)
    if found is not None:
        cell_positions.hover_in_cell(cell, found, line)
    return found


async def hover_line(
    session: Session,
    doc: Document,
    line: int,
    token: types.ProgressToken | None = None,
) -> types.Hover | None:
    """The hover of 1-based `line`, lowering on demand when no cached result covers it."""
    lines = doc.lines
    if not 0 < line <= len(lines):
        return None
    code_line = lines[line - 1]
    code = code_line.strip()
    if not code or code.startswith("#"):
        return None
    modules = session.modules_of(doc)
    order = _preferred_order(modules, line)
    target = session.settings.default_target

    found = _from_cache(doc, order, target, line)
    # Library code opened for reading (an installed package) is never lowered on demand.
    if found is None and session.trust.covers(doc.path) and not in_installed_package(doc.path):
        stamp = doc.stamp()
        if _no_ops_here(doc, modules, line, target):
            return None
        for info in _candidates(modules, line, code_line):
            if doc.result(info.name, target) is not None:
                continue  # already lowered: that result does not map the line
            try:
                results = await staging.check_target(
                    session, doc, info.name, target, progress_token=token, progress=True)
            except LensError as err:
                if err.kind == ErrorKind.CANCELLED:
                    return None
                log.info("hover: %s could not be lowered: %s", info.name, err.message)
                continue
            if not doc.is_current(stamp):
                return None  # the text changed meanwhile: this hover is stale
            result = results.get(target)
            if result is not None and _ir_lines(result, doc.path, line):
                found = (info.name, result)
                break
    if found is None:
        return None
    module, result = found
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown,
            value=render(session, doc, module, result, line),
        ),
        range=convert.line_range(lines, line),
    )


def _preferred_order(modules: list[discovery.ModuleInfo], line: int) -> list[str]:
    """Module names, the one under the cursor first, then its parents, then the rest."""
    here = discovery.module_at_line(modules, line)
    names: list[str] = []
    if here is not None:
        names.append(here.name)
        names.extend(getattr(here, "parent_candidates", None) or [])
    names.extend(m.name for m in modules)
    return list(dict.fromkeys(names))


def _from_cache(
    doc: Document, order: list[str], target: str, line: int
) -> tuple[str, LowerResult] | None:
    for name in order:
        result = doc.result(name, target)
        if result is not None and _ir_lines(result, doc.path, line):
            return name, result
    return None


def _candidates(
    modules: list[discovery.ModuleInfo], line: int, code_line: str
) -> list[discovery.ModuleInfo]:
    """Modules worth lowering for this line.

    Inside a module: that module, then the modules that use it (its ops may only show
    inside them). Inside a plain helper (an indented line outside every module): the file's
    top modules, whose check the diagnostics run anyway. Module-level code: none.
    """
    by_name = {m.name: m for m in modules}
    here = discovery.module_at_line(modules, line)
    if here is not None:
        names = [here.name, *(getattr(here, "parent_candidates", None) or [])]
    elif code_line[:1].isspace():
        names = [m.name for m in modules if m.inputs not in ("missing", "derived")]
    else:
        return []
    known = [by_name[n] for n in dict.fromkeys(names)
             if n in by_name and by_name[n].inputs != "missing"]
    return known[:MAX_ON_DEMAND]


def _ancestors(modules: list[discovery.ModuleInfo], here: discovery.ModuleInfo) -> list[str]:
    """The modules using `here`, transitively (nearest first)."""
    by_name = {m.name: m for m in modules}
    out: list[str] = []
    todo = list(here.parent_candidates)
    while todo:
        name = todo.pop(0)
        if name in out or name == here.name:
            continue
        out.append(name)
        parent = by_name.get(name)
        if parent is not None:
            todo.extend(parent.parent_candidates)
    return out


def _no_ops_here(
    doc: Document, modules: list[discovery.ModuleInfo], line: int, target: str
) -> bool:
    """Whether a cached ancestor result shows the line simply produced no ops.

    When an ancestor's result maps lines of this module's `forward` but not `line` (e.g.
    `b, t, d = x.shape`), lowering the module on its own would not map it either: the
    hover answers null at once instead of lowering on demand.
    """
    here = discovery.module_at_line(modules, line)
    if here is None or here.forward_line is None or not doc.path:
        return False
    first, last = here.forward_line, here.forward_end_line or here.forward_line
    want = os.path.normcase(os.path.normpath(doc.path))
    for name in _ancestors(modules, here):
        result = doc.result(name, target)
        if result is not None and any(
            first <= m.line <= last and os.path.normcase(os.path.normpath(m.file)) == want
            for m in result.map
        ):
            return True
    return False


def _ir_lines(result: LowerResult, path: str | None, line: int) -> list[int]:
    """The (sorted) IR lines mapped to `line` of `path` at any depth."""
    if not path:
        return []
    want = os.path.normcase(os.path.normpath(path))
    hits = {
        m.ir_line for m in result.map
        if m.line == line and os.path.normcase(os.path.normpath(m.file)) == want
    }
    return sorted(hits)


def render(
    session: Session, doc: Document, module: str, result: LowerResult, line: int
) -> str:
    """Markdown: header, fenced `mlir` block (cut when long), one verdict line."""
    ir = result.ir.splitlines()
    wanted = [n for n in _ir_lines(result, doc.path, line) if 0 < n <= len(ir)]
    # Computations first, constants (weights) after, when not all fit.
    kept = sorted(sorted(wanted, key=lambda n: _CONSTANT.search(ir[n - 1]) is not None)
                  [:MAX_IR_LINES])
    shown = [_clip(ir[n - 1]) for n in kept]
    rest = len(wanted) - len(shown)
    title = target_title(result.target)
    header = f"**{title}** · `{module}` · line {line}"
    if result.partial:
        bad = culprits.culprit_diagnostics(result.diagnostics)
        where = ", ".join(dict.fromkeys(
            culprits.located(d, doc.path).removeprefix("line ") for d in bad))
        header += f" — partial {title} IR: ops of line{'s' if len(bad) != 1 else ''} " \
                  f"{where} left unlowered (marked in the IR)"
    elif not result.ok:
        header += f" — {title} lowering failed; showing the last IR reached"
    body = "\n".join(_dedent(shown))
    if rest > 0:
        body += f"\n// … {rest} more line{'s' if rest != 1 else ''}"
    parts = [header]
    library = library_hover.section(result, doc.path or "", line)
    if library:
        parts.append(library)
    parts.append(f"```mlir\n{body}\n```")
    blocks = block_functions(result, [ir[n - 1] for n in kept])
    if blocks:
        parts.append(blocks)
    iree = iree_view.hover_section(doc, module, line)
    if iree:
        parts.append(iree)
    verdict = verdict_line(session, doc, module, line)
    if verdict:
        parts.append(verdict)
    return "\n\n".join(parts)


def block_functions(result: LowerResult, lines: list[str]) -> str:
    """Where the repeated blocks called on these IR lines are: "`@Block` (line 949 of the IR:
    one function for the 80 calls of `Block`)". Empty when the lines call none."""
    stitched = {b.get("function"): b for b in result.stats.get("blocks") or []
                if isinstance(b, dict)}
    called = [name for name in dict.fromkeys(m.group(1) for text in lines
                                             for m in _CALL.finditer(text))
              if name in stitched]
    if not called:
        return ""
    ir = result.ir.splitlines()
    found = []
    for name in called:
        defined = next((i for i, text in enumerate(ir, start=1)
                        if f"func.func private @{name}(" in text), None)
        where = f"line {defined} of the IR" if defined else "in the IR"
        block = stitched[name]
        found.append(f"`@{name}` ({where}: one function for the {block.get('calls')} calls "
                     f"of `{block.get('class')}`)")
    return "Repeated block: " + "; ".join(found) + " · inline form: the pane's " \
        "*Show Repeated Blocks Inline* button or the `stitchBlocks` setting"


def verdict_line(session: Session, doc: Document, module: str, line: int) -> str:
    """"linalg ✓ · tosa ✗ aten.roll · stablehlo …": each diagnosed backend's verdict.

    "…" marks a backend still being checked (the follow-up stage after the default target);
    a backend that will not be checked (the module failed as a whole) is left out.
    """
    parts = []
    want = os.path.normcase(os.path.normpath(doc.path or ""))
    for target in session.settings_for(doc.path).diagnostic_targets:
        result = doc.result(module, target)
        if result is None:
            if doc.error(module) is None:
                parts.append(f"{target} …")
            continue
        verdict = backend_verdict(result)  # the rule of `check` and the verdict lens
        ops = [
            (d.cause or convert.short_op(d.op) or "?") + (f" ({d.reason})" if d.reason else "")
            for d in verdict.culprits
            if d.line == line
            and (d.file is None or os.path.normcase(os.path.normpath(d.file)) == want)
        ]
        if ops:
            parts.append(f"{target} ✗ {', '.join(dict.fromkeys(ops))}")
        elif verdict.failed and verdict.error is not None and \
                verdict.error.kind == ErrorKind.MISSING_DEPENDENCY:
            parts.append(f"{target} ✗ (not installed)")
        elif verdict.failed:
            parts.append(f"{target} ✗ (lowering failed)")
        elif result.rewrites:  # its IR marks the ops each rewrite made (`// rewrite NAME`)
            parts.append(f"{target} ✓ through rewrite {', '.join(result.rewrites)}")
        elif iree_words.not_run_words(result.stats):
            parts.append(f"{target} ✓ ({iree_words.not_run_words(result.stats)})")
        else:  # ok, or its unsupported ops are on other lines
            parts.append(f"{target} ✓")
    return " · ".join(parts)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_IR_LINE_CHARS else text[: MAX_IR_LINE_CHARS - 1] + "…"


def _dedent(lines: list[str]) -> list[str]:
    indent = min((len(s) - len(s.lstrip()) for s in lines if s.strip()), default=0)
    return [s[indent:] for s in lines]
