"""The report of a `check` run (or of merged shards), its exit code and JSON.

Exit codes (rules/exit_codes.py): 0 every module lowers (or only baselined findings); 1 a
module does not lower (a new finding); 2 bad input: a file that cannot be read or parsed; 3
every new finding is a job that could not run (a worker crash, time-out or memory limit).
2 comes before 1, and 1 before 3.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens import __version__
from torch_mlir_lens.findings import Finding
from torch_mlir_lens.rules.exit_codes import check_exit_code

FILE_KINDS = {"syntax-error", "load-error"}
JSON_VERSION = 1


@dataclass
class Report:
    """Everything a formatter needs; JSON round-trips (for `merge`)."""

    targets: list[str]
    modules: list[dict[str, Any]] = field(default_factory=list)  # entries, with "findings"
    problems: list[Finding] = field(default_factory=list)  # file-level (syntax, unreadable)
    # Checked anyway, but without something: a notebook cell that does not parse is left out.
    warnings: list[Finding] = field(default_factory=list)
    shards: list[tuple[int, int]] = field(default_factory=list)  # [(I, N)] that made it
    baseline: str | None = None  # the baseline file used
    fixed: list[list[str]] = field(default_factory=list)  # baseline entries not seen any more
    version: str = __version__
    # What `merge` compares (run_identity): the settings and the whole run's module list.
    config: dict[str, Any] | None = None
    plan: dict[str, Any] | None = None

    def findings(self) -> list[Finding]:
        """Every finding, file problems first, then modules in order."""
        out = list(self.problems)
        for entry in self.modules:
            out += [Finding.from_json(f) for f in entry.get("findings", [])]
        return out

    def new_findings(self) -> list[Finding]:
        return [f for f in self.findings() if not f.baselined]

    def exit_code(self) -> int:
        """The run's exit code: file problems, else new findings (rules/exit_codes.py)."""
        return check_exit_code(bad_input=bool(self.problems),
                               failure_kinds=[f.kind for f in self.new_findings()])

    def summary(self) -> dict[str, int]:
        """Counts for the last line of text output and the JSON `summary`."""
        skipped = sum(1 for e in self.modules if "skipped" in e)
        failing = sum(1 for e in self.modules if any(
            not f.get("baselined") for f in e.get("findings", [])))
        files = {e["file"] for e in self.modules} | {p.file for p in self.problems}
        findings = self.findings()
        return {
            "files": len(files), "modules": len(self.modules), "skipped": skipped,
            "failing": failing, "ok": len(self.modules) - skipped - failing,
            "findings": len(findings),
            "new": sum(1 for f in findings if not f.baselined),
            "baselined": sum(1 for f in findings if f.baselined),
            "problems": len(self.problems),
        }

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "version": JSON_VERSION,
            "tool": {"name": "torch-mlir-lens", "version": self.version},
            "targets": self.targets,
            "shards": [{"index": i, "count": n} for i, n in self.shards],
            "config": self.config,
            "plan": self.plan,
        }
        files = sorted({e["file"] for e in self.modules})
        if len(files) == 1 and not self.problems:
            data["file"] = files[0]  # the single-file shape of `check --json`
        data.update({
            "modules": self.modules,
            "problems": [p.to_json() for p in self.problems],
            "warnings": [w.to_json() for w in self.warnings],
            "baseline": None if self.baseline is None else {
                "path": self.baseline, "fixed": self.fixed},
            "summary": self.summary(),
            "exit_code": self.exit_code(),
        })
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Report:
        """A report as `to_json` wrote it (ValueError if it is not one)."""
        if not isinstance(data, dict) or data.get("version") != JSON_VERSION or not isinstance(
                data.get("modules"), list):
            raise ValueError("not a torch-mlir-lens check --format json report")
        baseline = data.get("baseline") or {}
        return cls(
            targets=list(data.get("targets", [])), modules=list(data["modules"]),
            problems=[Finding.from_json(p) for p in data.get("problems", [])],
            warnings=[Finding.from_json(w) for w in data.get("warnings", [])],
            shards=[(int(s["index"]), int(s["count"])) for s in data.get("shards", [])],
            baseline=baseline.get("path"), fixed=list(baseline.get("fixed", [])),
            version=str((data.get("tool") or {}).get("version", __version__)),
            config=data.get("config"), plan=data.get("plan"),
        )


def module_key(entry: dict[str, Any]) -> tuple[str, int, int, str]:
    """The order of modules in every report: file, (notebook) cell, line, name."""
    return (entry["file"], entry.get("cell") or 0, entry.get("line") or 0, entry["name"])
