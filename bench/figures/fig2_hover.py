"""Figure 2: hover latency from cache on the lowered 20-layer model.

The LM is lowered once (linalg, the default hover target). Every distinct line of the forward
bodies of the LM's classes is hovered once untimed (a line in `Block` may make the server lower
`Block` on its own), then 200 hovers on random lines (seed 0) are timed through the real client.
Target: p95 ≤ 20 ms.
"""

from __future__ import annotations

import ast
import random
from pathlib import Path

from tests.harness.lsp_session import hover_text

from bench.context import Context, check_lower
from bench.models import lm20
from bench.report import FigureResult, Metric, metric_from_samples
from bench.stats import percentile, spread

NUMBER = 2
NAME = "hover"
TITLE = "Hover from cache"
TARGET_P95_MS = 20.0
LM_CLASSES = {"TransformerLM", "Block", "Attention", "FeedForward"}


def forward_lines(path: Path, classes: set[str]) -> list[tuple[int, int]]:
    """(0-based line, column of its first character) of each line in the classes' forwards."""
    text = path.read_text()
    lines = text.splitlines()
    out = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name in classes:
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
                    first = fn.body[0].lineno
                    if isinstance(fn.body[0], ast.Expr):  # skip a docstring
                        first = fn.body[1].lineno if len(fn.body) > 1 else first
                    for ln in range(first, (fn.end_lineno or first) + 1):
                        src = lines[ln - 1]
                        if src.strip() and not src.strip().startswith("#"):
                            out.append((ln - 1, len(src) - len(src.lstrip()) + 2))
    return out


async def run(ctx: Context) -> FigureResult:
    """Lower the LM, warm every line, time random hovers."""
    result = FigureResult(NUMBER, TITLE)
    model = lm20(ctx.work, tiny=ctx.config.smoke)
    client = await ctx.warm_server()
    uri = client.open(model.path)
    res, t_lower = await client.lower(uri, model.module, "linalg")
    check_lower(res, "lm lower")
    await client.wait_idle()  # the check's other targets may follow the answer
    candidates = forward_lines(model.path, LM_CLASSES)

    warm_times, with_ir, slow = [], set(), []
    source = model.path.read_text().splitlines()
    for line, col in candidates:
        hov, t = await client.hover(uri, line, col)
        warm_times.append(t)
        if "mlir" in hover_text(hov) or "linalg" in hover_text(hov):
            with_ir.add(line)
        if t > 1:  # the hover lowered something on demand
            slow.append(f"line {line + 1} `{source[line].strip()}`: {t:.1f} s, "
                        f"{'IR' if line in with_ir else 'no IR'}")

    rng = random.Random(0)
    picks = [rng.choice(candidates) for _ in range(ctx.config.hovers)]
    times, empty = [], 0
    for line, col in picks:
        hov, t = await client.hover(uri, line, col)
        times.append(t * 1000)
        empty += not hover_text(hov)
    client.close(uri)

    p95 = percentile(times, 95)
    lo, hi = spread(times)
    result.metrics.append(Metric("hover p95", p95, "ms", TARGET_P95_MS, "<=", times, lo, hi))
    result.metrics.append(Metric("hover p50", percentile(times, 50), "ms", None, "<=", [], lo, hi))
    result.metrics.append(metric_from_samples("first hover per line (warm-up)",
                                              [x * 1000 for x in warm_times], "ms", None))
    result.details.update({
        "model": model.name,
        "hovers": len(times),
        "distinct lines": len(candidates),
        "lines whose hover shows IR": len(with_ir),
        "timed hovers with no content": empty,
        "lowering the model (s)": round(t_lower, 3),
        "slow warm-up hovers (> 1 s, lowered on demand)": slow or "none",
    })
    return result
