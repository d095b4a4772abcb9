"""What every command of the CLI shares: exit codes, one-line errors, reading the file,
choosing the module, the worker job, the engine, and how locations and diagnostics are printed.

Never imports torch: the user's code runs in the worker process.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from torch_mlir_lens import defaults
from torch_mlir_lens.cli import notebook_locations
from torch_mlir_lens.cli.parser import EXIT_BAD_INPUT, PROG, SIGNAL_BASE
from torch_mlir_lens.project import limits
from torch_mlir_lens.protocol.results import ErrorKind, LensError, LowerResult
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.rules.exit_codes import exit_code_for
from torch_mlir_lens.source import notebook_program, onnx_files
from torch_mlir_lens.source.decoding import SourceError, read_source
from torch_mlir_lens.system.reading import UnreadableFile


class CliError(Exception):
    """A failure to report as one line and an exit code."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT, *, file: str | None = None,
                 line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.file = file
        self.line = line


# --- locations as people read them ------------------------------------------------------------


def display(path: str | None) -> str:
    """A path as people want to read it: relative to the working directory when inside it."""
    if not path:
        return ""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def where(file: str | None, line: int | None) -> str:
    """`FILE:LINE` (`NOTEBOOK.ipynb:CELL:LINE` in a notebook read in this run), or `FILE`."""
    program = notebook_locations.program_of(file)  # a notebook's lines are CELL:LINE
    if program is not None and file and line:
        return notebook_program.location(display(file), program, line)
    return f"{display(file)}:{line}" if file and line else display(file)


def where_diagnostic(d: Any) -> str:
    """Where a diagnostic is: `FILE:LINE`, or `MODEL.onnx: node N` in an ONNX model."""
    if d.node is not None and onnx_files.is_onnx(d.file):
        return f"{display(d.file)}: node {d.node.index}"
    return where(d.file, d.line)


def indented(message: str, prefix: str) -> str:
    """A multi-line message with its continuation lines under the first."""
    lines = message.splitlines() or [""]
    return "\n".join([lines[0], *(prefix + ln for ln in lines[1:])])


def from_lens(err: LensError, default_file: str) -> CliError:
    """A worker's LensError as the CLI reports it (its file, else the file given)."""
    return CliError(notebook_locations.relabel(err.message, default_file), exit_code_for(err.kind),
                    file=err.file or default_file, line=err.line)


def report_error(err: CliError) -> int:
    """Print `PROG: error: FILE:LINE: message` (the first non-empty line); the exit code."""
    at = where(err.file, err.line)
    message = next((ln.strip() for ln in err.message.splitlines() if ln.strip()), "failed")
    sys.stderr.write(f"{PROG}: error: {at + ': ' if at else ''}{message}\n")
    return err.code


# --- the argument parser ---------------------------------------------------------------------


def add_inputs(parser: argparse.ArgumentParser) -> None:
    """The options of every command that runs a module: inputs, constructor, limits."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--inputs", metavar="EXPR",
                       help="Python expression giving the tuple of example inputs")
    group.add_argument("--inputs-file", metavar="PATH",
                       help="torch.save'd tuple of tensors or dict of keyword tensors")
    parser.add_argument("--init", metavar="EXPR", help="constructor arguments (a tuple)")
    parser.add_argument("--rewrites", metavar="LIST",
                        help="lower through these rewrites, beyond the module's `rewrites=`: "
                             "NAME@BACKEND or NAME items, comma-separated; `auto`: every "
                             "rewrite proven for a rejected op; `off` (check): prove none")
    parser.add_argument("--strict", action="store_true", help="torch.export strict mode")
    parser.add_argument("--inline-blocks", action="store_true",
                        help="lower repeated blocks inline, not as one function per block")
    parser.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE",
                        help="an ONNX model's dynamic dim (dim_param) at this size (default 1); "
                             "repeat for several")
    parser.add_argument("--timeout", type=limits.argument(limits.timeout_seconds),
                        default=defaults.TIMEOUT_S, metavar="S",
                        help=f"give up on a job after S seconds (default {defaults.TIMEOUT_S:g})")
    parser.add_argument("--memory-limit", type=limits.argument(limits.memory_limit_mb),
                        default=defaults.MEMORY_LIMIT_MB, metavar="MB",
                        help="stop a job using more than MB megabytes "
                             f"(default {defaults.MEMORY_LIMIT_MB})")


def add_cache(parser: argparse.ArgumentParser) -> None:
    """`--cache-dir`: keep lowering results in a folder across runs (a CI cache step can keep
    it between jobs); default `$TORCH_MLIR_LENS_CACHE_DIR`, else no persistent cache."""
    parser.add_argument(
        "--cache-dir", metavar="DIR", default=os.environ.get(defaults.CACHE_DIR_ENV) or None,
        help="keep results in DIR and answer unchanged modules from it, confirmed against "
             f"their files and library versions (default ${defaults.CACHE_DIR_ENV}, else none)")


def add_module_choice(parser: argparse.ArgumentParser) -> None:
    """`--module NAME | --line N`: which module of the file."""
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--module", metavar="NAME")
    which.add_argument("--line", type=int, metavar="N", help="the module around line N")


# --- reading the file and choosing the module ------------------------------------------------


@dataclass
class Source:
    """The file a command works on, and the modules found in it."""

    path: str  # absolute
    text: str
    modules: list[Any]  # discovery.ModuleInfo
    notebook: notebook_program.Program | None = None  # a .ipynb: `text` is its cells' program
    onnx: bool = False  # an ONNX model: no text (the worker reads it), one graph

    def line_text(self, line: int | None) -> str:
        """`line N`; `cell C line L` in a notebook."""
        return notebook_locations.line_text(self.notebook, line)

    def to_json(self, value: Any) -> str:
        """A result as JSON (a notebook's lines as cell lines)."""
        return notebook_locations.to_json(self.notebook, self.path, value)


def load_source(file: str) -> Source:
    """Read and parse `file` (a .py or a notebook); CliError when it cannot be."""
    path = os.path.abspath(file)
    if not os.path.exists(path):
        raise CliError("no such file", file=file)
    if notebook_program.is_notebook(path):
        return _load_notebook(path, file)
    if onnx_files.is_onnx(path):
        return _load_onnx(path, file)
    try:
        text = read_source(path)
    except UnreadableFile as exc:  # a device, a FIFO, a folder, too large
        raise CliError(str(exc), file=file) from exc
    except OSError as exc:
        raise CliError(f"cannot read the file: {exc}", file=file) from exc
    except SourceError as exc:
        raise CliError(f"cannot read the file: {exc.message}", file=path,
                       line=exc.line) from exc
    try:
        ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise CliError(f"syntax error: {exc.msg}", file=path, line=exc.lineno) from exc
    from torch_mlir_lens.discovery import find_modules

    return Source(path, text, find_modules(text, path))


def _load_notebook(path: str, file: str) -> Source:
    """A notebook's program; cells that do not parse are left out, with a warning each."""
    try:
        program = notebook_locations.read(path)
    except UnreadableFile as exc:
        raise CliError(str(exc), file=file) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read the file: {exc}", file=file) from exc
    except notebook_program.NotebookError as exc:
        raise CliError(exc.message, file=path, line=exc.line) from exc
    from torch_mlir_lens.discovery import find_modules

    return Source(path, program.text, find_modules(program.text, path), program)


def _load_onnx(path: str, file: str) -> Source:
    """An ONNX model: checked to be a readable file here, parsed only in the worker."""
    try:
        onnx_files.stand_in_text(path)
    except OSError as exc:  # a device, a FIFO, a folder, too large
        raise CliError(str(exc), file=file) from exc
    return Source(path, "", [], onnx=True)


def _names(modules: list[Any], src: Source) -> str:
    found = ", ".join(f"{m.name} ({src.line_text(m.line)})" for m in modules)
    return found or "none found"


def pick_module(src: Source, name: str | None, line: int | None) -> str:
    """The module named, or the one around `line`, or the file's only one. An ONNX model
    has one graph: `--module` may name it (the worker checks the name), `--line` has nothing
    to point at."""
    if src.onnx:
        if line is not None:
            raise CliError("an ONNX model has no lines: it has one graph (name it with "
                           "--module, or leave --module out)", file=src.path)
        return name or onnx_files.THE_GRAPH
    if name:
        return name
    if line is not None:
        from torch_mlir_lens.discovery import module_at_line

        found = module_at_line(src.modules, line)
        if found is None:
            raise CliError(f"no module at line {line}; modules: {_names(src.modules, src)}",
                           file=src.path, line=line)
        return str(found.name)
    if len(src.modules) == 1:
        return str(src.modules[0].name)
    if not src.modules:
        raise CliError("no nn.Module class found (name a function with --module)", file=src.path)
    raise CliError(f"several modules, choose one with --module: {_names(src.modules, src)}",
                   file=src.path)


def module_job(src: Source, module: str, args: argparse.Namespace) -> Any:
    """The engine's ModuleJob for `module` of `src`, with the command's inputs options."""
    from torch_mlir_lens.engine import GivenInputs, JobSettings
    from torch_mlir_lens.engine import module_job as build

    if args.inputs_file and not os.path.isfile(args.inputs_file):
        raise CliError("no such file (--inputs-file)", file=args.inputs_file)
    text: str | None = src.text
    if src.onnx:
        text = None  # the engine keys the job by the model's digest; the worker reads it
    if src.notebook is not None:  # the cells up to the module's: a later cell never runs
        text = notebook_program.module_text(src.notebook, src.modules, module)
    return build(
        src.path, module, text=text, workspace=os.getcwd(),
        settings=JobSettings(strict_export=args.strict,
                             rewrites=tuple(rewrite_items(getattr(args, "rewrites", None))),
                             inline_blocks=getattr(args, "inline_blocks", False)),
        given=GivenInputs(args.inputs, os.path.abspath(args.inputs_file)
                          if args.inputs_file else None, args.init),
        via=getattr(args, "via", None) or "fx", dims=dim_sizes(getattr(args, "dim", None)))


def dim_sizes(items: list[str] | None) -> dict[str, int]:
    """`--dim NAME=SIZE` items as a dict; CliError for one that is not NAME=SIZE (SIZE >= 1)."""
    sizes: dict[str, int] = {}
    for item in items or []:
        name, sep, size = item.partition("=")
        if not sep or not name.strip() or not size.strip().isdigit() or int(size) < 1:
            raise CliError(f"--dim {item!r}: write NAME=SIZE, SIZE a whole number >= 1")
        sizes[name.strip()] = int(size)
    return sizes


def rewrite_items(text: str | None) -> list[str]:
    """The `--rewrites` items a job lowers with ([] for none, or for check's `off`);
    CliError when one cannot be read."""
    from torch_mlir_lens.rules.rewrite_specs import command_line_items

    try:
        return command_line_items(text)
    except ValueError as exc:
        raise CliError(f"--rewrites: {exc}") from None


# --- the engine --------------------------------------------------------------------------------


EngineFactory = Callable[[argparse.Namespace], Any]  # returns an Engine (or a stand-in)


def make_engine(args: argparse.Namespace) -> Any:
    """The engine a command runs its jobs on: a worker process with the command's limits."""
    from torch_mlir_lens.engine import Engine, EngineConfig

    return Engine(EngineConfig(python=sys.executable, timeout_s=args.timeout,
                               memory_limit_mb=args.memory_limit,
                               cache_dir=getattr(args, "cache_dir", None)))


@contextlib.asynccontextmanager
async def running_engine(args: argparse.Namespace, make_engine: EngineFactory,
                         path: str) -> AsyncIterator[Any]:
    """The command's engine, started, and stopped on the way out (the worker goes with it).

    A LensError escaping the block becomes the command's located error about `path`
    (`FILE:LINE: message`, exit code by kind).
    """
    engine = make_engine(args)
    await engine.start()
    try:
        yield engine
    except LensError as err:
        raise from_lens(err, path) from err
    finally:
        await engine.stop()


# --- ending on a signal -----------------------------------------------------------------------

# Ctrl-C, `kill`/`timeout`/CI cancellation, a closed terminal: each ends the run the same way.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.asynccontextmanager
async def ended_by_signals() -> AsyncIterator[None]:
    """Turn SIGINT, SIGTERM and SIGHUP into a cancellation of the running task.

    The task's `finally` blocks stop the engines (each worker with its process group and
    descendants) before the command exits; nothing is written after it (report, baseline).
    The command then fails with exit code 128 + the signal's number, as a shell reports a
    process the signal ended (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP).
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    received: list[signal.Signals] = []

    def on_signal(sig: signal.Signals) -> None:
        if not received and task is not None:  # a second signal: the clean-up is under way
            received.append(sig)
            task.cancel()

    installed = []
    for sig in STOP_SIGNALS:
        try:
            loop.add_signal_handler(sig, on_signal, sig)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            pass
    try:
        yield
    except asyncio.CancelledError:
        if not received or task is None:
            raise
        task.uncancel()
        raise CliError(f"stopped by {received[0].name}: its workers were ended, nothing was "
                       "written", SIGNAL_BASE + received[0].value) from None
    else:
        if received and task is not None:  # it came as the command finished: it stands
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0)  # take the pending cancellation here, not in asyncio.run
            task.uncancel()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


# --- printing results --------------------------------------------------------------------------


def print_diagnostics(results: Sequence[LowerResult]) -> None:
    """Every diagnostic of `results` on stderr, `FILE:LINE: severity: message [op] (target)`."""
    for result in results:
        for d in result.diagnostics:
            op = f" [{d.op}]" if d.op and d.op not in d.message and not d.cause else ""
            target = f" ({d.target})" if d.target and not d.cause else ""
            at = where_diagnostic(d) or result.module
            message = notebook_locations.relabel(d.message, d.file)
            sys.stderr.write(f"{at}: {d.severity}: {message}{op}{target}\n")
            if d.knock_on:
                sys.stderr.write(f"{at}: note: {culprits.knock_on_text(d)}\n")


def bad_pipeline(result: LowerResult) -> LensError | None:
    """The error of a custom pipeline that does not parse (bad input, not a failed lowering)."""
    for d in result.diagnostics:
        if d.kind == ErrorKind.BAD_PIPELINE:
            return LensError(ErrorKind.BAD_PIPELINE, d.message, file=d.file, line=d.line)
    return None
