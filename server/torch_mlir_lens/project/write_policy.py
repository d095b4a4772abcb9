"""Where an export or a reproducer may be written: the one write policy of the language
server, the command line and the worker.

    check_export(output, source=..., roots=..., chosen_by_user=False)    → the real path
    check_repro_dir(output_dir, source=..., roots=..., chosen_by_user=False) → the real folder
    check_cli_output(output, source=...)                                  → the real path
    check_cli_code_output(output, source=...)                             → the real path
    refuse_source(path, source=...)            the check every write makes (worker included)

The rules, each raising `WriteRefused` with the path and the reason:

- Never a source: no file named `*.py`, `*.pyi`, `*.pyw` or `*.ipynb` is written (whoever
  asks, dialog or not), nor the module's own file (compared by real path, so a symlink or a
  differently spelt path to it counts), nor over a folder or a device.
- A request from an editor that did not come from the user's dialog (`chosen_by_user` false)
  writes only inside the workspace folders (`roots`; a server with no folder: the source
  file's folder), compared after every symlink is resolved, so neither `..` nor a link out of
  the workspace escapes; and an export's name must end in `.mlir` or `.mlirbc` (what an
  export is; `.vmfb` for an IREE target's compiled module), so it cannot create or replace any
  other kind of file.
- A path the user chose in a dialog may be anywhere (the rules of the first item still hold).
- A relative path is relative to the source file's folder (else the first workspace folder).
- The command line's `export -o OUT` is the user's own choice, typed in a terminal: anywhere,
  any name, except a source.
- The command line's `export --emit-python -o OUT.py` writes Python, so a `.py` name is what
  it should have; it never replaces the module's own file, nor any existing file but export
  code it wrote before (its docstring carries `EXPORT_CODE_MARK`).

Pure path logic and `os.path`: no torch, no LSP; the callers turn `WriteRefused` into their
own errors (a JSON-RPC error, `FILE: message` with exit 2, a worker `write-error`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence

from torch_mlir_lens.system.reading import is_nameable, read_head

SOURCE_SUFFIXES = (".py", ".pyi", ".pyw", ".ipynb")
EXPORT_SUFFIXES = (".mlir", ".mlirbc")
COMPILED_SUFFIXES = (".vmfb",)  # an IREE target's compiled module
# In the docstring of every export code file (worker/rewrites/snippet.py): a file that has it
# in its first lines was written by `export --emit-python` and may be written again.
EXPORT_CODE_MARK = "Written by Torch-MLIR Lens; it needs only torch and torch-mlir."
_MARK_WITHIN_BYTES = 4096
# `scheme:` of a URI; two letters at least, so a Windows drive (`C:`) is a path.
_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


class WriteRefused(Exception):
    """A write the policy refuses: `path` (as the request named it, resolved) and why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"refused to write {path}: {reason}")
        self.path = path
        self.reason = reason
        self.message = str(self)


def resolve(path: str, *, source: str | None, roots: Sequence[str]) -> str:
    """`path` made absolute: a relative one against the source file's folder (else the first
    root). Not normalised: `..` and symlinks are left for `real_path` to resolve together, as
    the kernel does (`link/..` is the link target's parent, not the link's)."""
    refuse_unnameable(path)
    if _URI_SCHEME.match(path):
        raise WriteRefused(path, "only file paths and file: URIs can be written")
    if os.path.isabs(path):
        return path
    base = os.path.dirname(source) if source else (roots[0] if roots else None)
    if not base:
        raise WriteRefused(path, "a relative path needs a saved source file or a workspace "
                                 "folder to be relative to")
    return os.path.join(base, path)


def refuse_unnameable(path: str) -> None:
    """WriteRefused for a path no file can have (a NUL byte, a lone surrogate: the system
    cannot take it)."""
    if "\0" in path:
        raise WriteRefused(repr(path), "a file name cannot hold a NUL byte")
    if not is_nameable(path):
        raise WriteRefused(repr(path), "a file name the file system cannot take (not valid "
                                       "in its encoding)")


def real_path(path: str) -> str:
    """Every symlink of `path` resolved (a missing tail is kept as written)."""
    return os.path.realpath(path)


def inside(path: str, roots: Sequence[str]) -> bool:
    """Whether the real `path` is one of the real `roots` or below one."""
    real = real_path(path)
    for root in roots:
        top = real_path(root)
        try:
            if os.path.commonpath([real, top]) == top:
                return True
        except ValueError:  # different drives
            continue
    return False


def is_source_name(path: str) -> bool:
    """A Python or notebook file name (any case: some file systems ignore it)."""
    return path.lower().endswith(SOURCE_SUFFIXES)


def refuse_source(path: str, *, source: str | None) -> None:
    """The rule every write keeps: never a source file, never the module's own file, never
    over something that is not a regular file."""
    real = real_path(path)
    if source and real == real_path(source):
        raise WriteRefused(path, "it is the module's own source file")
    if is_source_name(path) or is_source_name(real):
        raise WriteRefused(path, "its name is Python source's (.py, .pyi, .pyw, .ipynb), "
                                 "never an export's")
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise WriteRefused(path, f"it cannot be checked: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise WriteRefused(path, "it exists and is not a regular file")


def _allowed_roots(roots: Sequence[str], source: str | None) -> list[str]:
    """The folders a request not chosen by the user may write in."""
    if roots:
        return list(roots)
    return [os.path.dirname(source)] if source else []


def _refuse_outside(path: str, real: str, roots: Sequence[str], source: str | None) -> None:
    allowed = _allowed_roots(roots, source)
    if not allowed:
        raise WriteRefused(path, "there is no workspace folder to write in; choose the "
                                 "destination in a dialog")
    if not inside(real, allowed):
        where = real if real != path else "it"
        raise WriteRefused(path, f"{where} is outside the workspace folders "
                                 f"({', '.join(allowed)}); choose the destination in a dialog")


def check_export(output: str, *, source: str | None, roots: Sequence[str],
                 chosen_by_user: bool = False, compiled: bool = False) -> str:
    """The real path an editor's export request may write to (else WriteRefused);
    `compiled`: an IREE target's compiled module (`.vmfb`) rather than IR."""
    path = resolve(output, source=source, roots=roots)
    real = real_path(path)
    refuse_source(path, source=source)
    if not chosen_by_user:
        _refuse_outside(path, real, roots, source)
        suffixes = COMPILED_SUFFIXES if compiled else EXPORT_SUFFIXES
        if not real.lower().endswith(suffixes):
            raise WriteRefused(path, f"an export's name must end in {' or '.join(suffixes)} "
                                     "unless chosen in a dialog")
    return real


def check_repro_dir(output_dir: str, *, source: str | None, roots: Sequence[str],
                    chosen_by_user: bool = False) -> str:
    """The real folder an editor's reproducer may be written into (else WriteRefused).

    The reproducer adds one `<module>.<target>.<stage>.mlir` there (replacing only a previous
    reproducer of that name); the folder is made when missing."""
    path = resolve(output_dir, source=source, roots=roots)
    real = real_path(path)
    if os.path.exists(real) and not os.path.isdir(real):
        raise WriteRefused(path, "it exists and is not a folder")
    if not chosen_by_user:
        _refuse_outside(path, real, roots, source)
    return real


def check_cli_output(output: str, *, source: str | None) -> str:
    """The real path `export -o OUT` may write to: anywhere the user says, except a source."""
    refuse_unnameable(output)
    path = os.path.abspath(output)
    refuse_source(path, source=source)
    return real_path(path)


def check_cli_code_output(output: str, *, source: str | None) -> str:
    """The real path `export --emit-python -o OUT` may write to: anywhere the user says, a
    new file or export code written before; never the module's own file nor anything else."""
    refuse_unnameable(output)
    path = os.path.abspath(output)
    real = real_path(path)
    if source and real == real_path(source):
        raise WriteRefused(path, "it is the module's own source file")
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        return real
    except OSError as exc:
        raise WriteRefused(path, f"it cannot be checked: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise WriteRefused(path, "it exists and is not a regular file")
    try:
        head = read_head(real, _MARK_WITHIN_BYTES).decode("utf-8", "replace")
    except OSError as exc:
        raise WriteRefused(path, f"it cannot be read: {exc.strerror or exc}") from None
    if EXPORT_CODE_MARK not in head:
        raise WriteRefused(path, "it exists and is not export code this command wrote; "
                                 "remove it or choose another name")
    return real
