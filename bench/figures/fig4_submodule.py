"""Figure 4: lowering one `Block` of the 20-layer model on its own vs the whole model.

`Block` has no inputs comment: the product derives its inputs from the annotated top model
(one eager forward with hooks). The whole model is lowered with every layer inline (each
traced: what a block on its own saves) and, for information, stitched (its layers traced
once: `stitchBlocks`, figure 14), which is cheaper than the block alone. Each run changes the
text first (cache miss for all, the derivation included), interleaved, order rotating, one
untimed warm-up.
Target: median(Block) / median(whole model, every layer inline) ≤ 0.15.
"""

from __future__ import annotations

from bench.context import Context, bump, check_lower
from bench.models import lm20
from bench.report import FigureResult, Metric, metric_from_samples
from bench.stats import median, ratio_samples, spread

NUMBER = 4
NAME = "submodule"
TITLE = "Submodule on its own"
TARGET = 0.15
SUBMODULE = "Block"


async def run(ctx: Context) -> FigureResult:
    """Time Block vs TransformerLM lowerings through the warm server."""
    result = FigureResult(NUMBER, TITLE)
    model = lm20(ctx.work, tiny=ctx.config.smoke)
    client = await ctx.warm_server()
    original = model.path.read_text()
    uri = client.open(model.path, original)
    # (module, every layer inline?) → its times
    runs: dict[tuple[str, bool], list[float]] = {
        (SUBMODULE, False): [], (model.module, True): [], (model.module, False): []}
    kinds = list(runs)
    sources = set()
    n = 0
    for k in range(-1, ctx.config.fig4_repeats):  # k = -1: warm-up
        shift = max(k, 0) % len(kinds)
        for name, inline in kinds[shift:] + kinds[:shift]:
            n += 1
            if k >= 0:  # the warm-up keeps the opened text: it joins the opening check
                client.change(uri, bump(original, n))
            res, t = await client.lower(uri, name, "linalg", inlineBlocks=inline)
            res = check_lower(res, f"lower {name}")
            await client.wait_idle()  # follow-up work after the answer stays out of timings
            if name == SUBMODULE:
                sources.add(str(res.get("inputsSource") or res.get("inputs_source") or "?"))
            if k >= 0:
                runs[(name, inline)].append(t)
    client.close(uri)
    block, whole = runs[(SUBMODULE, False)], runs[(model.module, True)]
    ratio = median(block) / median(whole)
    ratios = ratio_samples(block, whole)
    lo, hi = spread(ratios)
    result.metrics += [
        Metric("Block / whole model (every layer inline)", ratio, "x", TARGET, "<=", ratios,
               lo, hi),
        metric_from_samples("Block (derived inputs)", block, "s", None),
        metric_from_samples("whole model, every layer inline", whole, "s", None),
        metric_from_samples("whole model, layers traced once (stitched)",
                            runs[(model.module, False)], "s", None),
    ]
    result.details.update({"model": model.name, "Block inputs source": ", ".join(sorted(sources))})
    return result
