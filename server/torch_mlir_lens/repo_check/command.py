"""`check PATH…` over a repository and `merge REPORT…`: what the CLI calls.

Settings come from the command line, else `[tool.torch-mlir-lens]` of the closest
pyproject.toml (from the working directory up to the repository root), else the defaults.
Paths in reports and baselines are relative to the project root: the folder of that
pyproject.toml, or the working directory without one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from torch_mlir_lens import defaults
from torch_mlir_lens.repo_check import baseline as baselines
from torch_mlir_lens.repo_check import limits
from torch_mlir_lens.repo_check.config import (
    ConfigError,
    ProjectConfig,
    discover_config,
    load_config,
)
from torch_mlir_lens.repo_check.findings import Finding
from torch_mlir_lens.repo_check.notebooks import where
from torch_mlir_lens.repo_check.outputs import unwritable, write_atomically
from torch_mlir_lens.repo_check.paths import PathError, collect, rel_path
from torch_mlir_lens.repo_check.plan import parse_shard, plan_modules, shard
from torch_mlir_lens.repo_check.progress import Progress
from torch_mlir_lens.repo_check.report import EXIT_BAD_INPUT, EXIT_OK, Report, module_key
from torch_mlir_lens.repo_check.run_identity import (
    MergeMismatch,
    RunIdentity,
    check_modules_once,
    check_together,
    config_json,
    plan_json,
)
from torch_mlir_lens.repo_check.runner import (
    RunOptions,
    default_jobs,
    memory_available_mb,
    run_modules,
)
from torch_mlir_lens.targets import BACKENDS, TARGETS

FORMATS = ("text", "json", "sarif", "github")


def add_check_arguments(check: argparse.ArgumentParser) -> None:
    """The repository options of `check` (the parser already has the single-file ones)."""
    check.add_argument("-j", "--jobs", type=limits.argument(limits.jobs), metavar="N",
                       help="N workers side by side, at most one per CPU (default: CPU "
                            "count, bounded by memory: N × --memory-limit must fit)")
    check.add_argument("--format", choices=FORMATS, help="report format (default text)")
    check.add_argument("-o", "--output", metavar="FILE",
                       help="write the report to FILE (the summary still goes to stderr)")
    check.add_argument("--baseline", metavar="FILE",
                       help="accept the findings listed in FILE: only new ones fail")
    check.add_argument("--write-baseline", action="store_true",
                       help="write every current finding to the baseline file and exit 0")
    check.add_argument("--shard", metavar="I/N",
                       help="check only the I-th of N equal slices of the modules")
    check.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                       help="skip paths matching this gitignore-style pattern (repeatable)")
    check.add_argument("--require-inputs", action="store_true",
                       help="a module without example inputs is an error, not a note")
    check.add_argument("--list", action="store_true",
                       help="print the modules this run (or shard) would check, one "
                            "`file::Module` a line, and exit without lowering anything")
    check.add_argument("--config", metavar="PYPROJECT",
                       help="read [tool.torch-mlir-lens] from this file (default: the "
                            "closest pyproject.toml that has it)")
    # Unset means "from pyproject.toml, else the default": see `_resolve`.
    check.set_defaults(targets=None, timeout=None, memory_limit=None)


def add_merge_parser(sub: Any) -> None:
    """`merge REPORT… [-o OUT] [--format F]`: one report from the reports of shards."""
    merge = sub.add_parser("merge", help="combine the JSON or SARIF reports of shards")
    merge.add_argument("reports", nargs="+", metavar="REPORT")
    merge.add_argument("-o", "--output", metavar="FILE")
    merge.add_argument("--format", choices=FORMATS,
                       help="output format (default: that of the inputs; SARIF in, SARIF out)")


def single_module_run(args: argparse.Namespace) -> bool:
    """Explicit inputs name one module of one file (or notebook): the single-file `check`
    handles it."""
    return bool(args.inputs or args.inputs_file or args.init) and len(args.paths) <= 1


def _cli_error(message: str, *, file: str | None = None, line: int | None = None,
               code: int = 2) -> Exception:
    from torch_mlir_lens.cli.common import CliError

    return CliError(message, code, file=file, line=line)


def _config(args: argparse.Namespace) -> ProjectConfig:
    try:
        if args.config:
            if os.path.isdir(args.config):
                raise _cli_error("is a folder: --config takes a pyproject.toml file (such as "
                                 f"{os.path.join(args.config, 'pyproject.toml')})",
                                 file=args.config)
            if not os.path.isfile(args.config):
                raise _cli_error("no such file (--config)", file=args.config)
            return load_config(args.config)
        return discover_config(os.getcwd())
    except ConfigError as err:
        raise _cli_error(err.message, file=err.path) from err


def fill_single_module_defaults(args: argparse.Namespace) -> None:
    """The values the single-file `check` expects, from pyproject.toml where unset."""
    cfg = _config(args)
    args.file = args.paths[0] if args.paths else None
    if args.file is None:
        raise _cli_error("--inputs/--inputs-file/--init need one FILE")
    args.targets = args.targets or ",".join(cfg.targets or BACKENDS)
    args.timeout = args.timeout or cfg.timeout_seconds or defaults.TIMEOUT_S
    args.memory_limit = args.memory_limit or cfg.memory_limit_mb or defaults.MEMORY_LIMIT_MB
    args.strict = args.strict or bool(cfg.strict_export)


def _targets(args: argparse.Namespace, cfg: ProjectConfig) -> list[str]:
    if args.targets is None:
        return list(cfg.targets or BACKENDS)
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    for t in targets:
        if t not in TARGETS:
            raise _cli_error(f"unknown target {t!r} (choose from {', '.join(TARGETS)})")
    if not targets:
        raise _cli_error("--targets names no target")
    return targets


def _emit(text: str, output: str | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    try:
        write_atomically(output, text)
    except OSError as exc:
        raise _cli_error(f"cannot write the report: {exc.strerror or exc}", file=output) from exc


def _check_writable(path: str | None, what: str) -> None:
    """Refuse an output that cannot be written before the run, not after it."""
    problem = unwritable(path) if path is not None else None
    if problem is not None:
        raise _cli_error(f"cannot write the {what} there: {problem}", file=path)


def _jobs(args: argparse.Namespace, cfg: ProjectConfig, memory: int) -> int:
    """-j (else `jobs`, else CPUs bounded by memory), at most one worker per CPU."""
    wanted = args.jobs or cfg.jobs
    if wanted is None:
        jobs = default_jobs(memory)[0]
    else:
        jobs, note = limits.capped_jobs(wanted)
        if note:
            sys.stderr.write(f"note: {note}\n")
    available = memory_available_mb()
    if available is not None and jobs * memory > available:
        sys.stderr.write(f"warning: {jobs} workers × {memory} MB (--memory-limit) exceed the "
                         f"{available} MB available: the machine may run out of memory\n")
    return jobs


def _shard(args: argparse.Namespace) -> tuple[int, int] | None:
    if not args.shard:
        return None
    try:
        spec = parse_shard(args.shard)
    except ValueError as exc:
        raise _cli_error(str(exc)) from exc
    if args.write_baseline:
        raise _cli_error("--write-baseline with --shard would write part of a baseline: "
                         "write it from a run over every module")
    return spec


def _read_baseline(path: str | None, writing: bool) -> baselines.Baseline | None:
    """The baseline to apply; when writing, the one to update (None if it does not exist
    yet), read before the run so a broken one stops it at once."""
    if not path or (writing and not os.path.exists(path)):
        return None
    try:
        return baselines.read_baseline(path)
    except baselines.BaselineError as err:
        hint = " (delete it to write a new one)" if writing else ""
        raise _cli_error(err.message + hint, file=err.path) from err


def _write_baseline(path: str, findings: list[Finding], report: Report,
                    checked: Callable[[baselines.Key], bool], root: str) -> int:
    """Update the baseline from a completed run; the exit code of `--write-baseline`."""
    if report.problems:
        sys.stderr.write(f"torch-mlir-lens: error: baseline not written: "
                         f"{len(report.problems)} files could not be read or parsed (their "
                         "entries would be lost)\n")
        return EXIT_BAD_INPUT
    try:
        update = baselines.update_baseline(path, findings, checked, root)
    except baselines.BaselineError as err:
        raise _cli_error(err.message, file=err.path) from err
    except OSError as exc:
        raise _cli_error(f"cannot write the baseline: {exc.strerror or exc}",
                         file=path) from exc
    sys.stderr.write(update.describe(os.path.relpath(path)) + "\n")
    return EXIT_OK


def render(report: Report, fmt: str, root: str) -> str:
    """The report in one of FORMATS."""
    from torch_mlir_lens.repo_check.sarif import to_sarif
    from torch_mlir_lens.repo_check.text_formats import render_github, render_text

    if fmt == "json":
        return json.dumps(report.to_json(), indent=1) + "\n"
    if fmt == "sarif":
        return json.dumps(to_sarif(report, root), indent=1) + "\n"
    if fmt == "github":
        return render_github(report, root)
    return render_text(report, root)


async def run_check(args: argparse.Namespace) -> int:
    """`check PATH…`: discover, shard, lower side by side, apply the baseline, report.

    Every input is checked before the first module is lowered: settings, the baseline,
    whether the report and the baseline can be written."""
    cfg = _config(args)
    root = cfg.root or os.getcwd()
    targets = _targets(args, cfg)
    fmt = args.format or ("json" if args.json else "text")
    memory = args.memory_limit or cfg.memory_limit_mb or defaults.MEMORY_LIMIT_MB
    jobs = _jobs(args, cfg, memory)
    shard_spec = _shard(args)
    baseline_path = args.baseline or cfg.baseline
    write_to = None
    if args.write_baseline:
        write_to = baseline_path or os.path.join(root, baselines.DEFAULT_NAME)
        _check_writable(write_to, "baseline")
    _check_writable(args.output, "report")
    paths = list(args.paths) or list(cfg.paths)
    if not paths:
        raise _cli_error("no PATH given (and no `paths` in [tool.torch-mlir-lens])")
    try:
        collected = collect(paths, [*cfg.exclude, *args.exclude], root)
    except PathError as err:
        raise _cli_error(err.message, file=err.path) from err
    for named, pattern in collected.excluded:
        sys.stderr.write(f"note: {named}: excluded by '{pattern}'\n")
    for path, message in collected.warnings:
        sys.stderr.write(f"{rel_path(path, os.getcwd())}: warning: {message}\n")
    plan = plan_modules(collected.files, root, dict(cfg.example_inputs), args.module)
    for w in plan.cell_warnings:
        sys.stderr.write(f"{where(w.rel, w.line, w.cell)}: warning: {w.message}\n")
    if args.module and not plan.tasks:
        raise _cli_error(f"no module named {args.module!r} in the given paths")
    tasks = plan.tasks if shard_spec is None else shard(plan.tasks, *shard_spec)
    if args.list:
        for p in plan.problems:
            sys.stderr.write(f"{where(p.rel, p.line, p.cell)}: error: {p.message}\n")
        _emit("".join(f"{t.key}\n" for t in tasks), args.output)
        return 2 if plan.problems else 0
    baseline = _read_baseline(baseline_path, writing=args.write_baseline)
    applied = None if args.write_baseline else baseline

    opts = RunOptions(
        targets=targets, jobs=jobs, root=root,
        timeout_s=args.timeout or cfg.timeout_seconds or defaults.TIMEOUT_S,
        memory_limit_mb=memory,
        example_inputs=dict(cfg.example_inputs),
        strict_export=args.strict or bool(cfg.strict_export),
        require_inputs=args.require_inputs,
        cache_dir=getattr(args, "cache_dir", None),
    )
    progress = Progress(len(tasks))
    try:
        outcomes = await run_modules(tasks, plan, opts,
                                     on_done=lambda o: progress.step(o.task.key))
    finally:
        progress.close()

    first = shard_spec is None or shard_spec[0] == 1  # file problems: reported once
    problems = [Finding(p.kind, p.kind, p.message, p.rel, p.line, p.rel, None, None,
                        cell=p.cell) for p in plan.problems if first]
    warnings = [Finding(w.kind, w.kind, w.message, w.rel, w.line, w.rel, None, None,
                        cell=w.cell) for w in plan.cell_warnings if first]
    report = Report(
        targets=targets, problems=problems, warnings=warnings,
        shards=[shard_spec] if shard_spec else [],
        config=config_json(timeout_s=opts.timeout_s, memory_limit_mb=memory,
                           strict_export=opts.strict_export,
                           require_inputs=opts.require_inputs,
                           example_inputs=opts.example_inputs,
                           baseline_keys=None if applied is None else applied.keys),
        plan=plan_json(t.key for t in plan.tasks))
    all_findings: list[Finding] = []
    for o in outcomes:
        all_findings += o.findings
    checked_modules = {(t.rel, t.name) for t in tasks}
    if applied is not None:
        report.baseline = os.path.relpath(applied.path, root)
        fixed = applied.apply(all_findings)
        report.fixed = [list(k) for k in fixed if (k[0], k[1]) in checked_modules]
    for o in outcomes:
        o.entry["findings"] = [f.to_json() for f in o.findings]
        report.modules.append(o.entry)
    report.modules.sort(key=module_key)

    code = report.exit_code()
    if write_to is not None:
        checked_files = {rel_path(f, root) for f in collected.files}
        code = _write_baseline(
            write_to, all_findings, report,
            (lambda k: (k[0], k[1]) in checked_modules) if args.module
            else (lambda k: k[0] in checked_files), root)
    _emit(render(report, fmt, root), args.output)
    if opts.cache_dir:
        sys.stderr.write(f"persistent cache {opts.cache_dir}: {opts.cache_hits} of "
                         f"{opts.cache_lookups} lowerings answered from it\n")
    if args.output is not None:
        from torch_mlir_lens.repo_check.text_formats import summary_line

        sys.stderr.write(summary_line(report) + "\n")
    return code


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError as exc:
        raise _cli_error("no such file", file=path) from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _cli_error(f"not a JSON report: {exc}", file=path) from exc


def _together(ids: list[RunIdentity], modules: list[str]) -> None:
    """The reports are the shards 1..N of one run, each module in one of them (else exit 2,
    naming what differs)."""
    try:
        check_together(ids)
        check_modules_once(modules)
    except MergeMismatch as err:
        raise _cli_error(err.message) from err


def run_merge(args: argparse.Namespace) -> int:
    """`merge REPORT…`: one report; the exit code is that of a check of every module."""
    from torch_mlir_lens.repo_check.sarif import merge_sarif, run_identity, sarif_failed

    _check_writable(args.output, "report")
    logs = [_read_json(p) for p in args.reports]
    root = os.getcwd()
    if all(isinstance(d, dict) and "runs" in d for d in logs):
        if args.format not in (None, "sarif"):
            raise _cli_error("SARIF reports merge into SARIF only (merge JSON reports for "
                             "other formats)")
        try:
            ids = [run_identity(log, path) for path, log in zip(args.reports, logs, strict=True)]
            merged = merge_sarif(logs)
            props = merged["runs"][0]["properties"]["torchMlirLens"]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise _cli_error(f"not a torch-mlir-lens SARIF log ({exc})") from exc
        _together(ids, props["modules"])
        _emit(json.dumps(merged, indent=1) + "\n", args.output)
        return 1 if sarif_failed(merged) else 0
    reports = []
    for path, data in zip(args.reports, logs, strict=True):
        try:
            reports.append(Report.from_json(data))
        except (ValueError, KeyError, TypeError) as exc:
            raise _cli_error(f"not a torch-mlir-lens check --format json report ({exc})",
                             file=path) from exc
    _together([RunIdentity(path, r.version, tuple(r.targets), r.config, r.plan,
                           tuple(r.shards)) for path, r in zip(args.reports, reports,
                                                                strict=True)],
              [f"{e['file']}::{e['name']}" for r in reports for e in r.modules])
    first = reports[0]
    merged_report = Report(targets=list(first.targets), version=first.version,
                           config=first.config, plan=first.plan)
    for r in reports:
        merged_report.modules += r.modules
        merged_report.problems += r.problems
        merged_report.warnings += r.warnings
        merged_report.shards += r.shards
        merged_report.fixed += r.fixed
        merged_report.baseline = merged_report.baseline or r.baseline
    merged_report.modules.sort(key=module_key)
    _emit(render(merged_report, args.format or "json", root), args.output)
    return merged_report.exit_code()
