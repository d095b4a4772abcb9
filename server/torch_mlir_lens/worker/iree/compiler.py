"""One run of iree-compile: the module for a target, its dispatch regions, its errors.

    compile_module(install, source, target, arch, folder) → Compiled

The compiler runs as a child process (tools.py) with the target's flags
(rules/iree_targets.py). Besides the `.vmfb` it dumps the IR at the end of each of its phases
with locations (`--dump-compilation-phases-to`, weights elided), of which the `flow` phase is
kept: the module cut into dispatch regions, each region's ops still carrying the Python lines
they came from (dispatches.py). One compile gives both; a failed one runs again on one thread
to tell which pass failed (compile_errors.py).
"""

from __future__ import annotations

import glob
import os
import time
from dataclasses import dataclass, field

from torch_mlir_lens.rules.iree_targets import compile_flags
from torch_mlir_lens.system.reading import IR_DUMP, read_text
from torch_mlir_lens.worker.iree.compile_errors import CompileError, read_errors
from torch_mlir_lens.worker.iree.compile_input import CompileInput
from torch_mlir_lens.worker.iree.tools import Install, run_tool

FLOW_PHASE = "flow"  # the phase whose IR shows the dispatch regions
# Printing flags of the phase dumps and of the IR printed after a failed pass.
_PRINTING = ("--mlir-print-debuginfo", "--mlir-elide-resource-strings-if-larger=64",
             "--mlir-elide-elementsattrs-if-larger=16")
# A failed compile runs again on one thread, the IR printed after the failing pass: compiled in
# parallel, IREE prints its errors only once the parallel part ends, after every dump, so which
# pass failed could not be told from the order of its output.
_FAILURE = ("--mlir-disable-threading", "--mlir-print-ir-after-failure")
_KEPT_TAIL = 20_000  # characters of the end of a failed compiler's output looked at


@dataclass
class Compiled:
    """What one compile produced: the module (when it compiled), the dispatch-region IR
    (when the compile got that far), the errors, the time."""

    target: str
    arch: str | None
    vmfb: str | None  # path of the compiled module, None when it failed
    flow_ir: str | None  # the `flow` phase's IR with locations, weights elided
    errors: list[CompileError] = field(default_factory=list)
    seconds: float = 0.0
    source: CompileInput | None = None
    returncode: int = 0
    output_tail: str = ""  # the end of the compiler's output when it failed without an error

    @property
    def ok(self) -> bool:
        return self.vmfb is not None


def compile_module(install: Install, source: CompileInput, target: str, arch: str | None,
                   folder: str, *, name: str = "module") -> Compiled:
    """Compile `source` for `target` at `arch` into `folder/NAME.vmfb`."""
    output = os.path.join(folder, f"{name}.vmfb")
    phases = os.path.join(folder, f"{name}.phases")
    args = [source.path, *compile_flags(target, arch), *_PRINTING,
            f"--dump-compilation-phases-to={phases}", "-o", output]
    start = time.perf_counter()
    done = run_tool(install.tool("iree-compile"), args, cwd=folder)
    seconds = time.perf_counter() - start
    flow = _phase(phases, FLOW_PHASE)
    ok = done.returncode == 0 and os.path.isfile(output)
    if ok:
        return Compiled(target, arch, output, flow, [], seconds, source)
    errors = read_errors(done.stderr)
    again = run_tool(install.tool("iree-compile"),
                     [source.path, *compile_flags(target, arch), *_PRINTING, *_FAILURE, "-o",
                      os.path.join(folder, f"{name}.failed.vmfb")], cwd=folder)
    ordered = read_errors(again.stderr)
    if ordered and again.returncode != 0:
        errors = ordered
    tail = "\n".join(ln for ln in done.stderr[-_KEPT_TAIL:].splitlines()[-20:]
                     if ln.strip() and not ln.startswith(" "))
    return Compiled(target, arch, None, flow, errors, seconds, source, done.returncode, tail)


def _phase(folder: str, phase: str) -> str | None:
    """The IR dumped at the end of `phase`, or None when the compile did not reach it."""
    found = glob.glob(os.path.join(glob.escape(folder), f"*.{phase}.mlir"))
    if not found:
        return None
    return read_text(found[0], IR_DUMP, errors="replace")


__all__ = ["FLOW_PHASE", "Compiled", "compile_module"]
