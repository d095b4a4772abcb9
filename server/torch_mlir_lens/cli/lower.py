"""`torch-mlir-lens lower`: print a module's IR at a target (or after a custom pipeline)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from torch_mlir_lens.cli import iree_options
from torch_mlir_lens.cli.common import (
    CliError,
    EngineFactory,
    add_cache,
    add_inputs,
    add_module_choice,
    bad_pipeline,
    from_lens,
    load_source,
    make_engine,
    module_job,
    pick_module,
    print_diagnostics,
    running_engine,
)
from torch_mlir_lens.cli.parser import EXIT_FAILED, EXIT_OK
from torch_mlir_lens.rules.targets import TARGETS


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the `lower` subcommand."""
    lower: argparse.ArgumentParser = sub.add_parser("lower", help="print a module's IR at a target")
    lower.add_argument("file")
    add_module_choice(lower)
    how = lower.add_mutually_exclusive_group()
    how.add_argument("--target", default=None, metavar="T",
                     help=f"one of {', '.join(TARGETS)} (default linalg)")
    how.add_argument("--pipeline", metavar="STR", help="a custom MLIR pass pipeline")
    add_inputs(lower)
    add_cache(lower)
    lower.add_argument("--annotate", action="store_true",
                       help="interleave the IR with the source lines that produced it")
    lower.add_argument("--frames", choices=("user", "all"), default="user",
                       help="with --annotate: 'all' also shows the library lines (e.g. "
                            "transformers' modeling_*.py) that produced the ops")
    lower.add_argument("--keep-weights", action="store_true", help="print weights in full")
    lower.add_argument("--debug-info", action="store_true", help="print locations")
    lower.add_argument("--print-after-all", action="store_true",
                       help="also print the IR after every pass")
    lower.add_argument("--json", action="store_true", help="print the result as JSON")
    iree_options.add_arch(lower)
    lower.add_argument("--profile", action="store_true",
                       help="with --target iree-cpu: time the compiled module against eager "
                            "and each dispatch, mapped to its lines (--json: stats)")
    lower.add_argument("--via", choices=("fx", "onnx"), default="fx",
                       help="how a PyTorch module reaches torch-mlir: torch.export and the FX "
                            "importer (default), or torch.onnx.export and the ONNX importer")
    return lower


async def run(args: argparse.Namespace, make_engine: EngineFactory = make_engine) -> int:
    """The `lower` command: 0 when it lowers, 1 when it does not."""
    target = args.target or "linalg"
    if not args.pipeline and target not in TARGETS:
        raise CliError(f"unknown target {target!r} (choose from {', '.join(TARGETS)})")
    if args.frames != "user" and not args.annotate:
        raise CliError("--frames applies to --annotate output (--json's map always has chains)")
    src = load_source(args.file)
    if src.onnx and args.via != "fx":
        raise CliError("--via onnx is for a PyTorch module: an ONNX model is lowered through "
                       "the ONNX importer already", file=src.path)
    module = pick_module(src, args.module, args.line)
    job = module_job(src, module, args)
    arch = iree_options.arch_for(target, args.iree_arch)
    if args.profile and target != "iree-cpu":
        raise CliError("--profile times a module compiled for the CPU: use --target iree-cpu")
    iree_options.require([] if args.pipeline else [target])
    async with running_engine(args, make_engine, src.path) as engine:
        results = await engine.lower(
            job, targets=[] if args.pipeline else [target], pipeline=args.pipeline,
            keep_weights=args.keep_weights, debug_info=args.debug_info,
            print_after_all=args.print_after_all, iree_archs={target: arch} if arch else {},
            profile=args.profile,
        )
    result = results[0]
    bad = bad_pipeline(result)
    if bad is not None:
        raise from_lens(bad, src.path)
    refused = iree_options.refusal(results, src.path)
    if refused is not None:
        raise refused
    if args.json:
        print(src.to_json(result.to_json()))
    else:
        if args.print_after_all and result.passes:
            for p in result.passes:
                if not p.ir.lstrip().startswith("// -----//"):  # MLIR's own header, if any
                    print(f"// -----// IR Dump After {p.name} //----- //")
                print(p.ir.rstrip("\n"))
            print("// -----// Result //----- //")
        if args.annotate:
            from torch_mlir_lens.cli.annotated_ir import annotate

            program = src.notebook
            text = src.text
            if src.onnx and result.onnx is not None:  # an ONNX model's rows are its nodes
                text = "\n".join(node.label() for node in result.onnx.nodes) + "\n"
            sys.stdout.write(annotate(text, result, path=src.path, frames=args.frames,
                                      line_label=program.label if program is not None else str))
        else:
            sys.stdout.write(result.ir if result.ir.endswith("\n") or not result.ir
                             else result.ir + "\n")
        print_diagnostics(results)
    return EXIT_OK if result.ok else EXIT_FAILED
