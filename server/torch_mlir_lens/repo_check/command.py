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
from typing import Any

from torch_mlir_lens.repo_check import baseline as baselines
from torch_mlir_lens.repo_check.config import (
    ConfigError,
    ProjectConfig,
    discover_config,
    load_config,
)
from torch_mlir_lens.repo_check.findings import Finding
from torch_mlir_lens.repo_check.notebooks import where
from torch_mlir_lens.repo_check.paths import PathError, collect
from torch_mlir_lens.repo_check.plan import parse_shard, plan_modules, shard
from torch_mlir_lens.repo_check.progress import Progress
from torch_mlir_lens.repo_check.report import Report, module_key
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
    check.add_argument("-j", "--jobs", type=int, metavar="N",
                       help="N workers side by side (default: CPU count, bounded by memory: "
                            "N × --memory-limit must fit)")
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
    args.timeout = args.timeout or cfg.timeout_seconds or 60.0
    args.memory_limit = args.memory_limit or cfg.memory_limit_mb or 8192
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
        tmp = f"{output}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, output)
    except OSError as exc:
        raise _cli_error(f"cannot write the report: {exc.strerror or exc}", file=output) from exc


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
    """`check PATH…`: discover, shard, lower side by side, apply the baseline, report."""
    cfg = _config(args)
    root = cfg.root or os.getcwd()
    targets = _targets(args, cfg)
    fmt = args.format or ("json" if args.json else "text")
    memory = args.memory_limit or cfg.memory_limit_mb or 8192
    if args.jobs is not None and args.jobs < 1:
        raise _cli_error("-j needs a number ≥ 1")
    jobs = args.jobs or cfg.jobs or default_jobs(memory)[0]
    available = memory_available_mb()
    if available is not None and jobs * memory > available:
        sys.stderr.write(f"warning: {jobs} workers × {memory} MB (--memory-limit) exceed the "
                         f"{available} MB available: the machine may run out of memory\n")
    shard_spec = None
    if args.shard:
        try:
            shard_spec = parse_shard(args.shard)
        except ValueError as exc:
            raise _cli_error(str(exc)) from exc
        if args.write_baseline:
            raise _cli_error("--write-baseline with --shard would write part of a baseline: "
                             "write it from a run over every module")
    paths = list(args.paths) or list(cfg.paths)
    if not paths:
        raise _cli_error("no PATH given (and no `paths` in [tool.torch-mlir-lens])")
    try:
        collected = collect(paths, [*cfg.exclude, *args.exclude], root)
    except PathError as err:
        raise _cli_error(err.message, file=err.path) from err
    for named, pattern in collected.excluded:
        sys.stderr.write(f"note: {named}: excluded by '{pattern}'\n")
    plan = plan_modules(collected.files, root, dict(cfg.example_inputs), args.module)
    for w in plan.cell_warnings:
        sys.stderr.write(f"{where(w.rel, w.line, w.cell)}: warning: {w.message}\n")
    if args.module and not plan.tasks:
        raise _cli_error(f"no module named {args.module!r} in the given paths")
    tasks = plan.tasks if shard_spec is None else shard(plan.tasks, *shard_spec)
    if args.list:
        _emit("".join(f"{t.key}\n" for t in tasks), args.output)
        return 2 if plan.problems else 0

    baseline = None
    baseline_path = args.baseline or cfg.baseline
    if baseline_path and not args.write_baseline:
        try:
            baseline = baselines.read_baseline(baseline_path)
        except baselines.BaselineError as err:
            raise _cli_error(err.message, file=err.path) from err

    opts = RunOptions(
        targets=targets, jobs=jobs, root=root,
        timeout_s=args.timeout or cfg.timeout_seconds or 60.0, memory_limit_mb=memory,
        example_inputs=dict(cfg.example_inputs),
        strict_export=args.strict or bool(cfg.strict_export),
        require_inputs=args.require_inputs,
    )
    progress = Progress(len(tasks))
    try:
        outcomes = await run_modules(tasks, plan, opts,
                                     on_done=lambda o: progress.step(o.task.key))
    finally:
        progress.close()

    problems = [Finding(p.kind, p.kind, p.message, p.rel, p.line, p.rel, None, None,
                        cell=p.cell)
                for p in plan.problems if shard_spec is None or shard_spec[0] == 1]
    warnings = [Finding(w.kind, w.kind, w.message, w.rel, w.line, w.rel, None, None,
                        cell=w.cell)
                for w in plan.cell_warnings if shard_spec is None or shard_spec[0] == 1]
    report = Report(targets=targets, problems=problems, warnings=warnings,
                    shards=[shard_spec] if shard_spec else [])
    all_findings: list[Finding] = []
    for o in outcomes:
        all_findings += o.findings
    if baseline is not None:
        report.baseline = os.path.relpath(baseline.path, root)
        fixed = baseline.apply(all_findings)
        checked = {(t.rel, t.name) for t in tasks}
        report.fixed = [list(k) for k in fixed if (k[0], k[1]) in checked]
    for o in outcomes:
        o.entry["findings"] = [f.to_json() for f in o.findings]
        report.modules.append(o.entry)
    report.modules.sort(key=module_key)

    if args.write_baseline:
        path = baseline_path or os.path.join(root, baselines.DEFAULT_NAME)
        try:
            count = baselines.write_baseline(path, all_findings)
        except OSError as exc:
            raise _cli_error(f"cannot write the baseline: {exc.strerror or exc}",
                             file=path) from exc
        sys.stderr.write(f"wrote {os.path.relpath(path)} ({count} entries)\n")

    _emit(render(report, fmt, root), args.output)
    if args.output is not None:
        from torch_mlir_lens.repo_check.text_formats import summary_line

        sys.stderr.write(summary_line(report) + "\n")
    if args.write_baseline:
        return 2 if report.problems else 0
    return report.exit_code()


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError as exc:
        raise _cli_error("no such file", file=path) from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _cli_error(f"not a JSON report: {exc}", file=path) from exc


def _check_shards(shards: list[tuple[int, int]], modules: list[str]) -> None:
    """Every shard of one split exactly once, and no module twice."""
    if shards:
        counts = {n for _, n in shards}
        if len(counts) != 1:
            raise _cli_error(f"the reports come from different splits: {sorted(counts)}")
        (n,) = counts
        indices = sorted(i for i, _ in shards)
        missing = sorted(set(range(1, n + 1)) - set(indices))
        if missing or len(indices) != len(set(indices)):
            what = f"missing shards {missing}" if missing else f"repeated shards {indices}"
            raise _cli_error(f"incomplete merge: {what} of {n}")
    seen: set[str] = set()
    for m in modules:
        if m in seen:
            raise _cli_error(f"module {m} appears in two reports")
        seen.add(m)


def run_merge(args: argparse.Namespace) -> int:
    """`merge REPORT…`: one report; the exit code is that of a check of every module."""
    from torch_mlir_lens.repo_check.sarif import merge_sarif, sarif_failed

    logs = [_read_json(p) for p in args.reports]
    root = os.getcwd()
    if all(isinstance(d, dict) and "runs" in d for d in logs):
        if args.format not in (None, "sarif"):
            raise _cli_error("SARIF reports merge into SARIF only (merge JSON reports for "
                             "other formats)")
        merged = merge_sarif(logs)
        props = merged["runs"][0]["properties"]["torchMlirLens"]
        _check_shards([(s["index"], s["count"]) for s in props["shards"]], props["modules"])
        _emit(json.dumps(merged, indent=1) + "\n", args.output)
        return 1 if sarif_failed(merged) else 0
    reports = []
    for path, data in zip(args.reports, logs, strict=True):
        try:
            reports.append(Report.from_json(data))
        except ValueError as exc:
            raise _cli_error(str(exc), file=path) from exc
    merged_report = Report(targets=list(dict.fromkeys(t for r in reports for t in r.targets)))
    for r in reports:
        merged_report.modules += r.modules
        merged_report.problems += r.problems
        merged_report.warnings += r.warnings
        merged_report.shards += r.shards
        merged_report.fixed += r.fixed
        merged_report.baseline = merged_report.baseline or r.baseline
    merged_report.modules.sort(key=module_key)
    _check_shards(merged_report.shards,
                  [f"{e['file']}::{e['name']}" for e in merged_report.modules])
    _emit(render(merged_report, args.format or "json", root), args.output)
    return merged_report.exit_code()
