"""What IREE made of a module, worded once for the editor and the command line: its compiled
time beside eager's, the dispatches a line landed in, a line's share of the dispatch time.

Read from an IREE target's `LowerResult.stats` (docs/contracts.md: `iree`, `dispatches`,
`line_dispatches`, `speed`, `line_costs`) or a Verify's `speed`; plain data in, words out.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from torch_mlir_lens.rules.targets import target_title


def _ms(value: Any) -> str:
    return f"{value:.3g} ms" if isinstance(value, int | float) and not isinstance(value, bool) \
        else "?"


def speed_words(speed: Mapping[str, Any], *, threads: bool = True) -> str:
    """`IREE CPU 0.21 ms · eager 0.35 ms (2 threads)`: a Verify's or a profile's `speed`
    (`threads`: with the thread count)."""
    text = (f"{target_title(str(speed.get('target')))} {_ms(speed.get('compiled_ms'))} · "
            f"eager {_ms(speed.get('eager_ms'))}")
    return f"{text} ({speed.get('threads')} threads)" if threads else text


def not_run_words(stats: Mapping[str, Any]) -> str | None:
    """"compiled, not run: no device" for a module compiled for a device this machine lacks;
    None when it ran here (or did not compile)."""
    iree = stats.get("iree")
    if isinstance(iree, Mapping) and iree.get("compiled") and iree.get("ran_here") is False:
        return "compiled, not run: no device"
    return None


def _same(a: Any, b: str) -> bool:
    return isinstance(a, str) and os.path.normpath(a) == os.path.normpath(b)


def dispatches_of(stats: Mapping[str, Any], path: str, line: int) -> list[dict[str, Any]]:
    """The dispatch regions `path:line` landed in (`stats.line_dispatches`), in IREE's order."""
    wanted: list[int] = []
    for entry in stats.get("line_dispatches") or []:
        if isinstance(entry, Mapping) and entry.get("line") == line and \
                _same(entry.get("file"), path):
            wanted += [i for i in entry.get("dispatches") or [] if isinstance(i, int)]
    by_index = {d.get("index"): d for d in stats.get("dispatches") or []
                if isinstance(d, Mapping)}
    return [dict(by_index[i]) for i in dict.fromkeys(wanted) if i in by_index]


def dispatch_words(dispatch: Mapping[str, Any], path: str) -> str:
    """"dispatch 1 `@main_dispatch_1_matmul_2x32x32_f32` with lines 23, 24 (modeling_x.py:165)":
    the region, the other lines fused into it, the library lines its ops were made at."""
    lines = [str(entry.get("line")) for entry in dispatch.get("lines") or []
             if isinstance(entry, Mapping) and _same(entry.get("file"), path)]
    words = f"dispatch {dispatch.get('index')} `@{dispatch.get('entry') or dispatch.get('name')}`"
    if len(lines) > 1:
        words += f" with lines {', '.join(lines)}"
    library = [f"{os.path.basename(str(entry.get('file')))}:{entry.get('line')}"
               for entry in dispatch.get("library_lines") or [] if isinstance(entry, Mapping)]
    if library:
        words += f" ({', '.join(library[:3])}{' …' if len(library) > 3 else ''})"
    return words


def line_cost(stats: Mapping[str, Any], path: str, line: int) -> dict[str, Any] | None:
    """The profile's cost of `path:line` (`{ms, share}`), if it was profiled and costs any."""
    for cost in stats.get("line_costs") or []:
        if isinstance(cost, Mapping) and cost.get("line") == line and \
                _same(cost.get("file"), path):
            return dict(cost)
    return None


def cost_words(cost: Mapping[str, Any]) -> str:
    """"39% of the compiled module's dispatch time (0.00014 ms per call)"."""
    share = cost.get("share")
    percent = f"{share * 100:.0f}%" if isinstance(share, int | float) else "?"
    return f"{percent} of the compiled module's dispatch time ({_ms(cost.get('ms'))} per call)"
