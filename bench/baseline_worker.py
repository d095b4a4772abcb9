"""The plain torch-mlir baseline: a warm process that times `export_and_import` on request.

Run as `python -m bench.baseline_worker [--memory-limit-mb N]` (or by path). It imports torch
and torch-mlir once, then reads one JSON request per line on stdin and answers one JSON line on
stdout (a failed request: `{"ok": false, "error", "traceback", "seconds", "peak_rss_kb"}`):

    {"op": "ping"}                          → {"ok": true, "pid": ...}
    {"op": "lower", "path", "module", "inputs", "init", "output_type"?, "print"?}
        → {"ok": true, "seconds": s, "build_seconds": s, "print_seconds": s, "ir_bytes": n,
           "peak_rss_kb": n}
    {"op": "export", "path", "module", "inputs", "init"}
        → {"ok": true, "seconds": s, "build_seconds": s}   (`torch.export.export` alone; the
          program is kept: a "lower" request with "exported": true lowers it, not a new export)
    {"op": "precision", "path", "module", "inputs", "init", "missed"?}
        → {"ok": true, "checks": {target: [{"op", "file", "line", "instances", "lowers_alone",
           "message", "named"}]}}   (with "missed": also the ops no culprit names that fail
           alone, "named": false)   (the product's culprits, each lowered alone: op_isolation's
           `culprit_precision`; a measurement of the product, never part of the baseline)
    {"op": "quit"}

Only the `export_and_import` call is inside `seconds`: the module and its inputs are built
beforehand (fresh instance, seed 0) so the baseline is exactly what the issue names.
`print` additionally times printing the IR as text with weights elided (reported separately).
`--memory-limit-mb` caps the process's address space (RLIMIT_AS, set before torch is imported):
a model too big for plain torch-mlir then fails with an allocation error instead of taking the
machine down.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any


def peak_rss_kb() -> int:
    """This process's peak resident set size (VmHWM) in kB."""
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def load_namespace(path: str, cache: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Execute the file once (not as __main__) under its real path; cached by content."""
    import runpy

    with open(path) as f:
        key = f"{path}\0{f.read()}"
    if key not in cache:
        folder = os.path.dirname(os.path.abspath(path))
        if folder not in sys.path:
            sys.path.insert(0, folder)  # sibling imports, as the product allows
        cache[key] = runpy.run_path(path, run_name="bench_baseline_model")
    return cache[key]


def build_module(req: dict[str, Any],
                 cache: dict[str, dict[str, Any]]) -> tuple[Any, Any, float]:
    """The module (fresh instance, seed 0) and its inputs, and the seconds it took."""
    import torch

    t0 = time.perf_counter()
    ns = load_namespace(req["path"], cache)
    env = dict(ns)
    env["torch"] = torch
    torch.manual_seed(0)
    init = eval(req.get("init") or "()", env)
    cls = ns[req["module"]]
    module = (cls(**init) if isinstance(init, dict) else cls(*init)).eval()
    inputs = eval(req["inputs"], env)
    return module, inputs, time.perf_counter() - t0


def export(req: dict[str, Any], cache: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Build the module and inputs, then time `torch.export.export` alone."""
    import torch

    module, inputs, build_s = build_module(req, cache)
    t1 = time.perf_counter()
    _exported.clear()
    _exported[_request_key(req)] = torch.export.export(module, tuple(inputs), strict=False)
    return {"ok": True, "seconds": time.perf_counter() - t1, "build_seconds": build_s}


# The last exported program, by request: `export_and_import` takes one as well as a module.
_exported: dict[tuple[str, ...], Any] = {}


def _request_key(req: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(req.get(k)) for k in ("path", "module", "inputs", "init"))


def precision(req: dict[str, Any], cache: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The product's culprits for each backend, each checked alone (does it lower alone?)."""
    from dataclasses import asdict

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if root not in sys.path:
        sys.path.append(root)  # run by path, `bench` is not importable otherwise
    from bench.culprit_precision import culprit_precision

    module, inputs, _build_s = build_module(req, cache)
    from torch_mlir_lens.worker.ir import crash_guard

    # Every pipeline in a child: a module whose lowering kills torch-mlir (a graph network's
    # index on Linalg: SIGSEGV) is checked, not the end of this process.
    with crash_guard.guarded():
        checks = culprit_precision(module, tuple(inputs), module_name=req["module"],
                                   user_files=[req["path"]], missed=bool(req.get("missed")))
    return {"ok": True, "checks": {t: [asdict(c) for c in cs] for t, cs in checks.items()}}


def lower(req: dict[str, Any], cache: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Build the module and inputs, then time one `export_and_import` call."""
    from torch_mlir import fx

    program = _exported.get(_request_key(req)) if req.get("exported") else None
    if program is not None:  # lowered from the program "export" made (no export again)
        module, inputs, build_s = program, (), 0.0
    else:
        module, inputs, build_s = build_module(req, cache)

    t1 = time.perf_counter()
    out = fx.export_and_import(
        module, *inputs, output_type=req.get("output_type", "linalg-on-tensors")
    )
    seconds = time.perf_counter() - t1

    reply: dict[str, Any] = {"ok": True, "seconds": seconds, "build_seconds": build_s}
    if req.get("print"):
        t2 = time.perf_counter()
        text = out.operation.get_asm(large_resource_limit=16)
        reply["print_seconds"] = time.perf_counter() - t2
        reply["ir_bytes"] = len(text.encode())
    reply["peak_rss_kb"] = peak_rss_kb()
    return reply


def limit_memory(argv: list[str]) -> None:
    """Apply `--memory-limit-mb N` (RLIMIT_AS) to this process, if given."""
    import resource

    if "--memory-limit-mb" in argv:
        limit = int(argv[argv.index("--memory-limit-mb") + 1]) * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main() -> int:
    """Serve requests until stdin closes or a quit request."""
    limit_memory(sys.argv[1:])
    t0 = time.perf_counter()
    import torch  # noqa: F401  (warm: the imports are the cold cost)
    import torch_mlir.fx  # noqa: F401

    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but replies on the reply stream
    out.write(json.dumps({"ready": True, "import_seconds": time.perf_counter() - t0}) + "\n")
    out.flush()
    cache: dict[str, dict[str, Any]] = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        op = req.get("op")
        if op == "quit":
            break
        started = time.perf_counter()
        try:
            if op == "ping":
                reply: dict[str, Any] = {"ok": True, "pid": os.getpid()}
            elif op == "lower":
                reply = lower(req, cache)
            elif op == "export":
                reply = export(req, cache)
            elif op == "precision":
                reply = precision(req, cache)
            else:
                reply = {"ok": False, "error": f"unknown op {op!r}"}
        except Exception as exc:  # report, stay alive
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000],
                     "traceback": traceback.format_exc()[-4000:],
                     "seconds": time.perf_counter() - started, "peak_rss_kb": peak_rss_kb()}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
