"""The numbers people give: a job's time-out, a worker's memory limit, how many workers.

One validation for the command line (`--timeout`, `--memory-limit`, `-j`) and for
`[tool.torch-mlir-lens]` (`timeoutSeconds`, `memoryLimitMb`, `jobs`), so both accept and
refuse the same values with the same words. No imports beyond the standard library: the
language server and every command read this.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from typing import TypeVar

# 16 TiB: more than any machine has, and far from the byte counts the kernel's limits
# overflow at (the address-space backstop adds to it and multiplies by 2**20).
MAX_MEMORY_LIMIT_MB = 1 << 24

T = TypeVar("T")


class LimitError(ValueError):
    """A number out of its range; `message` says what is expected and what was given."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _number(value: object, expected: str) -> float:
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    elif isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise LimitError(f"expected {expected}, got {value!r}")


def _whole(value: object, expected: str) -> int:
    number = _number(value, expected)
    if not math.isfinite(number) or number != int(number):
        raise LimitError(f"expected {expected}, got {value!r}")
    # From the text when there is one: a float cannot hold every digit of a huge number.
    return int(value.strip()) if isinstance(value, str) and value.strip().isdigit() else int(
        number)


def timeout_seconds(value: object) -> float:
    """A time-out in seconds: a finite number > 0."""
    expected = "a number of seconds > 0"
    seconds = _number(value, expected)
    if not math.isfinite(seconds) or seconds <= 0:
        raise LimitError(f"expected {expected}, got {value!r}")
    return seconds


def memory_limit_mb(value: object) -> int:
    """A memory limit in MB: a whole number from 1 to MAX_MEMORY_LIMIT_MB."""
    expected = f"a whole number of megabytes from 1 to {MAX_MEMORY_LIMIT_MB}"
    mb = _whole(value, expected)
    if not 1 <= mb <= MAX_MEMORY_LIMIT_MB:
        raise LimitError(f"expected {expected}, got {value!r}")
    return mb


def jobs(value: object) -> int:
    """A number of workers: a whole number ≥ 1 (see `capped_jobs` for the upper end)."""
    expected = "a whole number of workers ≥ 1"
    count = _whole(value, expected)
    if count < 1:
        raise LimitError(f"expected {expected}, got {value!r}")
    return count


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, else the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def capped_jobs(count: int) -> tuple[int, str | None]:
    """`count` workers, at most one per CPU (each is a process of its own that keeps a CPU
    busy and holds ~0.4 GB before any job); the note to print when it was capped."""
    cpus = usable_cpus()
    if count <= cpus:
        return count, None
    return cpus, f"{count} workers capped at {cpus}, the CPUs this run may use"


def argument(check: Callable[[object], T]) -> Callable[[str], T]:
    """An argparse `type=` that validates with `check` (argparse's one-line error names the
    option: `argument --timeout: expected a number of seconds > 0, got 'nan'`)."""

    def convert(text: str) -> T:
        try:
            return check(text)
        except LimitError as err:
            raise argparse.ArgumentTypeError(err.message) from None

    convert.__name__ = check.__name__
    return convert
