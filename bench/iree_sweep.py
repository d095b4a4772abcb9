"""The IREE targets over the product's corpora: Linalg → IREE CPU → Verify, GPU compile-only.

    python -m bench.iree_sweep OUT.jsonl [--only REGEX] [--broad N]

One JSON row per module. Corpora: the zoo (`tests/models/hf_zoo.py`, every architecture), a
sample of the broad sweep (`tests/models/broad_zoo.py`: every Nth of the architectures the
product lowered to Linalg in its last run, `bench/BROAD_ZOO.md`), and `examples/`' models.
Each module, through the worker's own job handlers (as a worker runs them): one lowering to
Linalg and the four IREE targets (each target's result says whether IREE compiled it and how
long the compile took; the GPU targets compile without a GPU), then Verify on IREE CPU against
eager, which also times the compiled module against eager on the same inputs and threads.
Each module runs in a forked child under a time limit, so a crash or a hang is a row.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from bench.forked import in_child

ROOT = Path(__file__).resolve().parents[1]
IREE = ("iree-cpu", "iree-cuda", "iree-rocm", "iree-vulkan")
CHILD_LIMIT_S = 600
BROAD_SAMPLE = 20
EXAMPLES = (("mlp.py", "MLP"), ("cnn.py", "SmallCNN"), ("transformer.py", "TinyTransformer"))


def zoo() -> list[dict[str, Any]]:
    """Every architecture of the zoo: its class and file."""
    path = ROOT / "tests" / "models" / "hf_zoo.py"
    names = re.findall(r"^class (\w+)\(nn\.Module\)", path.read_text(), re.MULTILINE)
    return [{"corpus": "zoo", "name": n, "path": str(path), "module": n} for n in names]


def broad(sample: int) -> list[dict[str, Any]]:
    """Every Nth architecture of the broad sweep that the product lowered to Linalg."""
    table = (ROOT / "bench" / "BROAD_ZOO.md").read_text().splitlines()
    lowered = [row.split("|")[1].strip() for row in table
               if row.startswith("| ") and row.count("|") > 5
               and row.split("|")[4].strip().endswith("/ ✓")]
    step = max(1, len(lowered) // sample) if sample else len(lowered) + 1
    chosen = lowered[::step][:sample]
    path = ROOT / "tests" / "models" / "broad_zoo.py"
    return [{"corpus": "broad", "name": t, "path": str(path), "module": "ZooModel",
             "init": f"({t!r},)", "inputs": f"zoo_inputs({t!r})"} for t in chosen]


def examples() -> list[dict[str, Any]]:
    """The example files' models that the README shows."""
    out = []
    for file, module in EXAMPLES:
        path = ROOT / "examples" / file
        if path.is_file() and f"class {module}(" in path.read_text():
            out.append({"corpus": "examples", "name": module, "path": str(path),
                        "module": module})
    return out


def _first_error(result: dict[str, Any]) -> str:
    errors = [d for d in result.get("diagnostics", []) if d.get("severity") == "error"]
    return errors[0]["message"].splitlines()[0][:200] if errors else ""


def measure(model: dict[str, Any], threads: int) -> dict[str, Any]:
    """One module: its lowering, the four IREE compiles, Verify on IREE CPU (eager and IREE
    timed on `threads` threads: the CPU driver takes torch's count when it first runs)."""
    import torch

    from torch_mlir_lens.worker.job_handlers import run_job

    torch.set_num_threads(threads)

    job = {k: model[k] for k in ("path", "module", "init", "inputs") if k in model}
    start = time.perf_counter()
    reply = run_job({"id": 1, "op": "lower", **job, "targets": ["linalg", *IREE]})
    row: dict[str, Any] = {"wall_s": round(time.perf_counter() - start, 3)}
    if not reply["ok"]:
        row["error"] = reply["error"]["message"].splitlines()[0][:200]
        return row
    results = {r["target"]: r for r in reply["result"]["results"]}
    linalg = results["linalg"]
    timings = linalg.get("timings", {})
    row["linalg"] = bool(linalg["ok"])
    row["lowering_s"] = round(sum(timings.get(k, 0.0) for k in (
        "load", "inputs", "export", "import", "lower", "print")), 4)
    for target in IREE:
        result = results[target]
        facts = result.get("stats", {}).get("iree") or {}
        row[target] = {
            "compiled": bool(facts.get("compiled")), "ok": bool(result["ok"]),
            "compile_s": facts.get("compile_s"),
            "dispatches": len(result.get("stats", {}).get("dispatches") or []),
            "error": _first_error(result),
            "located": all(d.get("line") for d in result.get("diagnostics", [])
                           if d.get("severity") == "error"),
        }
    if row["iree-cpu"]["compiled"]:
        verdict = run_job({"id": 2, "op": "verify", **job, "target": "iree-cpu"})
        result = verdict.get("result") or {}
        row["verify"] = {"ok": bool(verdict["ok"] and result.get("ok")),
                         "message": (result.get("message") if verdict["ok"]
                                     else verdict["error"]["message"])[:200],
                         "speed": result.get("speed")}
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out")
    parser.add_argument("--only", default="")
    parser.add_argument("--broad", type=int, default=BROAD_SAMPLE,
                        help="how many architectures of the broad sweep (0: none)")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads of eager and of IREE's CPU driver when timed (default 1: "
                             "a machine shared with other work slows a barrier of several "
                             "threads by whole time slices, which says nothing of either)")
    args = parser.parse_args(argv)
    import torch_mlir.fx  # noqa: F401 - warm once, before the children fork
    import transformers  # noqa: F401

    models = [*examples(), *zoo(), *broad(args.broad)]
    with open(args.out, "w") as out:  # the benchmark's own output file
        for model in models:
            if args.only and not re.search(args.only, model["name"]):
                continue
            row = in_child(measure, model, args.threads, limit_s=CHILD_LIMIT_S) or {"crash": True}
            row.update(corpus=model["corpus"], name=model["name"], threads=args.threads)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(model["corpus"], model["name"], row.get("verify", {}).get("message", ""),
                  file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
