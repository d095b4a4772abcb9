"""Where an import is looked for, and what a new file of the user's would now shadow.

`import einops` finds the first `einops` along `sys.path`: the file's own folder, the workspace,
`PYTHONPATH`, then the installed libraries. A lowering's answer therefore depends on the names
it imported being *absent* from the user's folders searched before the one they came from: a
pull request that adds `einops/__init__.py` at the repository's root changes what the module
computes without changing any file the answer read. Provenance records those absences
(`provenance.py`), the persistent cache checks them before an answer is believed
(`system/disk_cache.py`), and the loader drops a module that a new file now shadows, so the
next import finds the user's file as a fresh interpreter would (`loader.py`).
"""

from __future__ import annotations

import contextlib
import os
import sys

from torch_mlir_lens.worker.loading.hygiene import is_library_file

_SUFFIXES = (".py", ".pyc", ".so", ".pyd", ".pyw")


def user_search_dirs() -> list[str]:
    """The folders of `sys.path`, in order, that are the user's (not installed code), as
    real paths."""
    out: list[str] = []
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        real = os.path.realpath(entry)
        if real not in out and not is_library_file(os.path.join(real, "_")):
            out.append(real)
    return out


def module_names_in(folder: str) -> set[str]:
    """The top-level modules and packages a folder offers to `import` (`x.py`, `x/__init__.py`,
    extension modules)."""
    names: set[str] = set()
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            name = entry.name
            if entry.is_dir():
                if os.path.isfile(os.path.join(entry.path, "__init__.py")):
                    names.add(name)
            elif name.endswith(_SUFFIXES):
                names.add(name.split(".", 1)[0])
    return names


def home_of(name: str, file: str) -> str:
    """The `sys.path` folder a top-level module `name` was found in (its file's)."""
    real = os.path.realpath(file)
    folder = os.path.dirname(real)
    if os.path.basename(folder) == name and os.path.basename(real).startswith("__init__."):
        folder = os.path.dirname(folder)
    return folder


def searched_before(home: str, dirs: list[str]) -> list[str]:
    """The user's folders (`dirs`, in search order) an import looked in, and found nothing,
    before `home`: those before it when it is one of them; all of them when it is installed
    code (the user's folders come first on `sys.path`); none when it is neither (a module
    loaded by path)."""
    if home in dirs:
        return dirs[:dirs.index(home)]
    return list(dirs) if is_library_file(os.path.join(home, "_")) else []
