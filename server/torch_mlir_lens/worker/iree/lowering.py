"""An IREE target's LowerResult: the module compiled by IREE, shown as its dispatch regions.

    lower_target(lowerer, target, arch=..., weightless=..., options=..., eager=..., profile=...)
        → LowerResult

What a user sees at an IREE target, in the shape every target has (protocol/results.py):

- the module does not reach Linalg (torch-mlir rejects an op): the Linalg result itself, its
  culprits at their lines, under the IREE target's name: IREE compiles Linalg, so that is the
  one reason, said once, with nothing of IREE added;
- IREE fails: `ok` False, the furthest IR (the dispatch regions if the compile got that far,
  else the Linalg IR it was given), and IREE's errors at the user's lines with the failing
  pass (compile_errors.py); an architecture IREE does not have is said as such;
- it compiles: the dispatch view (dispatches.py) and its map; `stats["dispatches"]` (each
  region's entry point and lines) and `stats["line_dispatches"]` (each line's regions, for
  hovers); `stats["iree"]`: version, architecture, compile seconds, module size, the weights
  left out (a program built without them) and whether it ran here. A GPU target compiled on
  a machine without that GPU says "compiled, not run: no device" (information).
- `profile` (IREE CPU): the module's time against eager's on the example inputs
  (`stats["speed"]`), each dispatch's time (`time_ms`) and each line's share
  (`stats["line_costs"]`), timing.py.

The lowerer is a PyTorch program's (`ProgramLowerer`) or an ONNX model's (`worker/onnx/`, whose
"lines" are its nodes): what is read of it is `Lowered`.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from torch_mlir_lens.protocol.results import (
    ErrorKind,
    LensDiagnostic,
    LensError,
    LowerResult,
    Severity,
)
from torch_mlir_lens.rules.iree_targets import IREE_DEVICES, arch_error, arch_title
from torch_mlir_lens.rules.targets import target_title
from torch_mlir_lens.worker.ir.locations import UserFiles
from torch_mlir_lens.worker.iree import compile_errors, runtime, timing
from torch_mlir_lens.worker.iree.build import compiled_for
from torch_mlir_lens.worker.iree.compiler import Compiled
from torch_mlir_lens.worker.iree.dispatches import DispatchView, read_dispatches
from torch_mlir_lens.worker.iree.tools import Install, require
from torch_mlir_lens.worker.lowering import LowerOptions
from torch_mlir_lens.worker.verify.linalg import flat_tensors

_HOPPER_AND_LATER = re.compile(r"^sm_(9\d|1\d\d)a?$")


class Lowered(Protocol):
    """What an IREE target reads of a lowerer: its Linalg module, its Linalg result (a module
    that does not get there), its user files and where the module is."""

    module_name: str
    module_file: str | None
    module_line: int | None
    users: UserFiles

    def module_for(self, target: str) -> Any:
        """The lowered module op (LensError when it does not lower)."""

    def lower(self, target: str | None, *,
              options: LowerOptions | None = None) -> LowerResult:
        """The target's result (a failure is a result)."""


@dataclass
class Eager:
    """The module as eager PyTorch runs it, on the example inputs."""

    fn: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    dynamic_shapes: Any = None


def _module_diag(target: str, kind: str, message: str,
                 severity: str = Severity.ERROR) -> LensDiagnostic:
    return LensDiagnostic(severity=severity, message=message, kind=kind, target=target)


def refused_arch(target: str, arch: str | None, install: Install,
                 compiled: Compiled | None = None) -> str | None:
    """Why IREE does not compile for this architecture at all, or None: a name that is no
    architecture, or one this IREE build refuses (its error on every module)."""
    error = arch_error(target, arch)
    if error is not None:
        return error
    if compiled is None or compiled.ok:
        return None
    refusal = next((e for e in compiled.errors if e.refuses_architecture()), None)
    if refusal is None:
        return None
    device = IREE_DEVICES[target]
    chosen = arch_title(target, arch)
    words = (f"{target_title(target)} cannot compile for the {device.arch_words} {chosen}: "
             f"IREE {install.version} has no such target (\"{refusal.message}\")")
    if target == "iree-cuda" and _HOPPER_AND_LATER.match(chosen):
        words += ("; this IREE build refuses Hopper and Blackwell (sm_90, sm_100): "
                  "compile for sm_80, sm_86 or sm_89 (their code also runs on newer GPUs)")
    return words


def compile_for(lowerer: Lowered, target: str, arch: str | None, *,
                weightless: bool) -> tuple[Install, Compiled]:
    """The lowerer's Linalg module compiled for `target`. Raises LensError: IREE missing
    ("missing-dependency"), an architecture IREE refuses ("bad-request"), the module not
    reaching Linalg (its lowering error)."""
    install = require(target_title(target))
    refused = refused_arch(target, arch, install)
    if refused:
        raise LensError(ErrorKind.BAD_REQUEST, refused)
    linalg = lowerer.module_for("linalg")
    compiled = compiled_for(install, lowerer, linalg, target, arch, weightless=weightless)
    refused = refused_arch(target, arch, install, compiled)
    if refused:
        raise LensError(ErrorKind.BAD_REQUEST, refused)
    return install, compiled


def _linalg_failure(lowerer: Lowered, target: str,
                    options: LowerOptions) -> LowerResult:
    """The Linalg result of a module that does not reach Linalg, as the IREE target's."""
    result = lowerer.lower("linalg", options=options)
    result.target = target
    for d in result.diagnostics:
        d.target = target
    result.stats = {**result.stats, "iree": {"compiled": False,
                                             "why": "torch-mlir does not lower it to Linalg"}}
    return result


def _no_result(lowerer: Lowered, target: str, err: LensError) -> LowerResult:
    return LowerResult(module=lowerer.module_name, target=target, ok=False,
                       diagnostics=[_module_diag(target, err.kind, err.message)])


def lower_target(lowerer: Lowered, target: str, *, arch: str | None, weightless: bool,
                 options: LowerOptions, eager: Eager | None = None,
                 profile: bool = False) -> LowerResult:
    """The IREE target's result for the lowerer's program (never raises for a module that
    does not compile: its errors are the result's diagnostics)."""
    start = time.perf_counter()
    title = target_title(target)
    try:
        install, compiled = compile_for(lowerer, target, arch, weightless=weightless)
        fresh = time.perf_counter() - start >= compiled.seconds
    except LensError as err:
        if err.kind in (ErrorKind.MISSING_DEPENDENCY, ErrorKind.BAD_REQUEST):
            return _no_result(lowerer, target, err)
        return _linalg_failure(lowerer, target, options)
    heading = f"{title} ({arch_title(target, arch)}), IREE {install.version}"
    view = read_dispatches(compiled.flow_ir, lowerer.users, heading=heading) \
        if compiled.flow_ir else None
    diagnostics = compile_errors.diagnostics(compiled.errors, lowerer.users, target=target,
                                             title=title)
    if not compiled.ok and not diagnostics:
        diagnostics = [_module_diag(target, ErrorKind.COMPILE_ERROR,
                                    f"{title}: iree-compile failed (exit "
                                    f"{compiled.returncode}): {compiled.output_tail[-500:]}")]
    facts = _facts(install, compiled, target, arch)
    if compiled.ok:
        diagnostics += _not_run(target, arch, facts, compiled)
    result = _result(lowerer, target, compiled, view, diagnostics, options)
    result.stats = {**result.stats, "iree": facts}
    if view is not None:
        result.stats["dispatches"] = [d.to_json() for d in view.dispatches]
        result.stats["line_dispatches"] = view.line_dispatches()
    if profile and compiled.ok and eager is not None and view is not None:
        _profile(install, compiled, view, eager, result, target)
    # `total`: this target's own time (the Linalg lowering it starts from included, when
    # this job made it); `iree_compile` is the compiler's part, 0 when reused.
    result.timings = {"iree_compile": compiled.seconds if fresh else 0.0,
                      "total": time.perf_counter() - start}
    return result


def _facts(install: Install, compiled: Compiled, target: str,
           arch: str | None) -> dict[str, Any]:
    source = compiled.source
    facts: dict[str, Any] = {
        "version": install.version, "arch": arch_title(target, arch),
        "device": IREE_DEVICES[target].driver, "compiled": compiled.ok,
        "compile_s": round(compiled.seconds, 6),
        "vmfb_bytes": os.path.getsize(compiled.vmfb) if compiled.vmfb else None,
    }
    if source is not None and source.parameters:
        facts["left_out"] = source.left_out()
        facts["parameters"] = [p.to_json() for p in source.parameters]
    return facts


def _not_run(target: str, arch: str | None, facts: dict[str, Any],
             compiled: Compiled) -> list[LensDiagnostic]:
    """Information: why the compiled module cannot run here (no device, weights left out)."""
    title = f"{target_title(target)} ({arch_title(target, arch)})"
    notes = []
    missing = runtime.device_error(IREE_DEVICES[target].driver)
    facts["ran_here"] = missing is None
    if missing is not None:
        facts["not_run"] = f"no device ({missing})"
        notes.append(f"{title}: compiled, not run: no device")
    if compiled.source is not None and compiled.source.parameters:
        notes.append(f"{title}: compiled with {facts['left_out']}")
    return [_module_diag(target, ErrorKind.NOT_RUN, n, Severity.INFORMATION) for n in notes]


def _result(lowerer: Lowered, target: str, compiled: Compiled,
            view: DispatchView | None, diagnostics: list[LensDiagnostic],
            options: LowerOptions) -> LowerResult:
    if view is None:  # failed before its dispatch regions: the Linalg it was given
        shown = lowerer.lower("linalg", options=options)
        shown.target, shown.ok, shown.diagnostics = target, False, diagnostics
        return shown
    for d in diagnostics:
        if d.file is None and lowerer.module_file is not None:
            d.file, d.line = lowerer.module_file, lowerer.module_line
    return LowerResult(module=lowerer.module_name, target=target, ok=compiled.ok,
                       ir=view.text, map=view.map, diagnostics=diagnostics,
                       stats=dict(view.stats), frames=view.frames)


def _profile(install: Install, compiled: Compiled, view: DispatchView, eager: Eager,
             result: LowerResult, target: str) -> None:
    """The module's time against eager's, and each dispatch's and line's (IREE CPU only)."""
    if IREE_DEVICES[target].is_gpu or compiled.vmfb is None:
        return
    if compiled.source is not None and compiled.source.parameters:
        return  # the weights are not in the module: nothing to run it with
    inputs = [runtime.to_numpy(t) for t in flat_tensors((eager.args, eager.kwargs))]
    loaded = runtime.load(compiled.vmfb, IREE_DEVICES[target].driver)
    speed = timing.time_module(loaded, inputs, eager.fn, eager.args, eager.kwargs)
    result.stats["speed"] = speed.to_json(target, IREE_DEVICES[target].driver)
    with tempfile.TemporaryDirectory(prefix="torch-mlir-lens-profile-") as folder:
        times = timing.profile_dispatches(install, compiled.vmfb, inputs, folder,
                                          timing.profile_calls(speed.compiled_ms))
    for d in view.dispatches:
        d.time_ms = times.get(d.entry)
    result.stats["dispatches"] = [d.to_json() for d in view.dispatches]
    result.stats["line_costs"] = timing.line_costs(view.dispatches)


__all__ = ["Eager", "Lowered", "compile_for", "lower_target", "refused_arch"]
