"""A run's outcomes assembled into its report: file problems, modules, the baseline applied."""

from __future__ import annotations

import os
from typing import Any

from torch_mlir_lens.findings import Finding, make
from torch_mlir_lens.repo_check.baseline import Baseline, of_modules
from torch_mlir_lens.repo_check.plan import FileProblem, ModuleTask, Plan
from torch_mlir_lens.repo_check.report import Report, module_key
from torch_mlir_lens.repo_check.run_identity import plan_json
from torch_mlir_lens.repo_check.runner import ModuleOutcome


def assemble_report(*, targets: list[str], plan: Plan, tasks: list[ModuleTask],
                    outcomes: list[ModuleOutcome], shard: tuple[int, int] | None,
                    config: dict[str, Any], applied: Baseline | None, root: str) -> Report:
    """The report of one run (or shard). A shard other than the first leaves the file
    problems out: merged shards report each once."""
    first = shard is None or shard[0] == 1
    report = Report(
        targets=targets,
        problems=[_file_finding(p) for p in plan.problems] if first else [],
        warnings=[_file_finding(w) for w in plan.cell_warnings] if first else [],
        shards=[shard] if shard else [],
        config=config,
        plan=plan_json(t.key for t in plan.tasks))
    findings = all_findings(outcomes)
    if applied is not None:
        checked = of_modules(tasks)
        report.baseline = os.path.relpath(applied.path, root)
        report.fixed = [list(k) for k in applied.apply(findings) if checked(k)]
    for o in outcomes:
        o.entry["findings"] = [f.to_json() for f in o.findings]
        report.modules.append(o.entry)
    report.modules.sort(key=module_key)
    return report


def all_findings(outcomes: list[ModuleOutcome]) -> list[Finding]:
    """Every module's findings, in the order of the outcomes."""
    return [f for o in outcomes for f in o.findings]


def _file_finding(problem: FileProblem) -> Finding:
    """A file-level problem (or a notebook cell's warning) as a finding of its file."""
    return make.file_problem(problem.kind, problem.message, file=problem.rel,
                             line=problem.line, cell=problem.cell)
