"""The worker process: keeps torch and torch-mlir warm and runs one job at a time.

    python -m torch_mlir_lens.worker.main --in-fd N --out-fd M
    (or TORCH_MLIR_LENS_IN_FD / TORCH_MLIR_LENS_OUT_FD in the environment)

Jobs arrive and replies leave as frames (`protocol.framing`) on two dedicated pipe fds.
stdout and stderr are NOT the channel: the parent drains them into a log, so user prints (any
amount) and MLIR's native fd-2 output can neither corrupt the channel nor block the worker.
The loop ends on EOF of the input fd.
"""

from __future__ import annotations

if __name__ == "__main__":  # before any other import: see system/safe_path.py
    from torch_mlir_lens.system.safe_path import drop_working_directory

    drop_working_directory()

import argparse
import contextlib
import faulthandler
import gc
import os
import select
import signal
import sys

from torch_mlir_lens.protocol.framing import read_frame, write_frame
from torch_mlir_lens.protocol.jobs import Reply
from torch_mlir_lens.protocol.results import ErrorKind, LensError

READY_GRACE_S = 0.05  # how long after "ready" a job counts as already waiting
GC_YOUNG_THRESHOLD = 50_000  # allocations between young collections (Python's default: 700)

IN_FD_ENV = "TORCH_MLIR_LENS_IN_FD"
OUT_FD_ENV = "TORCH_MLIR_LENS_OUT_FD"
OWN_GROUP_ENV = "TORCH_MLIR_LENS_OWN_GROUP"  # set by WorkerClient: the group is ours to end
PARENT_ENV = "TORCH_MLIR_LENS_PARENT_PID"  # set by WorkerClient: the process we live for
_PR_SET_PDEATHSIG = 1


def _protect_channel(in_fd: int, out_fd: int) -> tuple[int, int]:
    """Move the channel fds out of the way of user code and child processes.

    User code may close or dup2 over low fds, and children it spawns must not hold the channel
    open (the parent would then never see EOF when the worker dies): move both fds above the
    usual range and make them non-inheritable.
    """
    new_in = os.dup(in_fd)
    new_out = os.dup(out_fd)
    for fd in (new_in, new_out):
        os.set_inheritable(fd, False)
    for fd in (in_fd, out_fd):
        if fd > 2:
            with contextlib.suppress(OSError):
                os.close(fd)
    return new_in, new_out


def _quiet_std_streams() -> None:
    """Point fd 0 at /dev/null and make sure fd 1/2 exist (the parent drains them).

    Python-level sys.stdout/sys.stderr stay on fds 1 and 2, which the parent reads continuously
    into a bounded log; nothing user code prints reaches the channel fds.
    """
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    for fd in (1, 2):
        try:
            os.fstat(fd)
        except OSError:
            os.dup2(devnull, fd)
    if devnull > 2:
        os.close(devnull)
    # Line buffering so the last stderr line before a crash reaches the parent.
    with contextlib.suppress(Exception):
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
        sys.stderr.reconfigure(line_buffering=True)  # type: ignore[union-attr]


def _end_family(signum: int, _frame: object = None) -> None:
    """SIGTERM: end whatever the user's code spawned, then this worker (and its group)."""
    from torch_mlir_lens.worker.loading.hygiene import kill_descendants

    kill_descendants()
    if os.environ.get(OWN_GROUP_ENV) == "1" and os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(128 + signum)


def _end_with_parent() -> None:
    """Die with the parent even when it could not stop us (SIGKILL, a hard crash).

    The parent normally ends the worker's family itself; this is the backstop. The kernel
    sends SIGTERM when the parent goes (PR_SET_PDEATHSIG), whose handler takes the user's
    child processes along. It runs between Python bytecodes: a job stuck in native code ends
    when that call returns.
    """
    signal.signal(signal.SIGTERM, _end_family)
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    parent = os.environ.get(PARENT_ENV, "")
    if parent.isdigit() and os.getppid() != int(parent):  # it died before the prctl
        _end_family(signal.SIGTERM)


def _prepare() -> None:
    """Import what every lowering needs, then freeze the imported objects out of the GC.

    Beyond torch and torch-mlir, the modules the first export imports lazily (torch._dynamo,
    torch.export._trace) are imported here: a cold script pays them too, and they change torch
    as they load (torch._dynamo wraps torch.manual_seed), which must happen before the hygiene
    baseline is taken, or the first job's clean-up would undo it. The collector is off while
    importing (hundreds of thousands of objects: each full collection would scan them all)
    and the result is frozen, so no later collection scans torch's own objects either
    (without this a full collection in the middle of an export cost about 0.2 s).
    """
    gc.disable()
    try:
        import tempfile

        import torch
        import torch_mlir.fx  # noqa: F401

        from torch_mlir_lens.worker import job_handlers, lowering  # noqa: F401

        # Internal modules: if a torch release moves them, the first export imports its own.
        with contextlib.suppress(ImportError):
            import torch._dynamo
            import torch.export._trace  # noqa: F401

        tempfile.gettempdir()  # sets tempfile.tempdir once, as the first export would
    finally:
        gc.freeze()
        gc.enable()
    # An export allocates millions of short-lived objects: with the default thresholds the
    # collector ran thousands of times per lowering of the 20-layer LM (0.3-0.6 s of its 6 s);
    # rarer collections took ~8 % off it, for 1-2 % more peak memory.
    gc.set_threshold(GC_YOUNG_THRESHOLD, 20, 100)
    _mark_preloaded()


def _mark_preloaded() -> None:
    from torch_mlir_lens.worker.loading.loader import mark_preloaded

    mark_preloaded()  # no user code has run yet: nothing loaded so far is the user's


def _reclaim_import_garbage() -> None:
    """Collect what the imports left unreachable, then freeze again (no user object exists
    yet, so nothing of the user's is frozen)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def _warm_up() -> None:
    """Lower a tiny module, so torch's lazy first-export work is done before a job needs it.

    It changes nothing the hygiene baseline tracks (the imports in `_prepare` did that).
    """
    import time

    import torch

    start = time.perf_counter()
    try:
        from torch_mlir_lens.worker.lowering import lower_module

        tiny = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
        lower_module(tiny, (torch.randn(2, 4),), module_name="warm-up", user_files=[],
                     targets=["linalg"])
        print(f"torch-mlir-lens worker: warmed up in {time.perf_counter() - start:.2f} s",
              file=sys.stderr)
    except Exception as exc:  # only a warm-up: the first job will report real problems
        print(f"torch-mlir-lens worker: warm-up lowering failed: {exc}", file=sys.stderr)
    gc.collect()
    gc.freeze()  # torch's lazily built state joins the frozen objects
    _mark_preloaded()  # and the modules the first export imported


def _job_waiting(fd: int, within: float = 0.0) -> bool:
    """True when a frame (or EOF) can be read from fd within `within` seconds."""
    return bool(select.select([fd], [], [], within)[0])


def serve(in_fd: int, out_fd: int) -> int:
    """Read jobs from in_fd, run them one at a time, write replies to out_fd; 0 at EOF."""
    from torch_mlir_lens.worker.job_handlers import run
    from torch_mlir_lens.worker.loading import file_states, hygiene, import_graph
    from torch_mlir_lens.worker.lowering.programs import release_evicted

    # Imports are recorded from here on (what an answer depends on: provenance.py); before
    # the baseline, so that restoring the standard library after a job keeps the recorder.
    import_graph.install(sys.modules)
    file_states.install()  # the digest of each user file, taken before its code runs
    baseline = hygiene.Baseline.take()
    # Tell the parent the imports are done: job time-outs start counting from here.
    write_frame(out_fd, Reply(0, True, {"ready": True, "pid": os.getpid()}).to_json())
    # Work for idle time before the first job, each step only while no job waits: a job that
    # is already there (a file opened while the worker started) goes first and does the
    # warming itself. After a user's job they would freeze the user's objects: dropped.
    # The parent sends a job it was holding a few milliseconds after "ready": wait that long.
    idle_steps = [_reclaim_import_garbage, _warm_up]
    grace = READY_GRACE_S
    while True:
        while idle_steps and not _job_waiting(in_fd, grace):
            idle_steps.pop(0)()
            grace = 0.0
        idle_steps.clear()
        try:
            job = read_frame(in_fd)
        except (EOFError, ValueError, UnicodeDecodeError) as exc:
            print(f"torch-mlir-lens worker: bad frame: {exc}", file=sys.stderr)
            return 1
        if job is None:
            return 0
        reply = run(job)
        # Non-empty when the parent must replace this worker once it has the reply.
        reply.restart = hygiene.after_job(baseline) or None
        try:
            write_frame(out_fd, reply.to_json())
        except (TypeError, ValueError) as exc:  # a result that does not serialize
            error = LensError(ErrorKind.BAD_REQUEST, f"unserializable result: {exc}")
            write_frame(out_fd, Reply(reply.id, False, error=error.to_json(),
                                      restart=reply.restart, programs=reply.programs).to_json())
        except BrokenPipeError:
            return 0
        release_evicted()


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m torch_mlir_lens.worker.main`."""
    parser = argparse.ArgumentParser(prog="torch-mlir-lens-worker")
    parser.add_argument("--in-fd", type=int, default=None)
    parser.add_argument("--out-fd", type=int, default=None)
    args = parser.parse_args(argv)
    in_fd = args.in_fd if args.in_fd is not None else int(os.environ.get(IN_FD_ENV, "-1"))
    out_fd = args.out_fd if args.out_fd is not None else int(os.environ.get(OUT_FD_ENV, "-1"))
    if in_fd < 0 or out_fd < 0:
        parser.error("--in-fd and --out-fd (or their environment variables) are required")
    # The parent owns cancellation (it kills the process group); Ctrl-C in a terminal that
    # shares our group must not interrupt a job half-way.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A closed channel must surface as BrokenPipeError, not kill us silently mid-write.
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    _end_with_parent()
    in_fd, out_fd = _protect_channel(in_fd, out_fd)
    _quiet_std_streams()
    # Fatal signals and SIGUSR1 (sent by the parent on a time-out) dump the Python stack to
    # stderr, so a crash or a hang can be reported at the user's line.
    faulthandler.enable()
    faulthandler.register(signal.SIGUSR1, all_threads=False)
    _prepare()
    from torch_mlir_lens.worker.loading.hygiene import become_subreaper

    become_subreaper()
    code = serve(in_fd, out_fd)
    if os.environ.get(OWN_GROUP_ENV) == "1" and os.getpgrp() == os.getpid():
        # The parent went away without stopping us: end whatever the user's code spawned.
        from torch_mlir_lens.worker.loading.hygiene import kill_descendants

        kill_descendants()
        sys.stdout.flush()
        sys.stderr.flush()
        os.killpg(os.getpid(), signal.SIGKILL)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
