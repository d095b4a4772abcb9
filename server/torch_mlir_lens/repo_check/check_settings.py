"""A check's settings, resolved once: the command line, else `[tool.torch-mlir-lens]` of the
project's pyproject.toml, else the defaults, for every field.

    read_project_config(path, cwd)     → the `[tool.torch-mlir-lens]` table (`--config`,
                                         else the closest pyproject.toml that has it)
    resolve_settings(given, config, cwd) → CheckSettings, the one object `repo_check.run` takes

The command line is handed in as `CommandLine` (plain values: the parser's types stay in the
command line's package). Paths in reports and baselines are relative to the project root: the
folder of that pyproject.toml, or the working directory without one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from torch_mlir_lens import defaults
from torch_mlir_lens.engine.module_jobs import GivenInputs
from torch_mlir_lens.project import limits
from torch_mlir_lens.project.config import (
    ConfigError,
    ProjectConfig,
    discover_config,
    load_config,
)
from torch_mlir_lens.repo_check.baseline import DEFAULT_NAME
from torch_mlir_lens.repo_check.errors import CheckInputError
from torch_mlir_lens.repo_check.plan import parse_shard
from torch_mlir_lens.repo_check.runner import default_jobs
from torch_mlir_lens.rules.iree_targets import default_arch, is_iree_target, parse_archs
from torch_mlir_lens.rules.rewrite_specs import command_line_items
from torch_mlir_lens.rules.targets import BACKENDS, parse_targets
from torch_mlir_lens.source.onnx_files import is_onnx


@dataclass(frozen=True)
class CommandLine:
    """What the command line gave; None (or empty, or False) where it gave nothing, so that
    the project's setting or the default applies."""

    paths: tuple[str, ...] = ()
    module: str | None = None
    targets: str | None = None  # comma-separated, as typed
    format: str | None = None
    json: bool = False
    output: str | None = None
    jobs: int | None = None
    timeout: float | None = None
    memory_limit: int | None = None
    baseline: str | None = None
    write_baseline: bool = False
    shard: str | None = None  # `I/N`, as typed
    exclude: tuple[str, ...] = ()
    require_inputs: bool = False
    list_modules: bool = False
    strict: bool = False
    rewrites: str | None = None  # comma-separated items, `auto` or `off`, as typed
    inline_blocks: bool = False
    cache_dir: str | None = None
    # One module's example inputs, named here: the module of the one FILE (`--module`, else
    # its first), lowered with them.
    inputs: str | None = None
    inputs_file: str | None = None
    init: str | None = None
    # `--iree-arch TARGET=ARCH` items as typed (a bare ARCH when one IREE target is checked).
    iree_arch: tuple[str, ...] = ()
    dims: Mapping[str, int] = field(default_factory=dict)  # an ONNX model's `--dim NAME=SIZE`

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> CommandLine:
        """From the parsed options by their names (`list` is `--list`); others are ignored."""
        renamed = {"list": "list_modules"}
        names = {f.name for f in fields(cls)}
        given = {renamed.get(k, k): v for k, v in values.items() if renamed.get(k, k) in names}
        for key in ("paths", "exclude", "iree_arch"):
            given[key] = tuple(given.get(key) or ())
        given["dims"] = dict(given.get("dims") or {})
        return cls(**given)


@dataclass(frozen=True)
class CheckSettings:
    """A run's settings, each resolved once (command line, else pyproject.toml, else the
    default)."""

    root: str  # paths in reports and baselines are relative to it
    paths: tuple[str, ...]  # empty: none given anywhere (`run` says so)
    exclude: tuple[str, ...]  # the project's patterns, then the command line's
    module: str | None  # only the modules of this name
    targets: tuple[str, ...]
    fmt: str  # one of outputs.FORMATS
    output: str | None  # the report's file (None: stdout)
    timeout_s: float
    memory_mb: int
    jobs: int
    shard: tuple[int, int] | None
    baseline: str | None  # the baseline file to apply (or to update)
    write_baseline_to: str | None  # with --write-baseline: where
    list_only: bool  # `--list`: name the modules, lower nothing
    example_inputs: Mapping[str, str]
    strict_export: bool
    require_inputs: bool
    cache_dir: str | None
    rewrites: tuple[str, ...]  # the items every module is lowered with
    prove_rewrites: bool  # say per finding whether a proven rewrite exists (`--rewrites off`)
    inline_blocks: bool
    notes: tuple[str, ...] = ()  # what resolving changed of what was asked (a capped -j)
    given_inputs: GivenInputs | None = None  # the command line's, for one module
    # The IREE targets checked → the architecture each compiles for where not its default
    # (`defaults.IREE_ARCHS`): the command line's, else the project's `ireeArchs`.
    iree_archs: Mapping[str, str] = field(default_factory=dict)
    dims: Mapping[str, int] = field(default_factory=dict)  # ONNX models' dynamic dims


def read_project_config(path: str | None, cwd: str) -> ProjectConfig:
    """`[tool.torch-mlir-lens]` of `path` (`--config`), else of the closest pyproject.toml
    above `cwd` that has it; CheckInputError when it cannot be read."""
    try:
        if path:
            if os.path.isdir(path):
                raise CheckInputError("is a folder: --config takes a pyproject.toml file (such "
                                      f"as {os.path.join(path, 'pyproject.toml')})", path)
            if not os.path.isfile(path):
                raise CheckInputError("no such file (--config)", path)
            return load_config(path)
        return discover_config(cwd)
    except ConfigError as err:
        raise CheckInputError(err.message, err.path) from err


def resolve_settings(given: CommandLine, cfg: ProjectConfig, cwd: str) -> CheckSettings:
    """Every setting of a run: the command line's, else the project's, else the default;
    CheckInputError for a value that cannot be used."""
    root = cfg.root or cwd
    memory = given.memory_limit or cfg.memory_limit_mb or defaults.MEMORY_LIMIT_MB
    jobs, note = _jobs(given.jobs or cfg.jobs, memory)
    baseline = given.baseline or cfg.baseline
    write_to = None
    if given.write_baseline:
        write_to = baseline or os.path.join(root, DEFAULT_NAME)
    targets = _targets(given.targets, cfg)
    return CheckSettings(
        root=root, paths=given.paths or tuple(cfg.paths),
        exclude=(*cfg.exclude, *given.exclude), module=given.module,
        targets=targets,
        fmt=given.format or ("json" if given.json else "text"), output=given.output,
        timeout_s=given.timeout or cfg.timeout_seconds or defaults.TIMEOUT_S,
        memory_mb=memory, jobs=jobs, shard=_shard(given),
        baseline=baseline, write_baseline_to=write_to, list_only=given.list_modules,
        example_inputs=dict(cfg.example_inputs),
        strict_export=given.strict or bool(cfg.strict_export),
        require_inputs=given.require_inputs, cache_dir=given.cache_dir,
        rewrites=tuple(_rewrites(given.rewrites) or cfg.rewrites),
        prove_rewrites=(given.rewrites or "").strip() != "off",
        inline_blocks=given.inline_blocks, notes=(note,) if note else (),
        given_inputs=_given_inputs(given),
        iree_archs=_iree_archs(given.iree_arch, cfg.iree_archs, targets), dims=given.dims)


def _given_inputs(given: CommandLine) -> GivenInputs | None:
    """The example inputs named on the command line, for the module of its one FILE."""
    inputs = GivenInputs(given.inputs, os.path.abspath(given.inputs_file)
                         if given.inputs_file else None, given.init)
    if not inputs:
        return None
    if len(given.paths) != 1 or not os.path.isfile(given.paths[0]):
        raise CheckInputError("--inputs, --inputs-file and --init name one module's inputs: "
                              "give one FILE (and --module when it holds several)")
    if is_onnx(given.paths[0]):
        raise CheckInputError("an ONNX model declares its inputs: --inputs, --inputs-file and "
                              "--init are for a PyTorch module (give a dynamic dim's size "
                              "with --dim NAME=SIZE)", given.paths[0])
    if inputs.inputs_file and not os.path.isfile(inputs.inputs_file):
        raise CheckInputError("no such file (--inputs-file)", given.inputs_file)
    return inputs


def _targets(text: str | None, cfg: ProjectConfig) -> tuple[str, ...]:
    if text is None:
        return tuple(cfg.targets or BACKENDS)
    try:
        return tuple(parse_targets(text))
    except ValueError as exc:
        raise CheckInputError(str(exc)) from exc


def _iree_archs(items: tuple[str, ...], project: Mapping[str, str],
               targets: tuple[str, ...]) -> dict[str, str]:
    """The architecture of each IREE target checked where it is not the default: the command
    line's `--iree-arch` items, else the project's; CheckInputError for an item that names no
    IREE target checked or no architecture."""
    checked = [t for t in targets if is_iree_target(t)]
    given: dict[str, str] = {}
    for item in items:
        if "=" not in item and len(checked) == 1:  # one IREE target: its architecture alone
            item = f"{checked[0]}={item}"
        try:
            given.update(parse_archs([item]))
        except ValueError as exc:
            raise CheckInputError(f"--iree-arch: {exc}") from None
    for target in given:
        if target not in checked:
            raise CheckInputError(f"--iree-arch {target}=...: {target} is not among the "
                                  f"targets checked ({', '.join(targets)})")
    archs = {**{t: a for t, a in project.items() if t in checked}, **given}
    return {t: a for t, a in archs.items() if a and a != default_arch(t)}


def _jobs(wanted: int | None, memory_mb: int) -> tuple[int, str | None]:
    """-j (else `jobs`, else CPUs bounded by memory), at most one worker per CPU; and the
    note saying it was capped."""
    if wanted is None:
        return default_jobs(memory_mb)[0], None
    return limits.capped_jobs(wanted)


def _shard(given: CommandLine) -> tuple[int, int] | None:
    if not given.shard:
        return None
    try:
        spec = parse_shard(given.shard)
    except ValueError as exc:
        raise CheckInputError(str(exc)) from exc
    if given.write_baseline:
        raise CheckInputError("--write-baseline with --shard would write part of a baseline: "
                              "write it from a run over every module")
    return spec


def _rewrites(text: str | None) -> list[str]:
    try:
        return command_line_items(text)
    except ValueError as exc:
        raise CheckInputError(f"--rewrites: {exc}") from None
