"""Deploying what IREE compiled: the `.vmfb`, and Python that runs it without this product.

    export_vmfb(lowerer, target, output, arch=..., weightless=...) → {"path", "bytes", ...}
    python_snippet(target, arch, inputs, ...)                       → the code (a string)

The module's entry function is `main`, taking eager's tensors in torch.export's order (its
flattened inputs) and returning the forward's results in order (after any state its forward
writes back, which eager keeps in the module: the snippet says how many to skip). A program
built without its weights (`export --without-weights`) compiles with them as named parameters
(compile_input.py): the reply says what was left out, and the snippet loads them from an IREE
parameter archive.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.rules.iree_targets import IREE_DEVICES, arch_title
from torch_mlir_lens.rules.targets import target_title
from torch_mlir_lens.system.atomic_write import copy_atomically
from torch_mlir_lens.worker.iree import compile_errors
from torch_mlir_lens.worker.iree.compile_input import PARAMETER_SCOPE
from torch_mlir_lens.worker.iree.lowering import Lowered, compile_for
from torch_mlir_lens.worker.lowering import ProgramLowerer
from torch_mlir_lens.worker.stages.artifacts import refuse_source
from torch_mlir_lens.worker.verify.job import state_writes


def export_vmfb(lowerer: Lowered, target: str, output: str, *, arch: str | None,
                weightless: bool) -> dict[str, Any]:
    """Compile for `target` and write the module to `output` atomically; raises LensError
    when it does not compile (IREE's first error, at its line)."""
    refuse_source(output)
    title = target_title(target)
    _install, compiled = compile_for(lowerer, target, arch, weightless=weightless)
    if compiled.vmfb is None:
        diags = compile_errors.diagnostics(compiled.errors, lowerer.users, target=target,
                                           title=title)
        first = diags[0] if diags else None
        raise LensError(ErrorKind.COMPILE_ERROR,
                        first.message if first else f"{title}: iree-compile failed",
                        file=first.file if first else None, line=first.line if first else None,
                        related=first.related if first else None)
    try:
        size = copy_atomically(output, compiled.vmfb, sync=True)
    except OSError as exc:
        raise LensError(ErrorKind.WRITE_ERROR, f"cannot write {output}: {exc}") from exc
    reply: dict[str, Any] = {"path": output, "bytes": size,
                             "target": target, "arch": arch_title(target, arch)}
    source = compiled.source
    if source is not None and source.parameters:
        reply["left_out"] = source.left_out()
        reply["parameters"] = [p.to_json() for p in source.parameters]
    return reply


def _dtype_name(dtype: torch.dtype) -> str:
    return {torch.bfloat16: "bfloat16", torch.bool: "bool_"}.get(
        dtype, str(dtype).removeprefix("torch."))


def python_snippet(lowerer: ProgramLowerer, target: str, *, arch: str | None, module: str,
                   inputs: list[torch.Tensor], version: str) -> str:
    """Python that loads the exported `.vmfb` with iree.runtime and calls `main` on inputs of
    the example's shapes and dtypes (or on .npy files), importing nothing of this product."""
    device = IREE_DEVICES[target]
    skipped = state_writes(lowerer.program)
    specs = ", ".join(f"({tuple(t.shape)!r}, {_dtype_name(t.dtype)!r})" for t in inputs)
    title = f"{target_title(target)} ({arch_title(target, arch)})"
    return _SNIPPET.format(module=module, title=title, version=version,
                           driver=device.driver, specs=specs, skipped=skipped,
                           scope=PARAMETER_SCOPE, stem=os.path.basename(module).lower())


_SNIPPET = '''"""Run {module} as IREE compiled it for {title}, with IREE's runtime alone.

    python THIS.py [--vmfb {stem}.vmfb] [--parameters WEIGHTS.irpa] [--inputs A.npy ...]
                   [--save-outputs FOLDER]

Written by `torch-mlir-lens export --emit-python` with IREE {version}
(pip install iree-base-runtime=={version}). Without --inputs, random inputs of the example's
shapes and dtypes. `main` takes the module's tensors in eager's order and returns its
outputs in eager's order, after {skipped} tensor(s) of state the forward writes back.
"""

import argparse
from pathlib import Path

import numpy as np
import iree.runtime as ireert

DRIVER = "{driver}"
INPUTS = [{specs}]  # (shape, dtype) of each input, in eager's order
STATE_RESULTS = {skipped}  # leading results that are written-back state, not outputs


def load(vmfb, parameters=None):
    """`main` of the compiled module, on this machine's device for the target."""
    config = ireert.Config(DRIVER)
    modules = []
    if parameters:
        index = ireert.ParameterIndex()
        index.load(str(parameters))
        provider = index.create_provider(scope="{scope}")
        modules.append(ireert.create_io_parameters_module(config.vm_instance, provider))
    module = ireert.VmModule.mmap(config.vm_instance, str(vmfb))
    context = ireert.SystemContext(vm_modules=[*modules, module], config=config)
    return context.modules[module.name]["main"]


def run(main, arrays):
    """The module's outputs (numpy arrays) for input arrays in eager's order."""
    out = main(*arrays)
    results = out if isinstance(out, (tuple, list)) else (out,)
    return [np.asarray(r.to_host()) for r in results][STATE_RESULTS:]


def example_inputs(seed=0):
    rng = np.random.default_rng(seed)
    arrays = []
    for shape, dtype in INPUTS:
        if dtype.startswith(("float", "bfloat")):
            arrays.append(rng.standard_normal(shape).astype(np.float32).astype(
                "float32" if dtype == "bfloat16" else dtype))
        elif dtype == "bool_":
            arrays.append(rng.integers(0, 2, shape).astype(np.int8))
        else:
            arrays.append(rng.integers(0, 4, shape).astype(dtype))
    return arrays


if __name__ == "__main__":
    here = Path(__file__).resolve()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vmfb", default=str(here.with_suffix(".vmfb")))
    parser.add_argument("--parameters", help="an IREE parameter archive (.irpa) of scope "
                        "'{scope}', for a module compiled without its weights")
    parser.add_argument("--inputs", nargs="*", help=".npy files, one per input")
    parser.add_argument("--save-outputs", help="a folder for output0.npy, output1.npy, ...")
    args = parser.parse_args()
    arrays = [np.load(p) for p in args.inputs] if args.inputs else example_inputs()
    outputs = run(load(args.vmfb, args.parameters), arrays)
    for i, array in enumerate(outputs):
        print(f"output {{i}}: {{array.shape}} {{array.dtype}}")
        if args.save_outputs:
            np.save(Path(args.save_outputs) / f"output{{i}}.npy", array)
'''


__all__ = ["export_vmfb", "python_snippet"]
