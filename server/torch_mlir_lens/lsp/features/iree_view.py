"""The IREE targets in the editor: the lenses that verify and time a module on IREE CPU, and
the hover's account of what IREE made of a line.

Shown when IREE CPU is checked (`diagnosticTargets` or `defaultTarget` names it): "Verify on
IREE CPU" (then its verdict: the compiled module run on IREE's runtime against eager) and
"Time on IREE CPU" (then "IREE CPU 0.044 ms · eager 19.8 ms": `torchMlirLens.profile`, which
also gives each line its share of the time, the client's heat band). The hover names the
dispatch regions a line landed in, its share of the profiled time and the module's time beside
eager's. The words are `findings/iree.py`'s, read from the results the document holds.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch_mlir_lens.findings import iree as iree_words
from torch_mlir_lens.lsp.checks import verify_view
from torch_mlir_lens.lsp.document import Document
from torch_mlir_lens.lsp.wire import lens_specs
from torch_mlir_lens.rules.iree_targets import IREE_TARGETS, is_iree_target
from torch_mlir_lens.rules.targets import target_title

CPU = "iree-cpu"  # the one IREE target that runs here (the others compile only)
VERIFY_TITLE = f"Verify on {target_title(CPU)}"
TIME_TITLE = f"Time on {target_title(CPU)}"


def lenses(doc: Document, module: str,
           check_targets: Sequence[str]) -> list[lens_specs.LensSpec]:
    """Verify and time the module on IREE CPU, when a check compiles it (with the last
    verdict and time as their titles); none otherwise, nor timing once it does not compile."""
    if CPU not in check_targets:
        return []
    args = [{"uri": doc.uri, "module": module, "target": CPU}]
    verified = doc.verify_result(module, on=is_iree_target)
    verify_title = VERIFY_TITLE if verified is None else \
        f"{target_title(CPU)} {verify_view.lens_title(verified)}"
    out: list[lens_specs.LensSpec] = [(verify_title, lens_specs.VERIFY, args)]
    result = doc.result(module, CPU)
    if result is not None and not result.ok:
        return out
    speed = (result.stats.get("speed") if result is not None else None) or \
        (verified.speed if verified is not None else None)
    time_title = iree_words.speed_words(speed, threads=False) if speed else TIME_TITLE
    out.append((time_title, lens_specs.PROFILE, args))
    return out


def hover_section(doc: Document, module: str, line: int) -> str:
    """Markdown: per IREE target the document has a result of, the dispatch regions `line`
    landed in and its share of the profiled time, then the module's time beside eager's.
    Empty when no IREE target was lowered or the line landed in none."""
    path = doc.path or ""
    rows: list[str] = []
    speeds: list[str] = []
    for target in IREE_TARGETS:
        result = doc.result(module, target)
        if result is None:
            continue
        stats = result.stats
        found = [iree_words.dispatch_words(d, path)
                 for d in iree_words.dispatches_of(stats, path, line)]
        cost = iree_words.line_cost(stats, path, line)
        if found:
            row = f"**{target_title(target)}**: in {'; '.join(found)}"
            if cost:
                row += f" · {iree_words.cost_words(cost)}"
            rows.append(row)
        speed = stats.get("speed")
        if isinstance(speed, dict) and speed:
            speeds.append(iree_words.speed_words(speed))
    return "\n\n".join([*rows, *speeds]) if rows else ""
