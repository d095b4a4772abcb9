"""The persistent cache's environment key (system/environment.py) holds IREE's versions: an
IREE target's result is its compiler's, so another IREE is another environment."""

from __future__ import annotations

import sys
from pathlib import Path

from torch_mlir_lens.system import environment


def test_irees_versions_are_part_of_the_environment(tmp_path: Path) -> None:
    assert {"iree-base-compiler", "iree-base-runtime"} <= set(environment.CORE_DISTRIBUTIONS)
    # Asked of another interpreter (a wrapper of this one), as for a worker's own Python.
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    facts = environment._interpreter_facts(str(wrapper))
    assert facts is not None
    assert facts[1]["iree-base-compiler"] == facts[1]["iree-base-runtime"] == "3.13.0"
