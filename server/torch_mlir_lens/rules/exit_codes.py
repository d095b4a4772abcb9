"""The exit codes of the `torch-mlir-lens` command: one table, and which code a failure gets.

`EXIT_CODES` is the table `--help` prints and the README and docs/ci.md repeat word for word
(tests/cli/test_exit_codes.py compares the three with it and runs the command for each code).
`check` (and `merge`) decide among several modules with `check_exit_code`: a file that cannot
be read comes first (2), then a module that does not lower (1), then a module whose job could
not run (3): a crash says nothing about the modules that did run, and a real failure next to it
is the more useful answer.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable

from torch_mlir_lens.protocol.results import ErrorKind

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_NO_RUN = 3
SIGNAL_BASE = 128  # + the signal's number, as a shell reports a process a signal ended

# (code, meaning): the words `--help`, the README and docs/ci.md all show.
EXIT_CODES: tuple[tuple[str, str], ...] = (
    ("0", "ok: every module lowers (check: or has only baselined findings); verify: matches "
          "eager PyTorch"),
    ("1", "does not lower: an op a backend rejects, an export or lowering error (check: a "
          "new finding that is not a crash or time-out); verify: differs from eager PyTorch"),
    ("2", "bad input, with one FILE:LINE: message line: a missing file, a syntax error, an "
          "unknown module or target, bad inputs, pipeline or limits, an output that cannot or "
          "must not be written, reports that are not the shards of one run"),
    ("3", "could not run: the worker crashed, timed out or hit its memory limit, a target's "
          "compiler is not installed (IREE), or the command failed inside (an internal error) "
          "(check: when every new finding is one of these; when several codes apply, check "
          "returns 2 before 1 before 3)"),
    ("128+N", "ended by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP): the workers end with "
              "the command and nothing is written"),
)

# The failures that end a job before it says anything about the module.
NO_RUN_KINDS = frozenset({
    ErrorKind.WORKER_CRASH, ErrorKind.TIMEOUT, ErrorKind.MEMORY_LIMIT, ErrorKind.CANCELLED,
    ErrorKind.MISSING_DEPENDENCY,
})
# What the user gave that cannot be used (one module's command: lower, export, verify).
BAD_INPUT_KINDS = frozenset({
    ErrorKind.SYNTAX_ERROR, ErrorKind.LOAD_ERROR, ErrorKind.UNKNOWN_MODULE,
    ErrorKind.INPUTS_MISSING, ErrorKind.BAD_INPUTS, ErrorKind.BAD_PIPELINE,
    ErrorKind.BAD_REQUEST, ErrorKind.WRITE_ERROR,
})


def exit_code_for(kind: str) -> int:
    """The exit code of a one-module command that failed with a LensError of `kind`."""
    if kind in BAD_INPUT_KINDS:
        return EXIT_BAD_INPUT
    if kind in NO_RUN_KINDS:
        return EXIT_NO_RUN
    return EXIT_FAILED


def check_exit_code(*, bad_input: bool, failure_kinds: Iterable[str]) -> int:
    """The exit code of a check of several modules: `bad_input` when a file could not be read
    or parsed; `failure_kinds` the kinds of its new (not baselined) findings."""
    if bad_input:
        return EXIT_BAD_INPUT
    kinds = list(failure_kinds)
    if any(kind not in NO_RUN_KINDS for kind in kinds):
        return EXIT_FAILED
    return EXIT_NO_RUN if kinds else EXIT_OK


def help_epilog(width: int = 79) -> str:
    """The table as `--help` ends with it (one entry per code, wrapped under its meaning)."""
    lines = ["exit codes:"]
    for code, meaning in EXIT_CODES:
        lines.append(textwrap.fill(meaning, width=width, initial_indent=f"  {code:<7}",
                                   subsequent_indent=" " * 9))
    return "\n".join(lines)
