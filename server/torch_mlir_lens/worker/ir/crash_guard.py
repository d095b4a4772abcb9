"""Run a step that can kill the process (an MLIR pass that asserts or segfaults) in a fork.

torch-mlir's passes are C++: a conversion that indexes out of bounds or an `llvm_unreachable`
ends the process (SIGSEGV, SIGABRT with "LLVM ERROR: ..."), and no Python code can catch it.
In the worker that would drop every target of the job and every cached program. So such steps
run in a child forked from the worker (`run_forked`): the child shares the worker's memory
(torch, the MLIR context and modules, copy-on-write), runs the step, and sends its result back
pickled through a pipe; the worker waits for it. If the child dies instead, `run_forked` raises
`Crash`, naming the signal and what the child printed last (the "LLVM ERROR" or assertion
line), and the worker carries on with the next target.

Modules cannot be pickled: a step that changes a module sends it back as MLIR bytecode
(`module_bytes` / `replace_body`). Weights travel with it, so steps on modules carrying more
than `MAX_FORKED_WEIGHT_BYTES` of weight data run in the worker itself (`worth_forking`):
there, copying them would cost more than the protection is worth (exporting a large model
with its weights), and they are the rare, explicit requests.

Which steps fork. A fork costs ~25 ms on an idle machine (100 ms loaded), as much as a small
module's whole lowering, so each path pays at most one until something crashes:

- the listing of what a backend rejects and partial lowering (many pipelines on IR torch-mlir's
  tests never saw: ops alone, calls in place of ops) run in one child (worker/culprits/failures.py);
  if it dies, the listing runs again in a child that guards each of its passes (`guarded()`), so
  the crash is pinned on its pass and op, and that op is outlined like a rejected one;
- the ordinary pipelines (raw → Torch → backend) run in-process, except in a worker started
  with `GUARD_PASSES_ENV` set: when one of them kills a worker, the worker client sees it in
  the crash dump (a frame of `_run_parsed`), starts the next worker so and runs the job again
  there, where the crash becomes a diagnostic (engine/worker_client/client.py).

`TORCH_MLIR_LENS_NO_FORK=1` runs every step in-process (debugging with a native debugger).
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import os
import pickle
import re
import signal
import sys
import tempfile
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from torch_mlir import ir

from torch_mlir_lens.worker.process import WORKER

T = TypeVar("T")

NO_FORK_ENV = "TORCH_MLIR_LENS_NO_FORK"
GUARD_PASSES_ENV = "TORCH_MLIR_LENS_GUARD_PASSES"  # the worker client sets it (same spelling)
MAX_FORKED_WEIGHT_BYTES = 64 << 20
_STDERR_TAIL = 4000  # bytes of the child's stderr kept for the message
# What a dying MLIR/LLVM build prints: the most telling line of the child's stderr.
_TELLING = re.compile(r"^(LLVM ERROR:.*|.*Assertion .* failed.*|.*UNREACHABLE.*|"
                      r"terminate called.*|Fatal Python error:.*)$", re.MULTILINE)

# How a crash reads once it is a diagnostic (crash_locate.crash_diag words it).
_CRASH_WORDS = re.compile(r"(crashed torch-mlir|torch-mlir crashed) \([^)]+\)")
# What a pass throws instead of reporting an error: C++ exceptions the bindings translate
# (`std::bad_alloc` → MemoryError, others → RuntimeError). A crash by another name.
THROWN = (MemoryError, RuntimeError)


@dataclass
class _Guard:
    """What the guard keeps between steps (the worker's part; see worker/process/)."""

    # Weight bytes imported into each context (literals' hooks report them; `note_weights`).
    weights: weakref.WeakKeyDictionary[ir.Context, int] = field(
        default_factory=weakref.WeakKeyDictionary)
    # Pipelines whose dialects each context has loaded (load_dialects runs once per pair).
    loaded: weakref.WeakKeyDictionary[ir.Context, set[str]] = field(
        default_factory=weakref.WeakKeyDictionary)
    # Children that answered and are still exiting: a torch-sized process takes ~50 ms to tear
    # down, which nobody needs to wait for; reaped later (reap_pending).
    pending: list[int] = field(default_factory=list)
    guarding: bool = False  # inside `guarded()`


def _guard() -> _Guard:
    return WORKER.part(_Guard)


class Crash(Exception):
    """The child running a step died: by `signal` (e.g. "SIGSEGV"), or without an answer."""

    def __init__(self, step: str, signal_name: str, detail: str) -> None:
        self.step = step
        self.signal_name = signal_name
        self.detail = detail
        super().__init__(self.message())

    @staticmethod
    def thrown(step: str, exc: BaseException) -> Crash:
        """The crash a C++ exception thrown by a pass stands for."""
        return Crash(step, str(exc).strip() or type(exc).__name__, "")

    def message(self) -> str:
        """One line: what crashed, how, and the child's last words."""
        text = f"torch-mlir crashed ({self.signal_name}) in {self.step}"
        return f"{text}: {self.detail}" if self.detail else text

    def __reduce__(self) -> tuple[Any, ...]:
        return Crash, (self.step, self.signal_name, self.detail)


def is_crash_message(message: str) -> bool:
    """Whether a diagnostic's message reports a crash (a step that killed its process)."""
    return bool(_CRASH_WORDS.search(message))


def note_weights(ctx: ir.Context, nbytes: int) -> None:
    """Record that modules of `ctx` carry `nbytes` of weight data (the importer's count)."""
    weights = _guard().weights
    weights[ctx] = weights.get(ctx, 0) + nbytes


def noted_weights(ctx: ir.Context) -> int:
    """The weight bytes noted for `ctx` so far."""
    return _guard().weights.get(ctx, 0)


def guarding_passes() -> bool:
    """Whether each pass pipeline runs in a child of its own: in a worker started after a
    crash, or inside `guarded()`."""
    return _guard().guarding or bool(os.environ.get(GUARD_PASSES_ENV))


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """Each pass pipeline run inside this block (and in children forked from it) forks."""
    guard = _guard()
    before, guard.guarding = guard.guarding, True
    try:
        yield
    finally:
        guard.guarding = before


def worth_forking(ctx: ir.Context) -> bool:
    """Whether steps on modules of `ctx` run in a child (see the module docstring)."""
    if os.environ.get(NO_FORK_ENV) or not hasattr(os, "fork"):
        return False
    return _guard().weights.get(ctx, 0) <= MAX_FORKED_WEIGHT_BYTES


def _telling_line(stderr: bytes) -> str:
    text = stderr[-_STDERR_TAIL:].decode("utf-8", "replace")
    found = _TELLING.findall(text)
    useful = [line.strip() for line in found if not line.startswith("Fatal Python error")]
    if useful:
        return useful[0][:300]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return found[0].strip()[:300] if found else (lines[-1][:300] if lines else "")


def _child(fn: Callable[[], Any], result_fd: int, stderr_fd: int) -> None:
    """In the child: run `fn`, write ("ok", value) or ("raise", exception), exit at once."""
    code = 0
    try:
        faulthandler.disable()  # a Python stack of the worker's says nothing about the pass
        os.dup2(stderr_fd, 2)  # what torch-mlir prints as it dies, to our file
        try:
            payload = pickle.dumps(("ok", fn()), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # sent to the parent as it is
            try:
                payload = pickle.dumps(("raise", exc), protocol=pickle.HIGHEST_PROTOCOL)
                pickle.loads(payload)  # an exception that cannot come back becomes plain
            except Exception:
                payload = pickle.dumps(("raise", RuntimeError(f"{type(exc).__name__}: {exc}")))
        with os.fdopen(result_fd, "wb", closefd=True) as out:
            out.write(payload)
        reap_pending()  # its own children (nested steps): no orphans for the worker to find
    except BaseException:  # nothing may escape a forked child
        code = 70
    finally:
        os._exit(code)


def _unpickled(data: bytes) -> tuple[str, Any] | None:
    """A child's whole answer, or None (no answer, or one cut short by its death)."""
    if not data:
        return None
    try:
        answer = pickle.loads(data)
    except Exception:
        return None
    return answer if isinstance(answer, tuple) and len(answer) == 2 else None


def run_forked(fn: Callable[[], T], *, step: str) -> T:
    """`fn()` run in a forked child, its result (pickled) returned; exceptions re-raised.

    Raises Crash when the child dies without an answer (a signal, or an exit). Runs `fn` in
    this process when forking is off (`NO_FORK_ENV`).
    """
    if os.environ.get(NO_FORK_ENV) or not hasattr(os, "fork"):
        return fn()
    reap_pending(block=False)
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile(prefix="torch-mlir-lens-step-") as err:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover  (the child; coverage does not follow it)
            os.close(read_fd)
            _child(fn, write_fd, err.fileno())
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as results:
            data = results.read()  # until the child closes it: its answer, or its death
        answer = _unpickled(data)
        if answer is not None:
            _guard().pending.append(pid)  # it answered: let it exit in its own time
        else:
            _, status = os.waitpid(pid, 0)
            err.seek(0)
            detail = _telling_line(err.read())
            if os.WIFSIGNALED(status):
                raise Crash(step, signal.Signals(os.WTERMSIG(status)).name, detail)
            raise Crash(step, f"exit code {os.WEXITSTATUS(status)}", detail)
    kind, value = answer
    if kind == "raise":
        raise value
    return value  # type: ignore[no-any-return]


def reap_pending(block: bool = True) -> None:
    """Collect the children that answered and are exiting (all of them when `block`)."""
    pending = _guard().pending
    for pid in list(pending):
        try:
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            pending.remove(pid)


def run_in_place(module_op: Any, body: Callable[[], T], *, step: str,
                 pipeline: str | None = None) -> T:
    """`body()`, which changes `module_op` in place, run in a forked child: `module_op`
    becomes the child's (bytecode), `body`'s result is returned, its exceptions re-raised,
    a crash raised as Crash. In this process when `worth_forking` says no. `pipeline`: the
    passes `body` runs, whose dialects the result may hold."""
    ctx = module_op.context
    if not worth_forking(ctx):
        return body()
    if pipeline is not None:
        load_dialects(pipeline, ctx)

    def child() -> tuple[bytes, T]:
        value = body()
        return module_bytes(module_op), value

    data, value = run_forked(child, step=step)
    # `body` may report a failure and leave IR that does not verify (a conversion stopped
    # half-way: TOSA's `tosa.const` of a complex weight), which cannot be parsed here:
    # `module_op` then stays as it was, and the caller, told of the failure, does not use it.
    with contextlib.suppress(ir.MLIRError):
        replace_body(module_op, data)
    return value


def module_bytes(module_op: Any) -> bytes:
    """`module_op` as MLIR bytecode (what a child sends back)."""
    buffer = io.BytesIO()
    module_op.operation.write_bytecode(buffer)
    return buffer.getvalue()


def replace_body(module_op: Any, data: bytes) -> None:
    """Make `module_op` the module in `data` (bytecode parsed in its context): its attributes
    and its body's ops, moved in place of the old ones."""
    ctx = module_op.context
    parsed = ir.Module.parse(data, context=ctx)
    target = module_op.operation
    body = target.regions[0].blocks[0]
    for op in list(body.operations):
        op.erase()
    for op in list(parsed.body.operations):
        body.append(op)
    source_attrs = parsed.operation.attributes
    for named in list(target.attributes):
        if named.name not in source_attrs:
            del target.attributes[named.name]
    for named in source_attrs:
        target.attributes[named.name] = named.attr


def load_dialects(pipeline: str, ctx: ir.Context) -> None:
    """Load into `ctx` every dialect `pipeline` produces, by running it on an empty module:
    what a child's result holds must parse here. Errors are ignored (loading comes first)."""
    from torch_mlir.passmanager import PassManager

    done = _guard().loaded.setdefault(ctx, set())
    if pipeline in done:
        return
    done.add(pipeline)
    handler = ctx.attach_diagnostic_handler(lambda _d: True)
    try:
        with ctx:
            empty = ir.Module.create(ir.Location.unknown(ctx))
            PassManager.parse(pipeline, context=ctx).run(empty.operation)
    except (ir.MLIRError, ValueError):
        pass
    finally:
        handler.detach()


__all__ = ["GUARD_PASSES_ENV", "MAX_FORKED_WEIGHT_BYTES", "NO_FORK_ENV", "THROWN", "Crash",
           "guarded", "guarding_passes", "is_crash_message",
           "load_dialects", "module_bytes", "note_weights", "noted_weights", "reap_pending",
           "replace_body",
           "run_forked", "run_in_place", "worth_forking"]
