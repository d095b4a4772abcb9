"""The worker process: keeps torch and torch-mlir warm and runs one job at a time.

    python -m torch_mlir_lens.worker.main --in-fd N --out-fd M
    (or TORCH_MLIR_LENS_IN_FD / TORCH_MLIR_LENS_OUT_FD in the environment)

Jobs arrive and replies leave as frames on two dedicated pipe fds: a 4-byte big-endian length,
then that many bytes of UTF-8 JSON. stdout and stderr are NOT the channel: the parent drains them
into a log, so user prints (any amount) and MLIR's native fd-2 output can neither corrupt the
channel nor block the worker. The loop ends on EOF of the input fd.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import os
import signal
import struct
import sys
from typing import Any

_HEADER = struct.Struct(">I")
MAX_FRAME = 1 << 31  # a sanity bound; a bigger length means a corrupted channel

IN_FD_ENV = "TORCH_MLIR_LENS_IN_FD"
OUT_FD_ENV = "TORCH_MLIR_LENS_OUT_FD"
OWN_GROUP_ENV = "TORCH_MLIR_LENS_OWN_GROUP"  # set by WorkerClient: the group is ours to end


def _read_exact(fd: int, n: int) -> bytes | None:
    """n bytes from fd, or None on EOF before the first byte; EOFError when cut mid-frame."""
    chunks: list[bytes] = []
    got = 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            if got == 0:
                return None
            raise EOFError("channel closed in the middle of a frame")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> dict[str, Any] | None:
    """The next JSON frame from fd, or None at EOF."""
    header = _read_exact(fd, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes")
    body = _read_exact(fd, size) if size else b""
    if body is None:
        raise EOFError("channel closed in the middle of a frame")
    data = json.loads(body.decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError("a frame must hold a JSON object")
    return data


def write_frame(fd: int, data: dict[str, Any]) -> None:
    """Write one JSON frame to fd (blocking until all of it is written)."""
    body = json.dumps(data, separators=(",", ":")).encode("utf-8")
    view = memoryview(_HEADER.pack(len(body)) + body)
    while view:
        written = os.write(fd, view)
        view = view[written:]


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


def _warm_up() -> None:
    """Import torch and torch-mlir and lower a tiny module, so the first real job is fast.

    This also lets torch install what it installs lazily (torch._dynamo wraps
    torch.manual_seed, ...) before the hygiene baseline is taken.
    """
    import torch
    import torch_mlir.fx  # noqa: F401

    try:
        from torch_mlir_lens.worker.lowering import lower_module

        tiny = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
        lower_module(tiny, (torch.randn(2, 4),), module_name="warm-up", user_files=[],
                     targets=["linalg"])
    except Exception as exc:  # only a warm-up: the first job will report real problems
        print(f"torch-mlir-lens worker: warm-up lowering failed: {exc}", file=sys.stderr)


def serve(in_fd: int, out_fd: int) -> int:
    """Read jobs from in_fd, run them one at a time, write replies to out_fd; 0 at EOF."""
    from torch_mlir_lens.worker import hygiene
    from torch_mlir_lens.worker.jobs import run_job

    baseline = hygiene.Baseline.take()
    # Tell the parent the imports are done: job time-outs start counting from here.
    write_frame(out_fd, {"id": 0, "ok": True, "result": {"ready": True, "pid": os.getpid()}})
    while True:
        try:
            job = read_frame(in_fd)
        except (EOFError, ValueError, UnicodeDecodeError) as exc:
            print(f"torch-mlir-lens worker: bad frame: {exc}", file=sys.stderr)
            return 1
        if job is None:
            return 0
        reply = run_job(job)
        restart = hygiene.after_job(baseline)
        if restart:
            # The parent replaces this worker once it has the reply.
            reply["restart"] = restart
        try:
            write_frame(out_fd, reply)
        except (TypeError, ValueError) as exc:  # a result that does not serialize
            write_frame(out_fd, {
                "id": job.get("id"), "ok": False,
                "error": {"kind": "bad-request", "message": f"unserializable result: {exc}",
                          "file": None, "line": None},
            })
        except BrokenPipeError:
            return 0


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
    in_fd, out_fd = _protect_channel(in_fd, out_fd)
    _quiet_std_streams()
    # Fatal signals and SIGUSR1 (sent by the parent on a time-out) dump the Python stack to
    # stderr, so a crash or a hang can be reported at the user's line.
    faulthandler.enable()
    faulthandler.register(signal.SIGUSR1, all_threads=False)
    _warm_up()
    _become_subreaper()
    code = serve(in_fd, out_fd)
    if os.environ.get(OWN_GROUP_ENV) == "1" and os.getpgrp() == os.getpid():
        # The parent went away without stopping us: end whatever the user's code spawned.
        from torch_mlir_lens.worker.hygiene import kill_descendants

        kill_descendants()
        sys.stdout.flush()
        sys.stderr.flush()
        os.killpg(os.getpid(), signal.SIGKILL)
    return code


def _become_subreaper() -> None:
    """Adopt orphaned descendants (double forks, setsid children) so they stay findable.

    The parent kills the worker's whole family (group + descendants); without this, a child of
    a child whose parent exited would be re-parented to init and escape.
    """
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


if __name__ == "__main__":
    raise SystemExit(main())
