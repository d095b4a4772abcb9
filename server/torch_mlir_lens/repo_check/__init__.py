"""Check a whole repository, as a CI gate: `torch-mlir-lens check PATH…` and `merge`.

The command line uses this package through what it exports here, and nothing else:

    settings = resolve_settings(CommandLine.from_values(vars(args)),
                                read_project_config(args.config, os.getcwd()), os.getcwd())
    result = await run(settings)                      → CheckResult (exit code, Report)
    text = result.text(settings.fmt, settings.root)   → stdout, or write_report(path, text)
    merge_reports([(path, parsed), …], fmt, root)     → MergedReport (`merge`)

Bad input is a CheckInputError (message, file), said before any module is lowered.
The modules behind it:

- `check_settings`: command line, else `[tool.torch-mlir-lens]` (`project/config.py`), else the
  defaults, once for every field; `gate`: `run`, the steps in order; `errors`;
- `paths`, `ignore`: PATHs → Python files and notebooks (globs, `.gitignore`, `exclude`);
- `plan`: files → modules (the editor's discovery), shards;
- `notebook_modules`, `ipynb_lines`: a notebook's modules, cell lines in reports, the .ipynb
  file lines review tools show them at;
- `runner`: N isolated workers side by side, per-module failures, results in order;
- `baseline`, `report`, `assemble`: what is accepted, the report, the exit code (what failed is
  `findings/`'s, made from each module's results in `runner`);
- `rewrite_findings`: each finding's proven rewrite (`findings/proven.py`) on its report;
- `outputs`: the formats (`text_formats`, `listing`, `sarif`: text, JSON, SARIF 2.1.0 and
  GitHub annotations) and the files written atomically; `merging`, `run_identity`: the
  shards of one run (`merge`); `progress`: the lines a long run prints.

The names are loaded when first used, so importing the package costs nothing (`serve` and the
other commands never pay for the check). Nothing here imports torch: user code runs only in
the workers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch_mlir_lens.repo_check.check_settings import (
        CheckSettings,
        CommandLine,
        read_project_config,
        resolve_settings,
    )
    from torch_mlir_lens.repo_check.errors import CheckInputError
    from torch_mlir_lens.repo_check.gate import CheckResult, run
    from torch_mlir_lens.repo_check.merging import MergedReport, merge_reports
    from torch_mlir_lens.repo_check.outputs import FORMATS, check_writable, write_report

# name → the module that defines it
_EXPORTS = {
    "run": "gate", "CheckResult": "gate",
    "CheckSettings": "check_settings", "CommandLine": "check_settings",
    "resolve_settings": "check_settings",
    "read_project_config": "check_settings",
    "CheckInputError": "errors",
    "FORMATS": "outputs", "check_writable": "outputs", "write_report": "outputs",
    "merge_reports": "merging", "MergedReport": "merging",
}

# What the command line needs, and no more (tests/test_imports.py holds it to that).
__all__ = [
    "FORMATS", "CheckInputError", "CheckResult", "CheckSettings", "CommandLine", "MergedReport",
    "check_writable", "merge_reports", "read_project_config", "resolve_settings", "run",
    "write_report",
]


def __getattr__(name: str) -> Any:
    """Load an exported name's module on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
