"""The check gate's one entry point: `run(settings) → CheckResult`.

Everything between "settings resolved" (check_settings.py) and "report assembled" happens here, in
this order: the outputs are tried for writability, the PATHs listed (`paths`), the modules
planned and sharded (`plan`), the baseline read, the modules lowered side by side (`runner`),
each finding's proven rewrite asked for, the report assembled (`assemble`) and the baseline
written. Every input is checked before the first module is lowered. What the run has to say
on the way (notes, warnings, progress) goes to `log`; the report itself is the caller's to
write (outputs.py has its formats and the atomic file write).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TextIO

from torch_mlir_lens.findings import Finding
from torch_mlir_lens.repo_check import baseline as baselines
from torch_mlir_lens.repo_check.assemble import all_findings, assemble_report
from torch_mlir_lens.repo_check.check_settings import CheckSettings
from torch_mlir_lens.repo_check.errors import CheckInputError
from torch_mlir_lens.repo_check.notebook_modules import where
from torch_mlir_lens.repo_check.outputs import check_writable, render
from torch_mlir_lens.repo_check.paths import Collected, PathError, collect, rel_path
from torch_mlir_lens.repo_check.plan import ModuleTask, Plan, plan_modules, shard
from torch_mlir_lens.repo_check.progress import Progress
from torch_mlir_lens.repo_check.report import Report
from torch_mlir_lens.repo_check.run_identity import config_json
from torch_mlir_lens.repo_check.runner import (
    ModuleOutcome,
    RunOptions,
    memory_available_mb,
    run_modules,
)
from torch_mlir_lens.repo_check.text_formats import summary_line
from torch_mlir_lens.rules.exit_codes import EXIT_BAD_INPUT, EXIT_OK, exit_code_for
from torch_mlir_lens.rules.iree_targets import arch_title, is_iree_target


@dataclass(frozen=True)
class CheckResult:
    """What a check run ends with: its exit code and its report (None with `--list`, which
    names the modules instead), and the closing lines for the log."""

    exit_code: int
    report: Report | None
    modules: tuple[str, ...]  # `file::Module` of each module this run (or shard) checks
    summary: str = ""  # the report's closing line (modules, verdicts, findings)
    cache_note: str | None = None  # what the persistent cache answered, when there is one

    def text(self, fmt: str, root: str) -> str:
        """The report in `fmt` (outputs.FORMATS); with `--list`, one module a line."""
        if self.report is None:
            return "".join(f"{key}\n" for key in self.modules)
        return render(self.report, fmt, root)


async def run(settings: CheckSettings, log: TextIO | None = None) -> CheckResult:
    """Check the modules `settings` name: discover, shard, lower side by side, apply (or
    write) the baseline, assemble the report. CheckInputError for an input that cannot be
    used, before any module is lowered (after, only for a baseline that cannot be written)."""
    out = log or sys.stderr
    for note in settings.notes:
        out.write(f"note: {note}\n")
    check_writable(settings.write_baseline_to, "baseline")
    check_writable(settings.output, "report")
    collected = _collect(settings, out)
    plan, tasks = _plan(settings, collected, out)
    keys = tuple(t.key for t in tasks)
    if settings.list_only:
        for p in plan.problems:
            out.write(f"{where(p.rel, p.line, p.cell)}: error: {p.message}\n")
        return CheckResult(EXIT_BAD_INPUT if plan.problems else EXIT_OK, None, keys)
    writing = settings.write_baseline_to is not None
    baseline = _read_baseline(settings.baseline, writing=writing)
    applied = None if writing else baseline
    _warn_if_memory_short(settings.jobs, settings.memory_mb, out)
    opts = _run_options(settings)
    outcomes = await _lower_all(tasks, plan, opts, out)
    _refuse_architecture(outcomes)
    if settings.given_inputs:
        _refuse_given_inputs(outcomes)
    config = config_json(timeout_s=opts.timeout_s, memory_limit_mb=opts.memory_limit_mb,
                         strict_export=opts.strict_export, require_inputs=opts.require_inputs,
                         example_inputs=opts.example_inputs,
                         baseline_keys=None if applied is None else applied.keys)
    if opts.rewrites:  # what the findings depend on (merge compares it); absent: as before
        config["rewrites"] = list(opts.rewrites)
    iree = [t for t in settings.targets if is_iree_target(t)]
    if iree:  # the architecture each compiled for, defaults named
        config["ireeArchs"] = {t: arch_title(t, opts.iree_archs.get(t)) for t in iree}
    if opts.dims:
        config["dims"] = dict(sorted(opts.dims.items()))
    report = assemble_report(targets=list(settings.targets), plan=plan, tasks=tasks,
                             outcomes=outcomes, shard=settings.shard, config=config,
                             applied=applied, root=settings.root)
    code = report.exit_code()
    if settings.write_baseline_to is not None:
        code = _write_baseline(settings.write_baseline_to, all_findings(outcomes), report,
                               _checked_by(settings, tasks, collected), settings.root, out)
    cache_note = None
    if opts.cache_dir:
        cache_note = (f"persistent cache {opts.cache_dir}: {opts.cache_hits} of "
                      f"{opts.cache_lookups} results answered from it (lowerings, "
                      "proofs of rewrites)")
        if opts.blocks_traced or opts.blocks_stored:
            cache_note += (f"; repeated blocks: {opts.blocks_stored} read from it, "
                           f"{opts.blocks_traced} traced")
    return CheckResult(code, report, keys, summary_line(report), cache_note)


def _run_options(settings: CheckSettings) -> RunOptions:
    return RunOptions(
        targets=list(settings.targets), jobs=settings.jobs, root=settings.root,
        timeout_s=settings.timeout_s, memory_limit_mb=settings.memory_mb,
        example_inputs=dict(settings.example_inputs), strict_export=settings.strict_export,
        require_inputs=settings.require_inputs, cache_dir=settings.cache_dir,
        rewrites=list(settings.rewrites), prove_rewrites=settings.prove_rewrites,
        inline_blocks=settings.inline_blocks, given_inputs=settings.given_inputs,
        iree_archs=dict(settings.iree_archs), dims=dict(settings.dims))


def _collect(settings: CheckSettings, out: TextIO) -> Collected:
    """The files named by PATHs (or pyproject's `paths`), with notes on what was skipped."""
    if not settings.paths:
        raise CheckInputError("no PATH given (and no `paths` in [tool.torch-mlir-lens])")
    try:
        collected = collect(list(settings.paths), list(settings.exclude), settings.root)
    except PathError as err:
        raise CheckInputError(err.message, err.path) from err
    for named, pattern in collected.excluded:
        out.write(f"note: {named}: excluded by '{pattern}'\n")
    for path, message in collected.warnings:
        out.write(f"{rel_path(path, os.getcwd())}: warning: {message}\n")
    return collected


def _plan(settings: CheckSettings, collected: Collected,
          out: TextIO) -> tuple[Plan, list[ModuleTask]]:
    """Every module of the files, and the ones this run (or shard) checks."""
    plan = plan_modules(collected.files, settings.root, dict(settings.example_inputs),
                        settings.module)
    for w in plan.cell_warnings:
        out.write(f"{where(w.rel, w.line, w.cell)}: warning: {w.message}\n")
    if settings.module and not plan.tasks:
        raise CheckInputError(f"no module named {settings.module!r} in the given paths")
    if settings.given_inputs and plan.tasks:
        # The inputs named are one module's: the one named, else the file's first, as given.
        plan.tasks[:] = [replace(plan.tasks[0], inputs="given")]
    tasks = plan.tasks if settings.shard is None else shard(plan.tasks, *settings.shard)
    return plan, tasks


def _refuse_given_inputs(outcomes: list[ModuleOutcome]) -> None:
    """Inputs named on the command line that cannot be used are the command's bad input (the
    located one-line error, exit 2), not a finding of the module."""
    for outcome in outcomes:
        for f in outcome.findings:
            if exit_code_for(str(f.kind)) == EXIT_BAD_INPUT:
                where = f"{f.file}:{f.line}" if f.line else f.file
                raise CheckInputError(f"{f.message}", where)


def _refuse_architecture(outcomes: list[ModuleOutcome]) -> None:
    """An architecture IREE has no target for (this build's CUDA sm_90) is the run's bad
    input: one line, exit 2 (the lanes stopped taking modules once one said so)."""
    refused = next((o for o in outcomes if o.refusal), None)
    if refused is not None:
        raise CheckInputError(f"{refused.refusal} (--iree-arch, or `ireeArchs` in "
                              "pyproject.toml)")


def _read_baseline(path: str | None, writing: bool) -> baselines.Baseline | None:
    """The baseline to apply; when writing, the one to update (None if it does not exist
    yet), read before the run so a broken one stops it at once."""
    if not path or (writing and not os.path.exists(path)):
        return None
    try:
        return baselines.read_baseline(path)
    except baselines.BaselineError as err:
        hint = " (delete it to write a new one)" if writing else ""
        raise CheckInputError(err.message + hint, err.path) from err


def _warn_if_memory_short(jobs: int, memory: int, out: TextIO) -> None:
    """Before workers start: say so when their limits add up to more than the machine has."""
    available = memory_available_mb()
    if available is not None and jobs * memory > available:
        out.write(f"warning: {jobs} workers × {memory} MB (--memory-limit) exceed the "
                  f"{available} MB available: the machine may run out of memory\n")


async def _lower_all(tasks: list[ModuleTask], plan: Plan, opts: RunOptions,
                     out: TextIO) -> list[ModuleOutcome]:
    progress = Progress(len(tasks), out)
    try:
        return await run_modules(tasks, plan, opts, on_done=lambda o: progress.step(o.task.key))
    finally:
        progress.close()


def _checked_by(settings: CheckSettings, tasks: list[ModuleTask],
                collected: Collected) -> Callable[[baselines.Key], bool]:
    """Which baseline entries this run checked (and so replaces): its modules with
    `--module`, else every entry of the files it collected."""
    if settings.module:
        return baselines.of_modules(tasks)
    files = {rel_path(f, settings.root) for f in collected.files}
    return lambda k: k[0] in files


def _write_baseline(path: str, findings: list[Finding], report: Report,
                    checked: Callable[[baselines.Key], bool], root: str, out: TextIO) -> int:
    """Update the baseline from a completed run; the exit code of `--write-baseline`."""
    if report.problems:
        out.write(f"torch-mlir-lens: error: baseline not written: {len(report.problems)} "
                  "files could not be read or parsed (their entries would be lost)\n")
        return EXIT_BAD_INPUT
    try:
        update = baselines.update_baseline(path, findings, checked, root)
    except baselines.BaselineError as err:
        raise CheckInputError(err.message, err.path) from err
    except OSError as exc:
        raise CheckInputError(f"cannot write the baseline: {exc.strerror or exc}", path) from exc
    out.write(update.describe(os.path.relpath(path)) + "\n")
    return EXIT_OK
