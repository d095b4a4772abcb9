"""The IREE targets on the command line: their options, IREE's presence, their refusals.

`lower`, `verify` and `export` take `--target iree-cpu|iree-cuda|iree-rocm|iree-vulkan`
(rules/iree_targets.py); this module holds what those commands share about them. Like every
command module it never imports torch nor IREE: IREE's presence is read from the worker
interpreter's package metadata (it is the interpreter running this command).
"""

from __future__ import annotations

import argparse
import importlib.metadata
from collections.abc import Iterable
from typing import Any

from torch_mlir_lens.cli.common import CliError
from torch_mlir_lens.cli.parser import EXIT_BAD_INPUT
from torch_mlir_lens.findings import iree as iree_words
from torch_mlir_lens.protocol.results import ErrorKind, LowerResult
from torch_mlir_lens.rules.exit_codes import exit_code_for
from torch_mlir_lens.rules.iree_targets import (
    IREE_DISTRIBUTIONS,
    arch_error,
    is_iree_target,
    missing_iree_message,
)
from torch_mlir_lens.rules.targets import target_title


def add_arch(parser: argparse.ArgumentParser) -> None:
    """`--iree-arch ARCH`: the architecture an IREE target compiles for."""
    parser.add_argument("--iree-arch", metavar="ARCH",
                        help="with an IREE target: the architecture to compile for (a CPU "
                             "for iree-cpu, default host; sm_80, gfx942, a Vulkan target, ...)")


def require(targets: Iterable[str]) -> None:
    """A CliError saying what to install when an IREE target is asked for and IREE is not
    installed for this interpreter (the worker's)."""
    wanted = [t for t in targets if is_iree_target(t)]
    if not wanted:
        return
    missing = []
    for dist in IREE_DISTRIBUTIONS:
        try:
            importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            missing.append(dist)
    if missing:
        raise CliError(missing_iree_message(target_title(wanted[0]), missing),
                       exit_code_for(ErrorKind.MISSING_DEPENDENCY))


def arch_for(target: str, arch: str | None) -> str | None:
    """The `--iree-arch` value checked against the target (bad input: a CliError)."""
    if arch is None:
        return None
    if not is_iree_target(target):
        raise CliError(f"--iree-arch applies to an IREE target, not {target!r}")
    error = arch_error(target, arch)
    if error:
        raise CliError(f"--iree-arch: {error}")
    return arch


def speed_words(speed: dict[str, Any]) -> str:
    """`IREE CPU 0.21 ms · eager 0.35 ms (2 threads)`: a Verify's or profile's `speed` (the
    editor's words too: `findings/iree.py`)."""
    return iree_words.speed_words(speed)


def refusal(results: Iterable[LowerResult], path: str) -> CliError | None:
    """An IREE target's result that is no verdict on the module: IREE missing (exit 3), an
    architecture IREE refuses (exit 2); None otherwise."""
    for result in results:
        for d in result.diagnostics:
            if d.kind == ErrorKind.MISSING_DEPENDENCY:
                return CliError(d.message, exit_code_for(d.kind), file=path)
            if d.kind == ErrorKind.BAD_REQUEST and is_iree_target(result.target):
                return CliError(d.message, EXIT_BAD_INPUT, file=path)
    return None
