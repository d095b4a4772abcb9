"""`[tool.torch-mlir-lens]` in pyproject.toml: the project's settings, for CI and the editor.

No torch, no third-party imports (the language server reads this too). Keys that the editor
settings also have keep the editor's names (`timeoutSeconds`, `memoryLimitMb`,
`exampleInputs`, `strictExport`, `rewrites`); `targets` is the editor's `diagnosticTargets`
(both spellings are accepted). The rest only concern `check`: `paths`, `exclude`, `baseline`,
`jobs`. Paths in the file are relative to the folder holding it. `rewrites` lists the rewrites
every module lowers through, as a module's `rewrites=` comment does (`["erfinv@tosa"]`,
`["auto"]`; rules/rewrite_specs.py). `ireeArchs` is the architecture each IREE target compiles
for, where not its default (`{"iree-cuda" = "sm_86"}`; rules/iree_targets.py).
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from torch_mlir_lens.project import limits
from torch_mlir_lens.rules.iree_targets import parse_archs
from torch_mlir_lens.rules.rewrite_specs import parse_specs
from torch_mlir_lens.rules.targets import BACKENDS, TARGETS
from torch_mlir_lens.system.reading import PROJECT_FILE, read_head, read_text

T = TypeVar("T")

SECTION = ("tool", "torch-mlir-lens")
FILENAME = "pyproject.toml"
EDITOR_ONLY = ("defaultTarget", "lensTargets", "diagnostics", "pipelines", "python",
               "colorBands")
KNOWN_KEYS = ("targets", "diagnosticTargets", "exampleInputs", "exclude", "paths",
              "timeoutSeconds", "memoryLimitMb", "strictExport", "baseline", "jobs", "rewrites",
              "ireeArchs")


class ConfigError(Exception):
    """A malformed pyproject.toml or `[tool.torch-mlir-lens]` table (one clear message)."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


@dataclass(frozen=True)
class ProjectConfig:
    """The `[tool.torch-mlir-lens]` table; None for a key means "not set here"."""

    path: str | None = None  # the pyproject.toml it came from (None: no file)
    targets: tuple[str, ...] | None = None
    example_inputs: Mapping[str, str] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    timeout_seconds: float | None = None
    memory_limit_mb: int | None = None
    strict_export: bool | None = None
    baseline: str | None = None  # absolute
    jobs: int | None = None
    rewrites: tuple[str, ...] = ()  # "erfinv@tosa", "auto": every module lowers through them
    iree_archs: Mapping[str, str] = field(default_factory=dict)  # IREE target → architecture

    @property
    def root(self) -> str | None:
        """The folder of the pyproject.toml (the project root), if there is one."""
        return os.path.dirname(self.path) if self.path else None

    def editor_settings(self) -> dict[str, Any]:
        """The keys the editor settings share, as a `torchMlirLens` settings layer."""
        layer: dict[str, Any] = {}
        if self.targets is not None:
            layer["diagnosticTargets"] = list(self.targets)
        if self.example_inputs:
            layer["exampleInputs"] = dict(self.example_inputs)
        if self.timeout_seconds is not None:
            layer["timeoutSeconds"] = self.timeout_seconds
        if self.memory_limit_mb is not None:
            layer["memoryLimitMb"] = self.memory_limit_mb
        if self.strict_export is not None:
            layer["strictExport"] = self.strict_export
        if self.rewrites:
            layer["rewrites"] = list(self.rewrites)
        if self.iree_archs:
            layer["ireeArchs"] = dict(self.iree_archs)
        return layer


def _has_section(data: Mapping[str, Any]) -> bool:
    tool = data.get(SECTION[0])
    return isinstance(tool, Mapping) and SECTION[1] in tool


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        # Bounded, regular files only: a repository's pyproject.toml may be a link to
        # /dev/zero or a 250 MB file, read even before its folder is trusted.
        return tomllib.loads(read_text(path, PROJECT_FILE))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}", str(path)) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text: {exc.reason}", str(path)) from exc
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", str(path)) from exc


def is_repository(folder: Path) -> bool:
    """Whether `folder` is a repository's root as git itself would take it: a `.git` folder,
    or a `.git` file that says `gitdir:`, belonging to this user. An empty `.git` file, or one
    of another user (a shared temporary folder's), makes nothing a project (git refuses such
    a folder too: `safe.directory`)."""
    dot_git = folder / ".git"
    try:
        st = os.stat(dot_git)
    except OSError:
        return False
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return False
    if stat.S_ISDIR(st.st_mode):
        return True
    try:
        return stat.S_ISREG(st.st_mode) and read_head(dot_git, 8).startswith(b"gitdir:")
    except OSError:
        return False


def repository_root(start: Path) -> Path | None:
    """The first folder at or above `start` that is a repository's root, if any."""
    for folder in (start, *start.parents):
        if is_repository(folder):
            return folder
    return None


def _folders_to_search(start: str | os.PathLike[str],
                       boundary: str | os.PathLike[str] | None) -> list[Path]:
    """`start`'s folder and those above it, up to `boundary` (inclusive) when `start` is in
    it, else up to the repository root; without either, `start`'s folder alone."""
    here = Path(start).resolve()
    if here.is_file():
        here = here.parent
    top = Path(boundary).resolve() if boundary is not None else None
    if top is None or not here.is_relative_to(top):
        top = repository_root(here)
    if top is None:
        return [here]
    out = []
    for folder in (here, *here.parents):
        out.append(folder)
        if folder == top or is_repository(folder):
            break
    return out


def find_pyproject(start: str | os.PathLike[str],
                   boundary: str | os.PathLike[str] | None = None) -> Path | None:
    """The closest pyproject.toml at or above `start` that has `[tool.torch-mlir-lens]`.

    Never above the project: the search stops at `boundary` (an editor's workspace folder,
    whose trust covers what it holds), else at the first folder holding `.git` (the
    repository root), as ruff and mypy do not wander out of a project; with neither, only
    `start`'s own folder is read, so a pyproject.toml dropped in a parent folder (a shared
    temporary folder of a multi-user machine) configures nothing. A pyproject.toml without
    the table is passed over.
    """
    for folder in _folders_to_search(start, boundary):
        candidate = folder / FILENAME
        if candidate.is_file():
            try:
                if _has_section(_read_toml(candidate)):
                    return candidate
            except ConfigError:
                return candidate  # broken: let load_config say so
    return None


def _str_list(key: str, value: Any, path: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"[tool.torch-mlir-lens] {key}: expected a list of strings", path)
    return tuple(value)


def _limit(key: str, check: Callable[[object], T], value: Any, path: str) -> T:
    """A number checked as the command line checks it (`limits`)."""
    if isinstance(value, str):  # TOML has numbers: "60" is a string, not a time-out
        raise ConfigError(f"[tool.torch-mlir-lens] {key}: expected a number, got {value!r}",
                          path)
    try:
        return check(value)
    except limits.LimitError as err:
        raise ConfigError(f"[tool.torch-mlir-lens] {key}: {err.message}", path) from None


def _targets(key: str, value: Any, path: str) -> tuple[str, ...]:
    names = _str_list(key, value, path)
    for name in names:
        if name not in TARGETS:
            raise ConfigError(f"[tool.torch-mlir-lens] {key}: unknown target {name!r} "
                              f"(choose from {', '.join(TARGETS)})", path)
    if not names:
        raise ConfigError(f"[tool.torch-mlir-lens] {key}: names no target", path)
    return tuple(dict.fromkeys(names))


def _inside_project(key: str, base: str, name: str, path: str) -> str:
    """`name` joined to the pyproject's folder, refused unless it stays inside the project
    (the repository, else that folder) once links are resolved: a repository's own file must
    not make `check` read or write elsewhere (`--write-baseline` creates the file)."""
    if "\0" in name:
        raise ConfigError(f"[tool.torch-mlir-lens] {key}: a path with a NUL byte", path)
    joined = os.path.join(base, name)
    project = Path(base).resolve()
    project = repository_root(project) or project
    if not Path(joined).resolve().is_relative_to(project):
        raise ConfigError(f"[tool.torch-mlir-lens] {key}: {name!r} is outside the project "
                          f"({project}); name a path inside it", path)
    return joined


def parse_table(table: Mapping[str, Any], path: str) -> ProjectConfig:
    """Check and convert a `[tool.torch-mlir-lens]` table; raises ConfigError when malformed."""
    if not isinstance(table, Mapping):
        raise ConfigError("[tool.torch-mlir-lens] must be a table", path)
    base = os.path.dirname(os.path.abspath(path))
    values: dict[str, Any] = {}
    for key in table:
        if key in EDITOR_ONLY:
            raise ConfigError(f"[tool.torch-mlir-lens] {key}: an editor-only setting "
                              "(set it in the editor's settings)", path)
        if key not in KNOWN_KEYS:
            raise ConfigError(f"[tool.torch-mlir-lens] unknown key {key!r} "
                              f"(known: {', '.join(KNOWN_KEYS)})", path)
    if "targets" in table and "diagnosticTargets" in table and (
            table["targets"] != table["diagnosticTargets"]):
        raise ConfigError("[tool.torch-mlir-lens] targets and diagnosticTargets differ "
                          "(they are one setting: keep one)", path)
    for key in ("targets", "diagnosticTargets"):
        if key in table:
            values["targets"] = _targets(key, table[key], path)
    if "exampleInputs" in table:
        inputs = table["exampleInputs"]
        if not isinstance(inputs, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in inputs.items()):
            raise ConfigError("[tool.torch-mlir-lens] exampleInputs: expected a table of "
                              '"ClassName" or "path.py::ClassName" = "EXPR"', path)
        values["example_inputs"] = dict(inputs)
    if "exclude" in table:
        values["exclude"] = _str_list("exclude", table["exclude"], path)
    if "paths" in table:
        values["paths"] = tuple(_inside_project("paths", base, p, path)
                                for p in _str_list("paths", table["paths"], path))
    if "timeoutSeconds" in table:
        values["timeout_seconds"] = _limit("timeoutSeconds", limits.timeout_seconds,
                                           table["timeoutSeconds"], path)
    if "memoryLimitMb" in table:
        values["memory_limit_mb"] = _limit("memoryLimitMb", limits.memory_limit_mb,
                                           table["memoryLimitMb"], path)
    if "strictExport" in table:
        if not isinstance(table["strictExport"], bool):
            raise ConfigError("[tool.torch-mlir-lens] strictExport: expected true or false",
                              path)
        values["strict_export"] = table["strictExport"]
    if "baseline" in table:
        if not isinstance(table["baseline"], str):
            raise ConfigError("[tool.torch-mlir-lens] baseline: expected a file name", path)
        values["baseline"] = _inside_project("baseline", base, table["baseline"], path)
    if "jobs" in table:
        values["jobs"] = _limit("jobs", limits.jobs, table["jobs"], path)
    if "rewrites" in table:
        items = _str_list("rewrites", table["rewrites"], path)
        try:
            values["rewrites"] = tuple(str(s) for s in parse_specs(items))
        except ValueError as exc:
            raise ConfigError(f"[tool.torch-mlir-lens] rewrites: {exc}", path) from None
    if "ireeArchs" in table:
        values["iree_archs"] = _iree_archs(table["ireeArchs"], path)
    return ProjectConfig(path=os.path.abspath(path), **values)


def _iree_archs(value: Any, path: str) -> dict[str, str]:
    """`ireeArchs = {"iree-cuda" = "sm_86"}`: each an IREE target and one word of an
    architecture."""
    if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError('[tool.torch-mlir-lens] ireeArchs: expected a table of "TARGET" = '
                          '"ARCH" (such as "iree-cuda" = "sm_86")', path)
    try:
        return parse_archs([f"{k}={v}" for k, v in value.items()])
    except ValueError as exc:
        raise ConfigError(f"[tool.torch-mlir-lens] ireeArchs: {exc}", path) from None


def load_config(path: str | os.PathLike[str]) -> ProjectConfig:
    """Read `[tool.torch-mlir-lens]` of one pyproject.toml (an empty config without it)."""
    data = _read_toml(Path(path))
    tool = data.get("tool")
    table = tool.get("torch-mlir-lens") if isinstance(tool, Mapping) else None
    if table is None:
        return ProjectConfig(path=os.path.abspath(path))
    return parse_table(table, str(path))


def discover_config(start: str | os.PathLike[str],
                    boundary: str | os.PathLike[str] | None = None) -> ProjectConfig:
    """The project config governing `start` (see `find_pyproject`); empty when there is none."""
    found = find_pyproject(start, boundary)
    return load_config(found) if found is not None else ProjectConfig()


def default_backends() -> tuple[str, ...]:
    """The backends checked when neither the command line nor the project names any."""
    return BACKENDS
