"""What every command's parser shares, and nothing heavier: `serve` starts from here alone."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

PROG = "torch-mlir-lens"

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_NO_RUN = 3


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), like every other bad input."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{PROG}: error: {message}\n")
        raise SystemExit(EXIT_BAD_INPUT)
