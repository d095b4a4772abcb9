"""Which phase of a job the worker was in, read from its faulthandler dump (no torch).

A job stopped at its time limit is reported with the worker's stack (the worker client asks
its faulthandler for it): the innermost frame of the worker's own code says what took the
time. "The lowering took longer than 180 s" is wrong for a Verify whose lowering took 0.5 s
and whose JIT compile took the rest: the phase names it.

    phase_of_stack(dump)   → "the JIT compile", "the lowering", ... or None
    time_limit_message(seconds, dump, line)   → the time-out's words with the phase
"""

from __future__ import annotations

import re

# The worker's modules (paths under torch_mlir_lens/worker/) → the phase they do, most
# specific first: the innermost matching frame of a dump decides.
PHASES: tuple[tuple[str, str], ...] = (
    ("verify/jit.py", "the JIT compile"),
    ("verify/linalg.py", "the run of the compiled module"),
    ("verify/divergence.py", "the search for the first diverging line"),
    ("stages/llvm.py", "the lowering to LLVM"),
    ("rewrite_jobs/", "the proof of rewrites"),
    ("culprits/", "the listing of what the backend rejects"),
    ("stages/pipeline.py", "the lowering"),
    ("lowering/", "the lowering"),
    ("blocks/", "the tracing of repeated blocks"),
    ("stages/torch_export.py", "the export (torch.export)"),
    ("inputs/", "the example inputs (running the module)"),
    ("loading/", "loading the file"),
)
_FRAME = re.compile(r'File "([^"]+)", line \d+')


def phase_of_stack(dump: str) -> str | None:
    """The phase of the innermost frame of the worker's code in a faulthandler dump (its last
    "most recent call first" block); None when no frame of the worker's phases is in it."""
    start = dump.rfind("most recent call first")
    if start < 0:
        return None
    for match in _FRAME.finditer(dump[start:]):  # innermost first
        path = match.group(1).replace("\\", "/")
        marker = path.find("torch_mlir_lens/worker/")
        if marker < 0:
            continue
        inside = path[marker + len("torch_mlir_lens/worker/"):]
        for prefix, phase in PHASES:
            if inside.startswith(prefix):
                return phase
    return None


def time_limit_message(seconds: float, dump: str, line: int | None = None) -> str:
    """The words of a job stopped at its time limit: the phase that took the time when the
    dump shows it ("the JIT compile took longer than 180 s"), else the job as a whole."""
    phase = phase_of_stack(dump) or "the lowering"
    where = f" (at line {line})" if line else ""
    return (f"{phase} took longer than {seconds:g} s and was stopped{where}; the worker was "
            "restarted")


__all__ = ["PHASES", "phase_of_stack", "time_limit_message"]
