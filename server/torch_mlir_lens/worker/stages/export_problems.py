"""Every line torch.export refuses in a module, in one run (`torch.export.draft_export`).

torch.export stops at its first refusal; fixing it only shows the next. `draft_export` traces
on, with real values beside the fake ones, and reports each data-dependent refusal with the
lines that made it. Each becomes a `Problem`: the line (a library's when it was raised there),
its code, and the value the condition had on the example inputs (kept, not shown: inputs
drawn at random would change it from one check to the next).

Run only after torch.export refused for a data-dependent reason, on a module built with its
weights (the values must exist); the module's buffers are put back afterwards, in case a
forward writes to them. Best effort: a failure here leaves the first refusal as it was.

    draft_problems(module, args, kwargs, is_code)   → [Problem], in the order met
    report_problems(program, is_code)               → the same from a draft program's report
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from torch_mlir_lens.system.reading import source_line
from torch_mlir_lens.worker.loading.kept_state import buffer_values_kept, state_kept

MAX_PROBLEMS = 12


@dataclass
class Problem:
    """One line torch.export refuses."""

    file: str
    line: int
    code: str
    value: str | None  # what the refused condition was on the example inputs ("True")


def _file_names() -> dict[int, str]:
    from torch._logging import structured

    return {index: name for name, index in structured.INTERN_TABLE.items()}


def draft_problems(module: Any, args: Sequence[Any], kwargs: dict[str, Any],
                   is_code: Callable[[str], bool]) -> list[Problem]:
    """The data-dependent refusals `draft_export` finds, each at its innermost line of the
    user's or a library's code (`is_code(file)`); [] when it cannot run."""
    from torch._subclasses.fake_tensor import FakeTensor

    if not isinstance(module, torch.nn.Module) or any(
            isinstance(t, FakeTensor) or t.is_meta
            for t in [*module.parameters(), *module.buffers()]):
        return []
    noise = io.StringIO()
    try:
        with contextlib.redirect_stdout(noise), contextlib.redirect_stderr(noise), \
                state_kept(module), buffer_values_kept(module, max_elements=1 << 22):
            program = torch.export.draft_export(module, tuple(args), dict(kwargs),
                                                strict=False)
    except Exception:  # draft_export refuses too: the first refusal stands alone
        return []
    return report_problems(program, is_code)


def report_problems(program: Any, is_code: Callable[[str], bool]) -> list[Problem]:
    """The data-dependent refusals in the report of a program draft_export made (its
    `_report`), each at its innermost line of code (`is_code(file)`); [] without one."""
    report = getattr(program, "_report", None)
    names = _file_names()
    problems: list[Problem] = []
    seen: set[tuple[str, int]] = set()
    for failure in getattr(report, "failures", []) or []:
        if "DATA_DEPENDENT" not in str(getattr(failure, "failure_type", "")):
            continue
        data = getattr(failure, "data", {}) or {}
        frames = [(names.get(f["filename"], str(f["filename"])), int(f.get("line", 0)))
                  for f in data.get("user_stack") or []
                  if isinstance(f, dict) and isinstance(f.get("filename"), int)]
        inner = [(file, line) for file, line in frames if is_code(file)]
        if not inner or inner[-1] in seen:
            continue
        file, line = inner[-1]
        seen.add((file, line))
        code = source_line(file, line).strip()
        result = data.get("result")
        problems.append(Problem(file, line, code, None if result is None else str(result)))
        if len(problems) >= MAX_PROBLEMS:
            break
    return problems


__all__ = ["Problem", "draft_problems", "report_problems"]
