"""Every model of the onnx wheel's test data, per backend: plain torch-mlir against the product.

    python -m bench.onnx_sweep OUT.jsonl [--only REGEX]

One JSON row per (model, backend). Plain: what `torch-mlir-import-onnx` does (`onnx.load`, the
checker and shape inference, the importer) then `torch-onnx-to-torch-backend-pipeline` and the
backend's pipeline, in this process. The product: the worker's ONNX lowerer
(worker/onnx/) as the model is, then with `--rewrites auto` (its proven fixes); where it
lowers, Verify against onnxruntime. Each model is tried in a forked child, so a crash of
torch-mlir is a row, not the end of the sweep.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from bench.forked import in_child

BACKENDS = ("linalg", "tosa", "stablehlo")
PIPELINES = {b: f"builtin.module(torch-onnx-to-torch-backend-pipeline,"
                f"torch-backend-to-{'linalg-on-tensors' if b == 'linalg' else b}-backend-pipeline)"
             for b in BACKENDS}


def models() -> list[Path]:
    """The test models of the onnx wheel (`real/` holds no model files)."""
    import onnx

    data = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data"
    found = sorted(data.glob("*/*/model.onnx")) + sorted(data.glob("light/*.onnx"))
    return [p for p in found if "/real/" not in str(p)]


def model_name(path: Path) -> str:
    """`pytorch-converted/test_AvgPool1d`, `light/light_vgg19`: a model as rows name it."""
    if path.name == "model.onnx":
        return f"{path.parent.parent.name}/{path.parent.name}"
    return f"light/{path.stem}"


def plain(path: Path) -> dict[str, bool]:
    """Per backend: does plain torch-mlir (the import tool's steps, the pipelines) lower it."""
    import onnx
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.extras import onnx_importer
    from torch_mlir.passmanager import PassManager

    out = dict.fromkeys(BACKENDS, False)
    try:
        model = onnx.load(str(path))
        try:
            onnx.checker.check_model(model)
            model = onnx.shape_inference.infer_shapes(model, data_prop=True)
        except ValueError:
            pass
        ctx = ir.Context()
        torch_d.register_dialect(ctx)
        ctx.emit_error_diagnostics = False
        info = onnx_importer.ModelInfo(model)
        module = info.create_module(context=ctx).operation
        onnx_importer.NodeImporter.define_function(info.main_graph, module).import_all()
    except Exception:
        return out
    for backend in BACKENDS:
        work = module.clone()
        try:
            PassManager.parse(PIPELINES[backend], context=ctx).run(work.operation)
            out[backend] = True
        except Exception:
            pass
    return out


def product(path: Path) -> list[dict[str, Any]]:
    """Per backend: the product's verdicts as the model is and with `--rewrites auto`."""
    from torch_mlir_lens.source.onnx_files import THE_GRAPH, stand_in_text
    from torch_mlir_lens.worker.job_handlers import run_job

    rows = []
    base = {"path": str(path), "module": THE_GRAPH, "text": stand_in_text(str(path))}
    for backend in BACKENDS:
        row: dict[str, Any] = {"backend": backend}
        for mode, rewrites in (("as_is", []), ("auto", ["auto"])):
            reply = run_job({"id": 1, "op": "lower", **base, "targets": [backend],
                             "rewrites": rewrites})
            result = (reply.get("result") or {}).get("results", [{}])[0] if reply["ok"] else {}
            diags = result.get("diagnostics", [])
            row[mode] = {
                "imported": reply["ok"] and not any(d.get("kind") == "export-error"
                                                    for d in diags),
                "lowered": bool(result.get("ok")),
                "culprits": len([d for d in diags if d.get("kind") == "unsupported-op"]),
                "located": all(d.get("node") for d in diags if d.get("kind") == "unsupported-op"),
                "fixes": (result.get("onnx") or {}).get("fixes", []),
                "error": None if reply["ok"] else reply["error"]["message"][:200],
            }
            if result.get("ok"):
                verdict = run_job({"id": 2, "op": "verify", **base, "target": backend,
                                   "rewrites": rewrites})
                v = verdict.get("result") or {}
                row[mode]["verified"] = bool(verdict["ok"] and v.get("ok"))
                row[mode]["verify"] = v.get("message", "")[:160] if verdict["ok"] else \
                    verdict["error"]["message"][:160]
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out")
    parser.add_argument("--only", default="")
    args = parser.parse_args(argv)
    import torch_mlir.fx  # noqa: F401 - warm once, before the children fork

    with open(args.out, "w") as out:  # the benchmark's own output file
        for path in models():
            name = model_name(path)
            if args.only and not re.search(args.only, name):
                continue
            base = in_child(plain, path) or dict.fromkeys(BACKENDS, False)
            rows = in_child(product, path)
            if not isinstance(rows, list):
                rows = [{"backend": b, "crash": True} for b in BACKENDS]
            for row in rows:
                row.update(model=name, plain=base.get(row["backend"], False))
                out.write(json.dumps(row) + "\n")
                out.flush()
            print(name, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
