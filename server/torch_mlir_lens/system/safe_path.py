"""No import from the working directory: the entry points' first line of defence.

`python -m torch_mlir_lens …` and `python -c …` put the working directory first on `sys.path`,
so a repository's own `json.py` or `logging.py` would be imported by the first `import json`
of a server an editor starts in that repository, before anyone said it may run code. Every
launcher of ours passes `-P` (Python 3.11's "safe path"), and the clients start the server in a
neutral folder; this guard covers a launcher that does not (an older editor configuration):
it runs before the entry point imports anything that could be found there.

It cannot protect against a folder named `torch_mlir_lens` in the working directory (Python
imports the package before any of its code runs): only `-P` does, which is why every
documented launcher uses it.
"""

from __future__ import annotations

import os
import sys

SAFE_PATH_FLAG = "-P"  # the interpreter flag every launcher passes (Python 3.11+)


def drop_working_directory() -> None:
    """Remove the entry `-m`/`-c` put first on `sys.path` for the working directory.

    A no-op under `-P` (nothing was put there) and when the first entry is anything else.
    """
    if sys.flags.safe_path or not sys.path:
        return
    first = sys.path[0]
    try:
        cwd = os.getcwd()
    except OSError:  # a deleted working directory
        cwd = None
    if first == "" or (cwd is not None and os.path.abspath(first) == cwd):
        del sys.path[0]
