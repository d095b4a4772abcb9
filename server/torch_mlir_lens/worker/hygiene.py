"""Undo what a user's module leaves behind in the worker between jobs.

A job runs arbitrary user code (constructors, forward) in a long-lived process. After each job:
- processes it started (children, setsid'd children, orphaned grandchildren: the worker is a
  child subreaper) are killed;
- torch functions and classes, and the standard library the worker needs, that it
  monkeypatched (`torch.relu = ...`, `nn.Linear.forward = ...`, `os.replace = ...`,
  `torch.export.export = ...`) are put back as they were after warm-up;
- threads it started cannot be stopped from Python: the worker asks to be replaced.
cwd, sys.path and the std streams are restored by jobs.py around each job.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from typing import Any

# Namespaces whose attributes user code is likely to patch, by import name.
_NAMESPACES = (
    "torch", "torch.nn", "torch.nn.functional", "torch.export", "torch.fx", "torch.fx.graph",
    "torch.nn.init", "torch_mlir.fx", "torch_mlir.compiler_utils",
    "torch_mlir.extras.fx_importer",
    # The standard library the worker itself needs (atomic writes, pipes, JSON): a module that
    # patched os.replace would otherwise break every later export in this worker.
    "builtins", "os", "os.path", "posixpath", "io", "shutil", "tempfile", "pathlib", "json",
    "subprocess", "signal", "threading",
)

_MISSING = object()


class Baseline:
    """The patchable state of torch as it was after warm-up, and the threads alive then."""

    def __init__(self) -> None:
        # (id(owner), name) → (owner, value)
        self.attrs: dict[tuple[int, str], tuple[Any, Any]] = {}
        self.threads: set[int] = set()
        self.recursion_limit = 1000

    @classmethod
    def take(cls) -> Baseline:
        base = cls()
        for owner in _owners():
            for name, value in list(vars(owner).items()):
                base.attrs[(id(owner), name)] = (owner, value)
        base.threads = {t.ident or 0 for t in threading.enumerate()}
        base.recursion_limit = sys.getrecursionlimit()
        return base

    def restore(self) -> list[str]:
        """Put back every attribute that was replaced or deleted; names of what was fixed."""
        fixed: list[str] = []
        for (_, name), (owner, value) in self.attrs.items():
            current = vars(owner).get(name, _MISSING)
            if current is value:
                continue
            with contextlib.suppress(AttributeError, TypeError):
                setattr(owner, name, value)
                fixed.append(f"{getattr(owner, '__name__', owner)}.{name}")
        if sys.getrecursionlimit() != self.recursion_limit:
            sys.setrecursionlimit(self.recursion_limit)
            fixed.append("sys.recursionlimit")
        return fixed

    def new_threads(self) -> list[str]:
        """Names of live threads that were not there at the baseline (known benign library
        threads aside)."""
        return [t.name for t in threading.enumerate()
                if t.is_alive() and (t.ident or 0) not in self.threads
                and not (t.daemon and t.name in _BENIGN_DAEMONS)]


# Daemon threads libraries start once per process and stop by themselves; not a leak of the
# job's. tqdm's monitor starts with the first progress bar, and torch.fx's Interpreter (run by
# every export's decompositions) creates a (disabled) bar whenever tqdm is installed: without
# this, every job would replace the worker.
_BENIGN_DAEMONS = frozenset({"tqdm_monitor"})


def _owners() -> list[Any]:
    """The modules and torch.nn classes whose attributes are tracked."""
    owners: list[Any] = []
    for name in _NAMESPACES:
        module = sys.modules.get(name)
        if module is not None:
            owners.append(module)
    nn = sys.modules.get("torch.nn")
    torch = sys.modules.get("torch")
    if nn is not None:
        base = getattr(nn, "Module", None)
        for value in list(vars(nn).values()):
            if isinstance(value, type) and base is not None and issubclass(value, base):
                owners.append(value)
    if torch is not None:
        owners.append(torch.Tensor)
    return owners


_subreaper = False  # set by become_subreaper()


def become_subreaper() -> bool:
    """Adopt orphaned descendants (double forks, setsid children) so they stay findable.

    The parent kills the worker's whole family (group + descendants); without this, a child of
    a child whose parent exited would be re-parented to init and escape. True on success.
    """
    global _subreaper
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        _subreaper = libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    return _subreaper


def _may_have_descendants() -> bool:
    """False only when this process provably has no descendant: it has no child at all
    (living or unreaped) and, as a child subreaper, every orphaned descendant would be one."""
    if not _subreaper:
        return True
    try:
        # WNOWAIT: only look, leave any exited child to reap_children.
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    except OSError:
        return True
    return True


def kill_descendants() -> int:
    """SIGKILL every process the worker started (directly or not); return how many."""
    from torch_mlir_lens.engine.procs import family_pids

    if not _may_have_descendants():
        return 0  # the usual case, without reading /proc for every process on the machine
    me = os.getpid()
    doomed = [pid for pid in family_pids(me) if pid != me]
    count = len(doomed)
    for pid in doomed:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    # Wait for them to die and reap them (they are our children, or adopted orphans), so no
    # zombie is left for anyone counting processes.
    deadline = time.monotonic() + 1.0
    while doomed and time.monotonic() < deadline:
        reap_children()
        doomed = [pid for pid in doomed if os.path.exists(f"/proc/{pid}")]
        if doomed:
            time.sleep(0.01)
    return count


def reap_children() -> None:
    """Collect exited children (and adopted orphans) so they do not linger as zombies."""
    with contextlib.suppress(ChildProcessError, OSError):
        while True:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return


def after_job(baseline: Baseline | None) -> str | None:
    """Clean up after a job; a reason to replace the worker, or None when it is clean."""
    killed = kill_descendants()
    if killed:
        print(f"torch-mlir-lens worker: killed {killed} leftover process(es)", file=sys.stderr)
    if baseline is None:
        return None
    fixed = baseline.restore()
    if fixed:
        print(f"torch-mlir-lens worker: restored {', '.join(fixed[:10])}", file=sys.stderr)
    threads = baseline.new_threads()
    if threads:
        return f"the module left threads running: {', '.join(threads[:5])}"
    return None
