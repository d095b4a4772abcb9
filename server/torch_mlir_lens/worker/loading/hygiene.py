"""Undo what a user's module leaves behind in the worker between jobs.

A job runs arbitrary user code (constructors, forward) in a long-lived process. After each job:
- processes it started (children, setsid'd children, orphaned grandchildren: the worker is a
  child subreaper) are killed;
- torch functions and classes, and the standard library the worker needs, that it
  monkeypatched (`torch.relu = ...`, `nn.Linear.forward = ...`, `os.replace = ...`,
  `torch.export.export = ...`) are put back as they were after warm-up;
- threads it started cannot be stopped from Python: the worker asks to be replaced. Threads
  that libraries start and keep on their own (tqdm's monitor, which torch.export's progress bars
  start; idle thread pools) are not the module's leak: they run no user code and are left alone.
cwd, sys.path and the std streams are restored by job_handlers.py around each job.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import site
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass
from typing import Any

from torch_mlir_lens.protocol.frames import in_installed_package
from torch_mlir_lens.worker.process import WORKER

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

    def new_user_threads(self) -> list[str]:
        """Names of new live threads that run, or were started to run, the user's code."""
        frames = sys._current_frames()
        return [t.name for t in threading.enumerate()
                if t.is_alive() and (t.ident or 0) not in self.threads
                and _runs_user_code(t, frames.get(t.ident or 0))]


@functools.cache
def _library_roots() -> tuple[str, ...]:
    """Folders of installed code: the standard library and every site-packages."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    with contextlib.suppress(AttributeError):  # some embedded interpreters lack these
        roots.update(site.getsitepackages())
        roots.add(site.getusersitepackages())
    return tuple(sorted({os.path.realpath(r) + os.sep for r in roots if r}))


def is_library_file(filename: str) -> bool:
    """True for installed code (stdlib, site-packages) and interpreter pseudo-files
    (`<frozen ...>`); False for everything else, the user's files and editable checkouts.

    A site-packages folder that the interpreter's own `site` does not list counts too: a venv
    that reads another's packages through a `.pth` file, or packages on PYTHONPATH, are still
    installed code (the same rule as `frames.in_installed_package`)."""
    if filename.startswith("<"):
        return True
    real = os.path.realpath(filename)
    return real.startswith(_library_roots()) or in_installed_package(real)


def _code_file(fn: Any) -> str | None:
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    return code.co_filename if code is not None else None


def _runs_user_code(thread: threading.Thread, frame: Any) -> bool:
    """Whether the thread's entry point (target or overridden run) or any frame it is
    executing now is outside installed code. A library's monitor or idle pool is not; a
    pool worker busy with a user's function is."""
    entries = (getattr(thread, "_target", None), type(thread).run)
    if any((f := _code_file(e)) is not None and not is_library_file(f) for e in entries):
        return True
    while frame is not None:
        if not is_library_file(frame.f_code.co_filename):
            return True
        frame = frame.f_back
    return False


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


@dataclass
class _Process:
    """What the worker knows of itself."""

    subreaper: bool = False  # set by become_subreaper()


def become_subreaper() -> bool:
    """Adopt orphaned descendants (double forks, setsid children) so they stay findable.

    The parent kills the worker's whole family (group + descendants); without this, a child of
    a child whose parent exited would be re-parented to init and escape. True on success.
    """
    process = WORKER.part(_Process)
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        process.subreaper = libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    return process.subreaper


def _may_have_descendants() -> bool:
    """False only when this process provably has no descendant: it has no child at all
    (living or unreaped) and, as a child subreaper, every orphaned descendant would be one."""
    if not WORKER.part(_Process).subreaper:
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
    from torch_mlir_lens.system.procs import family_pids

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
    from torch_mlir_lens.worker.ir import crash_guard

    crash_guard.reap_pending()  # the job's own forked steps, exiting: not strays
    killed = kill_descendants()
    if killed:
        print(f"torch-mlir-lens worker: killed {killed} leftover process(es)", file=sys.stderr)
    if baseline is None:
        return None
    fixed = baseline.restore()
    if fixed:
        print(f"torch-mlir-lens worker: restored {', '.join(fixed[:10])}", file=sys.stderr)
    threads = baseline.new_user_threads()
    if threads:
        return f"the module left threads running: {', '.join(threads[:5])}"
    return None
