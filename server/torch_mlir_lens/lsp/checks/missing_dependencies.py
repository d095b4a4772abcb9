"""A target whose compiler is not installed where the server runs (IREE): the client is told
once, with what to install (`torchMlirLens/missingDependency`), and VS Code offers to install
it. The words are the worker's (`rules/iree_targets.py`'s `IREE_INSTALL`); each lowering and
Verify on such a target also says them, as a diagnostic on the module or an error."""

from __future__ import annotations

import contextlib
import logging

from torch_mlir_lens.lsp.wire.client import Client
from torch_mlir_lens.protocol import lsp as lens_types
from torch_mlir_lens.rules.iree_targets import IREE_DISTRIBUTIONS, IREE_EXTRA, is_iree_target

log = logging.getLogger(__name__)


class MissingDependencies:
    """Which extras the client was told to install (each once per server)."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._told: set[str] = set()

    def tell(self, message: str, target: str) -> None:
        """`target` needs a package the server's interpreter lacks (`message`: what to
        install): tell the client, unless it was told already."""
        if not is_iree_target(target) or IREE_EXTRA in self._told:
            return
        self._told.add(IREE_EXTRA)
        log.warning("%s", message)
        with contextlib.suppress(Exception):
            self._client.notify(lens_types.MISSING_DEPENDENCY, lens_types.MissingDependencyParams(
                message=message, extra=IREE_EXTRA, packages=list(IREE_DISTRIBUTIONS)))
