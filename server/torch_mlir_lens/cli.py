"""`torch-mlir-lens`: lower, check and export PyTorch modules from the command line.

A stable contract (scripts depend on it):

    torch-mlir-lens lower FILE [--module NAME | --line N] [--target T | --pipeline STR]
                          [--inputs EXPR | --inputs-file PATH] [--init EXPR] [--annotate]
                          [--frames user|all] [--keep-weights] [--debug-info]
                          [--print-after-all] [--json]
    torch-mlir-lens check PATH… [--module NAME] [--targets linalg,tosa,stablehlo] [--inputs …]
                          [-j N] [--format text|json|sarif|github] [-o OUT] [--baseline FILE]
                          [--write-baseline] [--shard I/N] [--exclude PATTERN] [--json]
    torch-mlir-lens merge REPORT… [-o OUT] [--format F]
    torch-mlir-lens export FILE --module NAME [--target T] -o OUT [--bytecode]
    torch-mlir-lens verify FILE [--module NAME | --line N] [--rtol R] [--atol A] [--json]
    torch-mlir-lens serve [--tcp --host 127.0.0.1 --port N]

Exit codes: 0 done; 1 the module does not lower (unsupported ops, export or lowering errors);
2 bad input (missing file, syntax error, unknown module or target, bad inputs or pipeline);
3 the job could not run (the worker crashed, timed out or hit the memory limit).

The user's code runs in the worker process (the same one the language server uses), never in
this process, which does not import torch: a module that crashes cannot take the CLI down.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import gc
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from torch_mlir_lens import culprits, notebook, notebook_cli
from torch_mlir_lens.results import ErrorKind, LensError, LowerResult
from torch_mlir_lens.targets import BACKENDS, TARGETS

PROG = "torch-mlir-lens"

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_NO_RUN = 3

_BAD_INPUT_KINDS = {
    ErrorKind.SYNTAX_ERROR, ErrorKind.LOAD_ERROR, ErrorKind.UNKNOWN_MODULE,
    ErrorKind.INPUTS_MISSING, ErrorKind.BAD_INPUTS, ErrorKind.BAD_PIPELINE,
    ErrorKind.BAD_REQUEST, ErrorKind.WRITE_ERROR,
}
_NO_RUN_KINDS = {
    ErrorKind.WORKER_CRASH, ErrorKind.TIMEOUT, ErrorKind.MEMORY_LIMIT, ErrorKind.CANCELLED,
}


class CliError(Exception):
    """A failure to report as one line and an exit code."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT, *, file: str | None = None,
                 line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.file = file
        self.line = line


def exit_code_for(kind: str) -> int:
    """The exit code of a LensError kind."""
    if kind in _BAD_INPUT_KINDS:
        return EXIT_BAD_INPUT
    if kind in _NO_RUN_KINDS:
        return EXIT_NO_RUN
    return EXIT_FAILED


def _display(path: str | None) -> str:
    """A path as people want to read it: relative to the working directory when inside it."""
    if not path:
        return ""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _where(file: str | None, line: int | None) -> str:
    program = notebook_cli.program_of(file)  # a notebook's lines are CELL:LINE
    if program is not None and file and line:
        return notebook.location(_display(file), program, line)
    return f"{_display(file)}:{line}" if file and line else _display(file)


def _line_text(src: _Source, line: int | None) -> str:
    return notebook_cli.line_text(src.notebook, line)


def _json(src: _Source, value: Any) -> str:
    return notebook_cli.to_json(src.notebook, src.path, value)


def _from_lens(err: LensError, default_file: str) -> CliError:
    return CliError(notebook_cli.relabel(err.message, default_file), exit_code_for(err.kind),
                    file=err.file or default_file, line=err.line)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), like every other bad input."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{PROG}: error: {message}\n")
        raise SystemExit(EXIT_BAD_INPUT)


def _add_inputs(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--inputs", metavar="EXPR",
                       help="Python expression giving the tuple of example inputs")
    group.add_argument("--inputs-file", metavar="PATH",
                       help="torch.save'd tuple of tensors or dict of keyword tensors")
    parser.add_argument("--init", metavar="EXPR", help="constructor arguments (a tuple)")
    parser.add_argument("--strict", action="store_true", help="torch.export strict mode")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S",
                        help="give up on a job after S seconds (default 60)")
    parser.add_argument("--memory-limit", type=int, default=8192, metavar="MB",
                        help="stop a job using more than MB megabytes (default 8192)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `torch-mlir-lens` command."""
    parser = _Parser(
        prog=PROG, description="See what a PyTorch nn.Module becomes in MLIR, line by line.",
        epilog="exit codes: 0 ok, 1 does not lower, 2 bad input, 3 worker crash/time-out/memory",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    lower = sub.add_parser("lower", help="print a module's IR at a target")
    lower.add_argument("file")
    which = lower.add_mutually_exclusive_group()
    which.add_argument("--module", metavar="NAME")
    which.add_argument("--line", type=int, metavar="N", help="the module around line N")
    how = lower.add_mutually_exclusive_group()
    how.add_argument("--target", default=None, metavar="T",
                     help=f"one of {', '.join(TARGETS)} (default linalg)")
    how.add_argument("--pipeline", metavar="STR", help="a custom MLIR pass pipeline")
    _add_inputs(lower)
    lower.add_argument("--annotate", action="store_true",
                       help="interleave the IR with the source lines that produced it")
    lower.add_argument("--frames", choices=("user", "all"), default="user",
                       help="with --annotate: 'all' also shows the library lines (e.g. "
                            "transformers' modeling_*.py) that produced the ops")
    lower.add_argument("--keep-weights", action="store_true", help="print weights in full")
    lower.add_argument("--debug-info", action="store_true", help="print locations")
    lower.add_argument("--print-after-all", action="store_true",
                       help="also print the IR after every pass")
    lower.add_argument("--json", action="store_true", help="print the result as JSON")

    check = sub.add_parser("check", help="list the ops each backend cannot lower")
    check.add_argument("paths", nargs="*", metavar="PATH",
                       help="files, folders and globs (default: `paths` in pyproject.toml)")
    check.add_argument("--module", metavar="NAME")
    check.add_argument("--targets", default=",".join(BACKENDS), metavar="LIST",
                       help=f"comma-separated targets (default {','.join(BACKENDS)})")
    _add_inputs(check)
    check.add_argument("--json", action="store_true", help="same as --format json")
    from torch_mlir_lens.repo_check.command import add_check_arguments, add_merge_parser

    add_check_arguments(check)
    add_merge_parser(sub)

    export = sub.add_parser("export", help="write a module's IR to a file (atomically)")
    export.add_argument("file")
    export.add_argument("--module", required=True, metavar="NAME")
    export.add_argument("--target", default="linalg", metavar="T")
    export.add_argument("-o", "--output", required=True, metavar="OUT")
    export.add_argument("--bytecode", action="store_true", help="MLIR bytecode instead of text")
    _add_inputs(export)

    from torch_mlir_lens.verify_cli import add_verify_parser  # here: it imports this module

    add_verify_parser(sub)

    serve = sub.add_parser("serve", help="run the language server (LSP over stdio)")
    serve.add_argument("--tcp", action="store_true", help="listen on TCP instead of stdio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=2087)
    return parser


# --- reading the file and choosing the module ------------------------------------------------


@dataclass
class _Source:
    path: str  # absolute
    text: str
    modules: list[Any]  # discovery.ModuleInfo
    notebook: notebook.Program | None = None  # a .ipynb: `text` is its cells' program


def _load_source(file: str) -> _Source:
    path = os.path.abspath(file)
    if not os.path.isfile(path):
        raise CliError("no such file", file=file)
    if notebook.is_notebook(path):
        return _load_notebook(path, file)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read the file: {exc}", file=file) from exc
    try:
        ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise CliError(f"syntax error: {exc.msg}", file=path, line=exc.lineno) from exc
    from torch_mlir_lens.discovery import find_modules

    return _Source(path, text, find_modules(text, path))


def _load_notebook(path: str, file: str) -> _Source:
    """A notebook's program; cells that do not parse are left out, with a warning each."""
    try:
        program = notebook_cli.read(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read the file: {exc}", file=file) from exc
    except notebook.NotebookError as exc:
        raise CliError(exc.message, file=path, line=exc.line) from exc
    from torch_mlir_lens.discovery import find_modules

    return _Source(path, program.text, find_modules(program.text, path), program)


def _names(modules: list[Any], src: _Source | None = None) -> str:
    found = ", ".join(f"{m.name} ({_line_text(src, m.line) if src else f'line {m.line}'})"
                      for m in modules)
    return found or "none found"


def _pick_module(src: _Source, name: str | None, line: int | None) -> str:
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


def _module_job(src: _Source, module: str, args: argparse.Namespace) -> Any:
    from torch_mlir_lens.engine import ModuleJob

    if args.inputs_file and not os.path.isfile(args.inputs_file):
        raise CliError("no such file (--inputs-file)", file=args.inputs_file)
    text = src.text
    if src.notebook is not None:  # the cells up to the module's: a later cell never runs
        text = notebook.module_text(src.notebook, src.modules, module)
    return ModuleJob(
        path=src.path, module=module, text=text, inputs=args.inputs,
        inputs_file=os.path.abspath(args.inputs_file) if args.inputs_file else None,
        init=args.init, workspace=os.getcwd(), strict=args.strict,
    )


def _engine(args: argparse.Namespace) -> Any:
    from torch_mlir_lens.engine import Engine, EngineConfig

    return Engine(EngineConfig(python=sys.executable, timeout_s=args.timeout,
                               memory_limit_mb=args.memory_limit))


def _print_diagnostics(results: Sequence[LowerResult]) -> None:
    for result in results:
        for d in result.diagnostics:
            op = f" [{d.op}]" if d.op and d.op not in d.message and not d.cause else ""
            target = f" ({d.target})" if d.target and not d.cause else ""
            where = _where(d.file, d.line) or result.module
            message = notebook_cli.relabel(d.message, d.file)
            sys.stderr.write(f"{where}: {d.severity}: {message}{op}{target}\n")
            if d.knock_on:
                sys.stderr.write(f"{where}: note: {culprits.knock_on_text(d)}\n")


def _bad_pipeline(result: LowerResult) -> LensError | None:
    for d in result.diagnostics:
        if d.kind == ErrorKind.BAD_PIPELINE:
            return LensError(ErrorKind.BAD_PIPELINE, d.message, file=d.file, line=d.line)
    return None


# --- commands --------------------------------------------------------------------------------


async def _lower(args: argparse.Namespace) -> int:
    target = args.target or "linalg"
    if not args.pipeline and target not in TARGETS:
        raise CliError(f"unknown target {target!r} (choose from {', '.join(TARGETS)})")
    if args.frames != "user" and not args.annotate:
        raise CliError("--frames applies to --annotate output (--json's map always has chains)")
    src = _load_source(args.file)
    module = _pick_module(src, args.module, args.line)
    job = _module_job(src, module, args)
    engine = _engine(args)
    await engine.start()
    try:
        results = await engine.lower(
            job, targets=[] if args.pipeline else [target], pipeline=args.pipeline,
            keep_weights=args.keep_weights, debug_info=args.debug_info,
            print_after_all=args.print_after_all,
        )
    except LensError as err:
        raise _from_lens(err, src.path) from err
    finally:
        await engine.stop()
    result = results[0]
    bad = _bad_pipeline(result)
    if bad is not None:
        raise _from_lens(bad, src.path)
    if args.json:
        print(_json(src, result.to_json()))
    else:
        if args.print_after_all and result.passes:
            for p in result.passes:
                if not p.ir.lstrip().startswith("// -----//"):  # MLIR's own header, if any
                    print(f"// -----// IR Dump After {p.name} //----- //")
                print(p.ir.rstrip("\n"))
            print("// -----// Result //----- //")
        if args.annotate:
            from torch_mlir_lens.annotate import annotate

            program = src.notebook
            sys.stdout.write(annotate(src.text, result, path=src.path, frames=args.frames,
                                      line_label=program.label if program is not None else str))
        else:
            sys.stdout.write(result.ir if result.ir.endswith("\n") or not result.ir
                             else result.ir + "\n")
        _print_diagnostics(results)
    return EXIT_OK if result.ok else EXIT_FAILED


def _target_verdict(result: LowerResult) -> dict[str, Any]:
    unsupported = [{"op": d.op, "line": d.line, "cause": culprits.cause_of(d)}
                   for d in culprits.culprit_diagnostics(result.diagnostics)]
    errors = [d for d in result.diagnostics
              if d.kind != ErrorKind.UNSUPPORTED_OP and d.severity == "error"]
    return {"ok": result.ok and not unsupported, "unsupported": unsupported,
            "error": errors[0].message if errors else None,
            "error_line": errors[0].line if errors else None}


async def _check(args: argparse.Namespace) -> int:
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    for t in targets:
        if t not in TARGETS:
            raise CliError(f"unknown target {t!r} (choose from {', '.join(TARGETS)})")
    if not targets:
        raise CliError("--targets names no target")
    src = _load_source(args.file)
    explicit = bool(args.inputs or args.inputs_file or args.init)
    if args.module:
        chosen = [m for m in src.modules if m.name == args.module]
        names = [(args.module, chosen[0].line if chosen else None, "given")]
    elif explicit:
        names = [(_pick_module(src, None, None), src.modules[0].line, "given")]
    else:
        names = [(m.name, m.line, m.inputs) for m in src.modules]
    if not names:
        raise CliError("no nn.Module class found", file=src.path)

    report: list[dict[str, Any]] = []
    failed = False
    engine = _engine(args)
    await engine.start()
    try:
        for name, line, inputs in names:
            entry: dict[str, Any] = {"name": name, "line": line, "inputs": inputs, "targets": {}}
            report.append(entry)
            if inputs == "missing":
                entry["skipped"] = "no example inputs (add a '# torch-mlir-lens: inputs=(...)' " \
                                   "comment above the class)"
                continue
            try:
                results = await engine.lower(_module_job(src, name, args), targets=targets)
            except LensError as err:
                if explicit and exit_code_for(err.kind) == EXIT_BAD_INPUT:
                    raise _from_lens(err, src.path) from err
                failed = True
                entry["error"] = {"kind": err.kind, "message": err.message, "line": err.line}
                entry["targets"] = {t: {"ok": False, "unsupported": [], "error": err.message}
                                    for t in targets}
                continue
            for result in results:
                verdict = _target_verdict(result)
                failed = failed or not verdict["ok"]
                entry["targets"][result.target] = verdict
    finally:
        await engine.stop()

    if args.json:
        print(_json(src, {"file": src.path, "modules": report}))
    else:
        _print_check(src, report)
    return EXIT_FAILED if failed else EXIT_OK


async def _check_paths(args: argparse.Namespace) -> int:
    """`check PATH…`: a repository (repo_check); explicit inputs: the one module above."""
    from torch_mlir_lens.repo_check import command

    if command.single_module_run(args):
        command.fill_single_module_defaults(args)
        return await _check(args)
    return await command.run_check(args)


def _indented(message: str, prefix: str) -> str:
    """A multi-line message with its continuation lines under the first."""
    lines = message.splitlines() or [""]
    return "\n".join([lines[0], *(prefix + ln for ln in lines[1:])])


def _print_check(src: _Source, report: list[dict[str, Any]]) -> None:
    print(_display(src.path))
    for entry in report:
        head = f"  {entry['name']} ({_line_text(src, entry['line'])})" if entry["line"] else \
            f"  {entry['name']}"
        if "skipped" in entry:
            print(f"{head}: skipped, {entry['skipped']}")
            continue
        if "error" in entry:
            err = entry["error"]
            at = f" at {_line_text(src, err['line'])}" if err.get("line") else ""
            print(f"{head}: error{at}: {_indented(err['message'], '      ')}")
            continue
        verdicts = list(entry["targets"].values())
        errors = {(v["error"], v["error_line"]) for v in verdicts}
        if verdicts and all(not v["ok"] and not v["unsupported"] for v in verdicts) \
                and len(errors) == 1:
            # One failure before any backend (the export): say it once.
            message, line = errors.pop()
            at = f" at {_line_text(src, line)}" if line else ""
            print(f"{head}: failed{at}: {_indented(message or 'failed', '      ')}")
            continue
        marks = []
        for target, v in entry["targets"].items():
            if v["ok"]:
                marks.append(f"{target} ok")
            elif v["unsupported"]:
                marks.append(f"{target} {len(v['unsupported'])} unsupported")
            else:
                marks.append(f"{target} failed")
        print(f"{head}: " + ", ".join(marks))
        for target, v in entry["targets"].items():
            for u in v["unsupported"]:
                at = _line_text(src, u["line"]) if u["line"] else "no line"
                print(f"    {target}: {u.get('cause') or u['op']} at {at}")
            if v["error"] and not v["unsupported"]:
                at = f" ({_line_text(src, v['error_line'])})" if v["error_line"] else ""
                print(f"    {target}{at}: {_indented(v['error'], '      ')}")


async def _export(args: argparse.Namespace) -> int:
    if args.target not in TARGETS:
        raise CliError(f"unknown target {args.target!r} (choose from {', '.join(TARGETS)})")
    out_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(out_dir):
        raise CliError("the output folder does not exist", file=args.output)
    src = _load_source(args.file)
    job = _module_job(src, args.module, args)
    engine = _engine(args)
    await engine.start()
    try:
        written = await engine.export(job, args.target, os.path.abspath(args.output),
                                      bytecode=args.bytecode)
    except LensError as err:
        raise _from_lens(err, src.path) from err
    finally:
        await engine.stop()
    print(f"wrote {_display(written.get('path', args.output))} ({written.get('bytes', '?')} bytes)")
    return EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    # First thing: the worker's torch imports take seconds and overlap ours (pygls,
    # lsprotocol). It runs no user code until a job arrives, so trust is not involved yet;
    # the server stops it at once if the client says the workspace is untrusted.
    from torch_mlir_lens.engine.worker_client import spawn_early

    early = spawn_early(sys.executable)
    # lsprotocol builds hundreds of classes as it is imported: collecting garbage meanwhile
    # only costs start-up time (~15 %), and what it builds lives as long as the server.
    gc.disable()
    try:
        from torch_mlir_lens.lsp.server import run_server
    finally:
        gc.freeze()
        gc.enable()
    return run_server(tcp=args.tcp, host=args.host, port=args.port, early_worker=early)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `torch-mlir-lens` command; returns the exit code (never raises, no traceback)."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "serve":
            return _serve(args)
        from torch_mlir_lens.verify_cli import run_verify

        if args.command == "merge":
            from torch_mlir_lens.repo_check.command import run_merge

            return run_merge(args)
        command = {"lower": _lower, "check": _check_paths, "export": _export,
                   "verify": run_verify}[args.command]
        return asyncio.run(command(args))
    except CliError as err:
        where = _where(err.file, err.line)
        message = next((ln.strip() for ln in err.message.splitlines() if ln.strip()), "failed")
        sys.stderr.write(f"{PROG}: error: {where + ': ' if where else ''}{message}\n")
        return err.code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug of ours: still one line, and no traceback
        sys.stderr.write(f"{PROG}: error: internal error: {type(exc).__name__}: {exc}\n")
        return EXIT_NO_RUN


if __name__ == "__main__":
    raise SystemExit(main())
