"""What every command's parser shares, and nothing heavier: `serve` starts from here alone."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

# The exit codes and their meanings are one table (rules/exit_codes.py): `--help` prints it.
from torch_mlir_lens.rules.exit_codes import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_NO_RUN,
    EXIT_OK,
    SIGNAL_BASE,
)

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "EXIT_NO_RUN", "EXIT_OK", "PROG", "SIGNAL_BASE",
           "Parser"]

PROG = "torch-mlir-lens"


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), like every other bad input."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{PROG}: error: {message}\n")
        raise SystemExit(EXIT_BAD_INPUT)
