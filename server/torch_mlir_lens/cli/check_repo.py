"""`check PATH…` over a repository: the command line's side of `repo_check`.

Every input is resolved and checked before the first module is lowered (settings, paths, the
baseline, whether the report and the baseline can be written); then the modules are lowered
side by side (`repo_check.runner`), the report assembled (`repo_check.assemble`) and written.

Settings come from the command line, else `[tool.torch-mlir-lens]` of the closest
pyproject.toml (from the working directory up to the repository root), else the defaults.
Paths in reports and baselines are relative to the project root: the folder of that
pyproject.toml, or the working directory without one.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from torch_mlir_lens import defaults
from torch_mlir_lens.cli.common import CliError, rewrite_items
from torch_mlir_lens.cli.parser import EXIT_BAD_INPUT, EXIT_OK
from torch_mlir_lens.cli.report_output import check_writable, emit
from torch_mlir_lens.project import limits
from torch_mlir_lens.project.config import (
    ConfigError,
    ProjectConfig,
    discover_config,
    load_config,
)
from torch_mlir_lens.repo_check import baseline as baselines
from torch_mlir_lens.repo_check.assemble import all_findings, assemble_report
from torch_mlir_lens.repo_check.findings import Finding
from torch_mlir_lens.repo_check.notebook_modules import where
from torch_mlir_lens.repo_check.paths import Collected, PathError, collect, rel_path
from torch_mlir_lens.repo_check.plan import ModuleTask, Plan, parse_shard, plan_modules, shard
from torch_mlir_lens.repo_check.progress import Progress
from torch_mlir_lens.repo_check.render import FORMATS, render
from torch_mlir_lens.repo_check.report import Report
from torch_mlir_lens.repo_check.run_identity import config_json
from torch_mlir_lens.repo_check.runner import (
    ModuleOutcome,
    RunOptions,
    default_jobs,
    memory_available_mb,
    run_modules,
)
from torch_mlir_lens.rules.targets import BACKENDS, TARGETS


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


def single_module_run(args: argparse.Namespace) -> bool:
    """Explicit inputs name one module of one file (or notebook): the single-file `check`
    handles it."""
    return bool(args.inputs or args.inputs_file or args.init) and len(args.paths) <= 1


def _config(args: argparse.Namespace) -> ProjectConfig:
    try:
        if args.config:
            if os.path.isdir(args.config):
                raise CliError("is a folder: --config takes a pyproject.toml file (such as "
                                 f"{os.path.join(args.config, 'pyproject.toml')})",
                                 file=args.config)
            if not os.path.isfile(args.config):
                raise CliError("no such file (--config)", file=args.config)
            return load_config(args.config)
        return discover_config(os.getcwd())
    except ConfigError as err:
        raise CliError(err.message, file=err.path) from err


def fill_single_module_defaults(args: argparse.Namespace) -> None:
    """The values the single-file `check` expects, from pyproject.toml where unset."""
    cfg = _config(args)
    args.file = args.paths[0] if args.paths else None
    if args.file is None:
        raise CliError("--inputs/--inputs-file/--init need one FILE")
    args.targets = args.targets or ",".join(cfg.targets or BACKENDS)
    args.timeout = args.timeout or cfg.timeout_seconds or defaults.TIMEOUT_S
    args.memory_limit = args.memory_limit or cfg.memory_limit_mb or defaults.MEMORY_LIMIT_MB
    args.strict = args.strict or bool(cfg.strict_export)
    if not args.rewrites and cfg.rewrites:
        args.rewrites = ",".join(cfg.rewrites)


def _targets(args: argparse.Namespace, cfg: ProjectConfig) -> list[str]:
    if args.targets is None:
        return list(cfg.targets or BACKENDS)
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    for t in targets:
        if t not in TARGETS:
            raise CliError(f"unknown target {t!r} (choose from {', '.join(TARGETS)})")
    if not targets:
        raise CliError("--targets names no target")
    return targets


def _jobs(args: argparse.Namespace, cfg: ProjectConfig, memory: int) -> int:
    """-j (else `jobs`, else CPUs bounded by memory), at most one worker per CPU."""
    wanted = args.jobs or cfg.jobs
    if wanted is None:
        jobs = default_jobs(memory)[0]
    else:
        jobs, note = limits.capped_jobs(wanted)
        if note:
            sys.stderr.write(f"note: {note}\n")
    return jobs


def _warn_if_memory_short(jobs: int, memory: int) -> None:
    """Before workers start: say so when their limits add up to more than the machine has."""
    available = memory_available_mb()
    if available is not None and jobs * memory > available:
        sys.stderr.write(f"warning: {jobs} workers × {memory} MB (--memory-limit) exceed the "
                         f"{available} MB available: the machine may run out of memory\n")


def _shard(args: argparse.Namespace) -> tuple[int, int] | None:
    if not args.shard:
        return None
    try:
        spec = parse_shard(args.shard)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    if args.write_baseline:
        raise CliError("--write-baseline with --shard would write part of a baseline: "
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
        raise CliError(err.message + hint, file=err.path) from err


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
        raise CliError(err.message, file=err.path) from err
    except OSError as exc:
        raise CliError(f"cannot write the baseline: {exc.strerror or exc}",
                         file=path) from exc
    sys.stderr.write(update.describe(os.path.relpath(path)) + "\n")
    return EXIT_OK


@dataclass
class CheckSettings:
    """A run's settings, resolved from the command line, pyproject.toml and the defaults."""

    cfg: ProjectConfig
    root: str  # paths in reports and baselines are relative to it
    targets: list[str]
    fmt: str
    timeout_s: float
    memory_mb: int
    jobs: int
    shard: tuple[int, int] | None
    baseline: str | None  # the baseline file to apply (or to update)
    write_to: str | None  # with --write-baseline: where


def _settings(args: argparse.Namespace) -> CheckSettings:
    cfg = _config(args)
    root = cfg.root or os.getcwd()
    memory = args.memory_limit or cfg.memory_limit_mb or defaults.MEMORY_LIMIT_MB
    baseline = args.baseline or cfg.baseline
    write_to = None
    if args.write_baseline:
        write_to = baseline or os.path.join(root, baselines.DEFAULT_NAME)
    return CheckSettings(
        cfg=cfg, root=root, targets=_targets(args, cfg),
        fmt=args.format or ("json" if args.json else "text"),
        timeout_s=args.timeout or cfg.timeout_seconds or defaults.TIMEOUT_S,
        memory_mb=memory, jobs=_jobs(args, cfg, memory), shard=_shard(args),
        baseline=baseline, write_to=write_to)


def _collect(args: argparse.Namespace, settings: CheckSettings) -> Collected:
    """The files named by PATHs (or pyproject's `paths`), with notes on what was skipped."""
    paths = list(args.paths) or list(settings.cfg.paths)
    if not paths:
        raise CliError("no PATH given (and no `paths` in [tool.torch-mlir-lens])")
    try:
        collected = collect(paths, [*settings.cfg.exclude, *args.exclude], settings.root)
    except PathError as err:
        raise CliError(err.message, file=err.path) from err
    for named, pattern in collected.excluded:
        sys.stderr.write(f"note: {named}: excluded by '{pattern}'\n")
    for path, message in collected.warnings:
        sys.stderr.write(f"{rel_path(path, os.getcwd())}: warning: {message}\n")
    return collected


def _plan(args: argparse.Namespace, settings: CheckSettings,
          collected: Collected) -> tuple[Plan, list[ModuleTask]]:
    """Every module of the files, and the ones this run (or shard) checks."""
    plan = plan_modules(collected.files, settings.root, dict(settings.cfg.example_inputs),
                        args.module)
    for w in plan.cell_warnings:
        sys.stderr.write(f"{where(w.rel, w.line, w.cell)}: warning: {w.message}\n")
    if args.module and not plan.tasks:
        raise CliError(f"no module named {args.module!r} in the given paths")
    tasks = plan.tasks if settings.shard is None else shard(plan.tasks, *settings.shard)
    return plan, tasks


def _list(args: argparse.Namespace, plan: Plan, tasks: list[ModuleTask]) -> int:
    """`--list`: the modules this run would check; the files that cannot be read."""
    for p in plan.problems:
        sys.stderr.write(f"{where(p.rel, p.line, p.cell)}: error: {p.message}\n")
    emit("".join(f"{t.key}\n" for t in tasks), args.output)
    return EXIT_BAD_INPUT if plan.problems else EXIT_OK


async def _lower_all(tasks: list[ModuleTask], plan: Plan,
                     opts: RunOptions) -> list[ModuleOutcome]:
    progress = Progress(len(tasks))
    try:
        return await run_modules(tasks, plan, opts, on_done=lambda o: progress.step(o.task.key))
    finally:
        progress.close()


def _write_outputs(args: argparse.Namespace, settings: CheckSettings, report: Report,
                   opts: RunOptions) -> None:
    emit(render(report, settings.fmt, settings.root), args.output)
    if opts.cache_dir:
        sys.stderr.write(f"persistent cache {opts.cache_dir}: {opts.cache_hits} of "
                         f"{opts.cache_lookups} results answered from it (lowerings, proofs of "
                         "rewrites)\n")
    if args.output is not None:
        from torch_mlir_lens.repo_check.text_formats import summary_line

        sys.stderr.write(summary_line(report) + "\n")


def _checked_by(args: argparse.Namespace, tasks: list[ModuleTask], collected: Collected,
                root: str) -> Callable[[baselines.Key], bool]:
    """Which baseline entries this run checked (and so replaces): its modules with
    `--module`, else every entry of the files it collected."""
    if args.module:
        modules = {(t.rel, t.name) for t in tasks}
        return lambda k: (k[0], k[1]) in modules
    files = {rel_path(f, root) for f in collected.files}
    return lambda k: k[0] in files


async def run_check(args: argparse.Namespace) -> int:
    """`check PATH…`: discover, shard, lower side by side, apply the baseline, report."""
    settings = _settings(args)
    check_writable(settings.write_to, "baseline")
    check_writable(args.output, "report")
    collected = _collect(args, settings)
    plan, tasks = _plan(args, settings, collected)
    if args.list:
        return _list(args, plan, tasks)
    baseline = _read_baseline(settings.baseline, writing=args.write_baseline)
    applied = None if args.write_baseline else baseline
    _warn_if_memory_short(settings.jobs, settings.memory_mb)
    opts = RunOptions(
        targets=settings.targets, jobs=settings.jobs, root=settings.root,
        timeout_s=settings.timeout_s, memory_limit_mb=settings.memory_mb,
        example_inputs=dict(settings.cfg.example_inputs),
        strict_export=args.strict or bool(settings.cfg.strict_export),
        require_inputs=args.require_inputs, cache_dir=args.cache_dir,
        rewrites=rewrite_items(args.rewrites) or list(settings.cfg.rewrites),
        prove_rewrites=(args.rewrites or "").strip() != "off",
        inline_blocks=getattr(args, "inline_blocks", False))
    outcomes = await _lower_all(tasks, plan, opts)
    config = config_json(timeout_s=opts.timeout_s, memory_limit_mb=opts.memory_limit_mb,
                         strict_export=opts.strict_export, require_inputs=opts.require_inputs,
                         example_inputs=opts.example_inputs,
                         baseline_keys=None if applied is None else applied.keys)
    if opts.rewrites:  # what the findings depend on (merge compares it); absent: as before
        config["rewrites"] = list(opts.rewrites)
    report = assemble_report(targets=settings.targets, plan=plan, tasks=tasks,
                             outcomes=outcomes, shard=settings.shard, config=config,
                             applied=applied, root=settings.root)
    code = report.exit_code()
    if settings.write_to is not None:
        code = _write_baseline(settings.write_to, all_findings(outcomes), report,
                               _checked_by(args, tasks, collected, settings.root),
                               settings.root)
    _write_outputs(args, settings, report, opts)
    return code
