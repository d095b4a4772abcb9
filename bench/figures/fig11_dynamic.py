"""Figure 11: Verify with dynamic batch and sequence, against the same models static.

The thirteen text models of `tests/models/hf_zoo.py` (GPT-2, Llama, Qwen2, Mistral, Phi-3,
BERT, DistilBERT, RoBERTa, T5 encoder, Gemma, OPT, GPT-NeoX, ELECTRA; tiny configs, random
weights), each verified through a warm server (`torchMlirLens/verify`: export, Linalg, LLVM,
JIT, compare with eager) twice: as `tests/models/hf_zoo_dynamic.py` exports it (batch and
sequence dynamic, example of batch 2; BERT, DistilBERT and ELECTRA with the sequence bound
torch.export asks for) at every size Verify picks (the example's, a small one, an odd prime,
the bound), and as its static twin in `hf_zoo.py` (its own example). Recorded per model:
verdict, sizes run, the first line of the message, time. Targets: every model that exports
with dynamic dims verifies at three sizes or more; no worker restart.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench.context import Context, restarts_of
from bench.report import FigureResult, Metric
from bench.stats import median, ratio_samples, spread

NUMBER = 11
NAME = "dynamic"
TITLE = "dynamic-shape Verify, transformers text models"
TIMEOUT_S = 1800.0  # 26 verifications with real weights
IN_SMOKE = False  # tests/test_hf_dynamic.py runs a fast subset; `--only 11 --smoke` works
MODELS_DIR = Path(__file__).resolve().parents[2] / "tests" / "models"
DYNAMIC = MODELS_DIR / "hf_zoo_dynamic.py"
STATIC = MODELS_DIR / "hf_zoo.py"
MODELS = ("GPT2", "Llama", "Qwen2", "Mistral", "Phi3", "Bert", "DistilBert", "Roberta",
          "T5Encoder", "Gemma", "OPT", "GPTNeoX", "Electra")
SMOKE_MODELS = ("Llama", "Bert")
MIN_SIZES = 3


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")[:200]


async def _verify(client: Any, uri: str, module: str) -> dict[str, Any]:
    """One `torchMlirLens/verify`; a module that does not export is answered as an error
    (JSON-RPC, its data's `kind` "export-error")."""
    start = time.perf_counter()
    try:
        res, seconds = await client.request("torchMlirLens/verify",
                                            {"uri": uri, "module": module})
    except Exception as exc:  # the request's error: the module did not get to Verify
        data = getattr(exc, "data", None) or {}
        kind = data.get("kind") if isinstance(data, dict) else None
        return {"ok": False, "sizes": 0, "seconds": round(time.perf_counter() - start, 3),
                "message": _first_line(str(getattr(exc, "message", exc))),
                "export_error": kind == "export-error" or "torch.export failed" in str(exc)}
    res = dict(res or {})
    return {"ok": bool(res.get("ok")), "sizes": len(res.get("sizes") or []),
            "seconds": round(seconds, 3), "message": _first_line(str(res.get("message", ""))),
            "export_error": False}


async def run(ctx: Context) -> FigureResult:
    """Verify each model dynamic and static; count, and time."""
    result = FigureResult(NUMBER, TITLE)
    client = await ctx.warm_server(quiet=True)
    restarts_before = await restarts_of(client)
    names = SMOKE_MODELS if ctx.config.smoke else MODELS
    dynamic_uri, static_uri = client.open(DYNAMIC), client.open(STATIC)
    outcomes: dict[str, dict[str, Any]] = {}
    for name in names:
        outcomes[name] = {
            "dynamic": await _verify(client, dynamic_uri, f"Dynamic{name}"),
            "static": await _verify(client, static_uri, f"Tiny{name}"),
        }
    client.close(dynamic_uri)
    client.close(static_uri)
    _summarize(result, outcomes, await restarts_of(client) - restarts_before)
    return result


def _summarize(result: FigureResult, outcomes: dict[str, dict[str, Any]],
               restarts: int) -> None:
    n = len(outcomes)
    dynamic_ok = [m for m, o in outcomes.items()
                  if o["dynamic"]["ok"] and o["dynamic"]["sizes"] >= MIN_SIZES]
    static_ok = [m for m, o in outcomes.items() if o["static"]["ok"]]
    exported = [m for m, o in outcomes.items() if not o["dynamic"]["export_error"]]
    failing = [f"{m}: {outcomes[m]['dynamic']['message']}" for m in exported
               if m not in dynamic_ok]
    not_exported = [f"{m}: {o['dynamic']['message']}" for m, o in outcomes.items()
                    if o["dynamic"]["export_error"]]
    result.metrics.append(Metric(f"dynamic: verified at >= {MIN_SIZES} sizes",
                                 len(dynamic_ok) / n, "fraction", None,
                                 note=f"{len(dynamic_ok)}/{n}"))
    result.metrics.append(Metric("static twins: verified", len(static_ok) / n, "fraction",
                                 None, note=f"{len(static_ok)}/{n}"))
    result.metrics.append(Metric("dynamic: do not export (torch.export / its decompositions)",
                                 float(len(not_exported)), "count", None,
                                 note="; ".join(not_exported)))
    result.metrics.append(Metric("exported with dynamic dims, yet not verified at "
                                 f">= {MIN_SIZES} sizes", float(len(failing)), "count", 0.0,
                                 "<=", note="; ".join(failing)))
    both = [(o["dynamic"]["seconds"], o["static"]["seconds"]) for m, o in outcomes.items()
            if m in dynamic_ok and m in static_ok]
    if both:
        ratios = ratio_samples([d for d, _ in both], [s for _, s in both])
        lo, hi = spread(ratios)
        result.metrics.append(Metric(
            "dynamic / static Verify time (models both verify)",
            median([d for d, _ in both]) / median([s for _, s in both]), "x", None, "<=",
            ratios, lo, hi))
    result.metrics.append(Metric("worker restarts during the figure", float(restarts),
                                 "count", 0.0, "<="))
    result.details["per model"] = outcomes
