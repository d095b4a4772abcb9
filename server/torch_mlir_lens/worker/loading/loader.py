"""Execute the definitions of a user's file, and nothing else, under the file's real path.

Why under the real path: torch.export records the Python frames of every op, and torch-mlir turns
them into MLIR locations; only when the code objects' `co_filename` is the file's absolute path
do those locations name the user's file (see the shared torch-mlir notes, "Locations").

What runs (at top level, and recursively inside `try`/`if` blocks):
imports, `def`/`class` (with their decorators), assignments (`=`, annotated, augmented), `pass`,
docstrings/bare constants, `global`/`nonlocal` (a top-level assignment that fails is skipped,
see `_run_statement`). What never runs: any other expression statement
(top-level calls such as `train()` or `print(...)`), loops, `with` blocks, `match`, `del`,
`raise`, `assert` — and the whole `if __name__ == "__main__":` block (also spelled with the
operands swapped; its `else:` branch, or the body of `if __name__ != "__main__":`, is what an
import would run, and is kept, filtered the same way). A training script must not train on a
hover.

The module is registered in `sys.modules` as `torch_mlir_lens_user.<folder>_<hash>.<stem>` (a
package per folder, whose `__path__` is the folder, so `from .layers import X` works as well
as `from layers import X`, thanks to the folder put first on `sys.path`); `__name__` is never
"__main__". Executions are cached by (path, sha256(text)). The user's modules (any file that
is not an installed library's, in this folder or any other) are dropped from `sys.modules` when
their file changed on disk, so an edit to `layers.py`, or to `lib/acts.py` of another workspace
folder, is seen when `model.py` is loaded again.
"""

from __future__ import annotations
import __future__

import ast
import hashlib
import importlib.machinery
import os
import re
import sys
import traceback
import types
from dataclasses import dataclass, field

from torch_mlir_lens.protocol.frames import in_installed_package
from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.system.bounded_cache import BoundedCache
from torch_mlir_lens.worker.loading import search_path
from torch_mlir_lens.worker.loading.file_states import is_user_source, module_file, read_source
from torch_mlir_lens.worker.process import WORKER

USER_PACKAGE = "torch_mlir_lens_user"
SKIPPED_ATTR = "__torch_mlir_lens_skipped__"  # [(line, message)] of assignments that failed
_MAX_CACHED = 32

_KEEP = (
    ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
    ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Pass, ast.Global, ast.Nonlocal,
)


@dataclass
class _Loaded:
    module: types.ModuleType
    folder: str
    # Sibling modules (name → (file, mtime_ns, size)) present after the execution.
    siblings: dict[str, tuple[str, int, int]]


@dataclass
class _LoaderState:
    """What the loader keeps between jobs."""

    # Executions by (path, sha256(text)), the most recent `_MAX_CACHED` of them.
    cache: BoundedCache[tuple[str, str], _Loaded] = field(
        default_factory=lambda: BoundedCache(_MAX_CACHED))
    # The module names `load_definitions` was asked for since `begin_job` (what a job loaded
    # by path: its own file, a parent's): the roots of what its answer depends on.
    touched: set[str] = field(default_factory=set)
    # The user modules' file stamps when they were imported (a change makes them go).
    import_stamps: dict[str, tuple[int, int] | None] = field(default_factory=dict)
    preloaded: frozenset[str] = frozenset()  # sys.modules before any user code ran


def _state() -> _LoaderState:
    return WORKER.part(_LoaderState)


def touched() -> frozenset[str]:
    """The modules loaded by path since the job began (provenance.py's roots)."""
    return frozenset(_state().touched)


def begin_job() -> None:
    """A job starts: forget what the last one loaded."""
    _state().touched.clear()


# ---------------------------------------------------------------------------------------------
# Filtering


def _main_guard(test: ast.expr) -> bool | None:
    """For `__name__ == "__main__"` (either order): False, as the file is never run as a script
    (`!=`: True); None for any other test."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq | ast.NotEq)):
        return None
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    if not (names and consts):
        return None
    return isinstance(test.ops[0], ast.NotEq)


def _filter_body(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of `body` that may run (see the module docstring)."""
    kept: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, _KEEP):
            kept.append(stmt)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            kept.append(stmt)  # docstrings
        elif isinstance(stmt, ast.If):
            guard = _main_guard(stmt.test)
            if guard is not None:  # only the branch an import would take
                kept.extend(_filter_body(stmt.body if guard else stmt.orelse))
                continue
            stmt.body = _filter_body(stmt.body) or [_pass_at(stmt)]
            stmt.orelse = _filter_body(stmt.orelse)
            kept.append(stmt)
        elif isinstance(stmt, ast.Try | ast.TryStar):
            stmt.body = _filter_body(stmt.body) or [_pass_at(stmt)]
            for handler in stmt.handlers:
                handler.body = _filter_body(handler.body) or [_pass_at(handler)]
            stmt.orelse = _filter_body(stmt.orelse)
            stmt.finalbody = _filter_body(stmt.finalbody)
            kept.append(stmt)
    return kept


def _pass_at(node: ast.AST) -> ast.Pass:
    return ast.copy_location(ast.Pass(), node)


def definitions_only(tree: ast.Module) -> ast.Module:
    """The module with everything but definitions removed (in place; also returned)."""
    tree.body = _filter_body(tree.body)
    return tree


# ---------------------------------------------------------------------------------------------
# Names, packages, sys.path


def _identifier(text: str) -> str:
    ident = re.sub(r"\W", "_", text)
    return ident if ident and not ident[0].isdigit() else "_" + ident


def module_name_for(path: str) -> str:
    """`torch_mlir_lens_user.<folder>_<hash8>.<stem>` for an absolute path."""
    folder, base = os.path.split(path)
    digest = hashlib.sha256(folder.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    stem = os.path.splitext(base)[0]
    return f"{_package_for(folder, digest)}.{_identifier(stem)}"


def _package_for(folder: str, digest: str) -> str:
    """Register (once) the user package and the per-folder package; return the latter's name."""
    if USER_PACKAGE not in sys.modules:
        root = types.ModuleType(USER_PACKAGE, "Files loaded by Torch-MLIR Lens.")
        root.__path__ = []
        sys.modules[USER_PACKAGE] = root
    name = f"{USER_PACKAGE}.{_identifier(os.path.basename(folder) or 'root')}_{digest}"
    if name not in sys.modules:
        pkg = types.ModuleType(name)
        pkg.__path__ = [folder]
        pkg.__package__ = name
        pkg.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        pkg.__spec__.submodule_search_locations = [folder]
        sys.modules[name] = pkg
    return name


def _put_first_on_sys_path(folder: str) -> None:
    """The file's folder goes first on sys.path, so sibling imports find the user's files."""
    while folder in sys.path:
        sys.path.remove(folder)
    sys.path.insert(0, folder)


def _in_tree(file: str | None, folder: str) -> bool:
    """True for files inside the user's folder tree, but never an installed package's."""
    if not file:
        return False
    if not os.path.isabs(file):
        file = os.path.abspath(file)
    if not file.startswith(folder.rstrip(os.sep) + os.sep):  # runs for every loaded module
        return False
    parts = file.split(os.sep)
    return "site-packages" not in parts and "dist-packages" not in parts


def _stamp(file: str) -> tuple[int, int] | None:
    try:
        st = os.stat(file)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def mark_preloaded() -> None:
    """Remember the modules loaded so far as never the user's (call before any user code runs).

    The scans below look for the user's modules among sys.modules, which holds thousands of
    torch's; skipping those makes each scan take microseconds instead of milliseconds.
    """
    _state().preloaded = frozenset(sys.modules)


def modules_loaded_since_start() -> list[tuple[str, types.ModuleType]]:
    """(name, module) of sys.modules, minus what was there at `mark_preloaded`."""
    modules = sys.modules
    preloaded = _state().preloaded
    return [(name, modules[name]) for name in modules.keys() - preloaded if name in modules]


def _user_siblings(folder: str, exclude: str) -> dict[str, tuple[str, int, int]]:
    """The user's modules in sys.modules (this folder's tree or any other, never an installed
    library), with their stamps."""
    found: dict[str, tuple[str, int, int]] = {}
    for name, module in modules_loaded_since_start():
        file = module_file(module)
        if name == exclude or not isinstance(file, str) or not _users(file, folder):
            continue
        stamp = _stamp(file)
        if stamp is not None:
            found[name] = (file, *stamp)
    return found


def _users(file: str, folder: str) -> bool:
    """A file of the user's: in the job's folder tree, or a source of another folder that is
    not installed code (a workspace folder imported through `sys.path`)."""
    return _in_tree(file, folder) or is_user_source(file)


def _drop_changed_siblings(folder: str, exclude: str) -> bool:
    """Remove from sys.modules the user's modules whose file changed since import, whatever
    their folder."""
    dropped = False
    for name, module in modules_loaded_since_start():
        file = module_file(module)
        if name == exclude or not isinstance(file, str) or not _users(file, folder):
            continue
        if name.startswith(USER_PACKAGE + ".") and name.count(".") >= 2 and _is_loaded(name):
            continue  # files loaded by us are keyed by their text, not their disk state
        recorded = _state().import_stamps.get(name)
        current = _stamp(file)
        if recorded is None:
            _state().import_stamps[name] = current
        elif recorded != current:
            del sys.modules[name]
            _state().import_stamps.pop(name, None)
            dropped = True
    return _drop_shadowed(folder) or dropped


def stamp_imported_modules() -> None:
    """Remember the file stamp of every user module imported so far that has none yet.

    Modules a file imports while it loads are stamped then; one imported later (inside a
    function, while tracing) only here, after its job: without a stamp taken before the next
    edit, the edit would go unseen.
    """
    for name, module in modules_loaded_since_start():
        file = module_file(module)
        if name in _state().import_stamps or not isinstance(file, str):
            continue
        if name.startswith(USER_PACKAGE + ".") and _is_loaded(name):
            continue  # keyed by its text, not its disk state
        if file.endswith(".py") and not in_installed_package(file):
            _state().import_stamps[name] = _stamp(file)


def _drop_shadowed(folder: str) -> bool:
    """Drop modules that a file of the user's now shadows, so that the next import finds it as
    a fresh interpreter would: a user module imported from another folder when this folder has
    its own file of that name (two projects with a `layers.py` each), and any top-level module
    (an installed `einops`) when a user's folder searched before its own now offers one."""
    dropped = _drop_shadowed_top_level()
    for name in list(_state().import_stamps):
        module = sys.modules.get(name)
        file = module_file(module)
        if module is None or not isinstance(file, str) or _in_tree(file, folder):
            continue
        base = os.path.join(folder, *name.split("."))
        if os.path.isfile(base + ".py") or os.path.isfile(os.path.join(base, "__init__.py")):
            del sys.modules[name]
            _state().import_stamps.pop(name, None)
            dropped = True
    return dropped


def _drop_shadowed_top_level() -> bool:
    dirs = search_path.user_search_dirs()
    offered = {d: search_path.module_names_in(d) for d in dirs}
    doomed = []
    for name, module in modules_loaded_since_start():
        file = module_file(module)
        if "." in name or name == USER_PACKAGE or not isinstance(file, str):
            continue
        before = search_path.searched_before(search_path.home_of(name, file), dirs)
        if any(name in offered[d] for d in before):
            doomed.append(name)
    for name in doomed:
        for loaded in [n for n in sys.modules if n == name or n.startswith(name + ".")]:
            del sys.modules[loaded]
            _state().import_stamps.pop(loaded, None)
    return bool(doomed)


def _is_loaded(name: str) -> bool:
    return any(entry.module.__name__ == name for entry in _state().cache.values())


# ---------------------------------------------------------------------------------------------
# Loading


def _siblings_changed(entry: _Loaded) -> bool:
    for name, (file, mtime, size) in entry.siblings.items():
        if name not in sys.modules or _stamp(file) != (mtime, size):
            return True
    return False


def _read(path: str) -> str:
    try:
        return read_source(path)  # bounded, regular files only; its digest recorded
    except (OSError, UnicodeDecodeError) as exc:
        raise LensError(ErrorKind.LOAD_ERROR, f"cannot read {path}: {exc}", file=path) from exc


def load_definitions(path: str, text: str | None = None) -> types.ModuleType:
    """Execute the definitions of `path` (or of `text`, an unsaved buffer of it); cached.

    Raises LensError of kind "syntax-error" or "load-error" (one-line message; the line of the
    innermost frame in the user's folder tree when the error comes from executing the file).
    """
    path = os.path.abspath(path)
    if text is None:
        text = _read(path)
    folder = os.path.dirname(path)
    name = module_name_for(path)
    _state().touched.add(name)
    key = (path, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())
    _put_first_on_sys_path(folder)
    dropped = _drop_changed_siblings(folder, exclude=name)
    entry = _state().cache.get(key)
    if entry is not None and not dropped and not _siblings_changed(entry):
        sys.modules[name] = entry.module
        return entry.module
    module = _execute(path, text, name)
    siblings = _user_siblings(folder, exclude=name)
    for sib_name, (_file, mtime, size) in siblings.items():
        _state().import_stamps.setdefault(sib_name, (mtime, size))
    _state().cache.put(key, _Loaded(module, folder, siblings))
    return module


def _execute(path: str, text: str, name: str) -> types.ModuleType:
    """Parse, filter, compile under the real path and execute into a fresh module."""
    try:
        tree = ast.parse(text.removeprefix("\ufeff"), filename=path)
    except SyntaxError as exc:
        line = exc.lineno
        where = f" (line {line})" if line else ""
        raise LensError(
            ErrorKind.SYNTAX_ERROR, f"syntax error in {os.path.basename(path)}{where}: {exc.msg}",
            file=path, line=line,
        ) from None
    except ValueError as exc:  # e.g. null bytes
        raise LensError(ErrorKind.SYNTAX_ERROR, f"cannot parse {path}: {exc}", file=path) from None
    statements = definitions_only(tree).body
    flags = _future_flags(statements)
    module = types.ModuleType(name)
    module.__file__ = path
    module.__package__ = name.rpartition(".")[0]
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, origin=path)
    module.__spec__.has_location = True
    previous = sys.modules.get(name)
    sys.modules[name] = module  # before executing: dataclasses and pickling look it up
    skipped: list[tuple[int, str]] = []
    module.__dict__[SKIPPED_ATTR] = skipped
    try:
        for stmt in statements:
            _run_statement(stmt, module, path, skipped, flags)
    except BaseException as exc:
        if previous is not None:
            sys.modules[name] = previous
        else:
            sys.modules.pop(name, None)
        if not isinstance(exc, Exception | SystemExit):
            raise  # KeyboardInterrupt and the like are not the file's fault
        raise _load_error(exc, path) from exc
    return module


def _future_flags(statements: list[ast.stmt]) -> int:
    """Compiler flags of the file's `from __future__` imports (statements compile one by one)."""
    flags = 0
    for stmt in statements:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            for alias in stmt.names:
                feature = getattr(__future__, alias.name, None)
                flags |= getattr(feature, "compiler_flag", 0)
    return flags


def _run_statement(
    stmt: ast.stmt, module: types.ModuleType, path: str, skipped: list[tuple[int, str]],
    flags: int = 0,
) -> None:
    """Execute one top-level statement (compiled under the real path).

    A failing top-level assignment is skipped rather than fatal: in scripts they often use names
    that only the skipped loops or calls would have defined (`final = loss.item()` after a
    training loop), and the modules of the file do not need them. Its error is kept in
    `module.__torch_mlir_lens_skipped__` as (line, message). Imports, definitions and blocks
    that fail are load errors.
    """
    code = compile(ast.Module(body=[stmt], type_ignores=[]), path, "exec", flags=flags,
                   dont_inherit=True)
    try:
        exec(code, module.__dict__)
    except Exception as exc:
        if not isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            raise
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        skipped.append((stmt.lineno, f"{type(exc).__name__}: {detail}".rstrip(": ")))


def _load_error(exc: BaseException, path: str) -> LensError:
    """A one-line load-error naming the user's innermost frame."""
    folder = os.path.dirname(path)
    file, line = path, None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        frame_file = os.path.abspath(frame.f_code.co_filename)
        if frame_file == path or _in_tree(frame_file, folder):
            file, line = frame_file, lineno
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:  # in an imported sibling
        file, line = os.path.abspath(exc.filename), exc.lineno
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    kind = type(exc).__name__
    where = f"{os.path.basename(file)}:{line}" if line else os.path.basename(file)
    message = f"loading {os.path.basename(path)} failed at {where}: {kind}"
    return LensError(
        ErrorKind.LOAD_ERROR, f"{message}: {detail}" if detail else message, file=file, line=line,
    )


def user_files_for(path: str) -> list[str]:
    """The user's file plus the loaded .py files of its folder tree (siblings, subpackages).

    Frames in a submodule defined in a sibling file then map too. Installed packages that
    happen to live under the folder (a `.venv` inside the workspace) are not the user's.
    """
    folder = os.path.dirname(path)
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.exec_prefix, sys.base_prefix)}
    files = {path}
    for _name, module in modules_loaded_since_start():
        file = module_file(module)
        if not isinstance(file, str) or not file.endswith(".py"):
            continue
        file = os.path.abspath(file)
        if not file.startswith(folder + os.sep):
            continue
        real = os.path.realpath(file)
        if in_installed_package(real) or any(real.startswith(p + os.sep) for p in prefixes):
            continue
        files.add(file)
    return sorted(files)
