"""User settings of the language server (`torchMlirLens.*`), as in docs/contracts.md.

Settings arrive from two places: `initializationOptions.settings` at start-up and the client's
`workspace/configuration` (section `torchMlirLens`), pulled again on every
`workspace/didChangeConfiguration`. Whatever is malformed falls back to the default and is
reported, so a typo in settings.json never takes the server down.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from torch_mlir_lens import defaults
from torch_mlir_lens.rules.iree_targets import IREE_TARGETS, arch_error, default_arch
from torch_mlir_lens.rules.targets import BACKENDS, TARGETS

SECTION = "torchMlirLens"
DIAGNOSTIC_MODES = ("onSave", "onType", "off")

# camelCase setting key → dataclass field
_KEYS = {
    "defaultTarget": "default_target",
    "lensTargets": "lens_targets",
    "diagnostics": "diagnostics",
    "diagnosticTargets": "diagnostic_targets",
    "timeoutSeconds": "timeout_seconds",
    "memoryLimitMb": "memory_limit_mb",
    "exampleInputs": "example_inputs",
    "pipelines": "pipelines",
    "strictExport": "strict_export",
    "cacheSizeMb": "cache_size_mb",
    "rewrites": "rewrites",
    "stitchBlocks": "stitch_blocks",
    "ireeArchs": "iree_archs",
}
# What `diagnosticTargets` may name: the backends, and the IREE targets (compiled by IREE from
# the Linalg IR: rules/iree_targets.py), which the check then compiles too.
DIAGNOSED = (*BACKENDS, *IREE_TARGETS)
# Not here: `python` and `colorBands` are the client's (the interpreter that runs this server,
# the panes' colours); were `python` read, the settings pulled after start-up would differ from
# the initialization options in every window that sets it, and re-check every open file.


@dataclass(frozen=True)
class Settings:
    """The effective settings; every field has the contract's default."""

    default_target: str = "linalg"
    lens_targets: tuple[str, ...] = ("linalg", "tosa")
    diagnostics: str = "onSave"
    diagnostic_targets: tuple[str, ...] = BACKENDS
    timeout_seconds: float = defaults.TIMEOUT_S
    memory_limit_mb: int = defaults.MEMORY_LIMIT_MB
    example_inputs: Mapping[str, str] = field(default_factory=dict)
    pipelines: Mapping[str, str] = field(default_factory=dict)
    strict_export: bool = False
    cache_size_mb: int = defaults.CACHE_SIZE_MB  # the persistent result cache; 0: off
    # Rewrites every module lowers through ("erfinv@tosa", "auto"), beyond its own comment.
    rewrites: tuple[str, ...] = ()
    stitch_blocks: bool = True  # repeated blocks as one function each (False: inline)
    # An IREE target → the architecture it compiles for, where not its default
    # (`defaults.IREE_ARCHS`): what each IREE lowering, Verify and export is sent.
    iree_archs: Mapping[str, str] = field(default_factory=dict)

    @property
    def check_targets(self) -> tuple[str, ...]:
        """Targets of one check lowering: the default target plus the diagnosed backends.

        Hover, lenses and diagnostics share this one lowering (one export) so whichever
        asks first fills the cache for the others.
        """
        targets = [self.default_target]
        if self.diagnostics != "off":
            targets += [t for t in self.diagnostic_targets if t not in targets]
        return tuple(targets)

    def results_key(self) -> tuple[Any, ...]:
        """The settings that change lowering results (a change empties result caches)."""
        return (
            tuple(sorted(self.example_inputs.items())),
            self.strict_export,
            self.rewrites,
            self.stitch_blocks,
            tuple(sorted(self.iree_archs.items())),
        )


def _target_list(value: Any, *, allowed: set[str]) -> tuple[str, ...] | None:
    if not isinstance(value, list | tuple):
        return None
    out = tuple(dict.fromkeys(v for v in value if isinstance(v, str) and v in allowed))
    return out if len(out) == len(value) else None


def _str_map(value: Any) -> dict[str, str] | None:
    if not isinstance(value, Mapping):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return None
    return dict(value)


def _coerce(name: str, value: Any) -> Any:
    """The value of field `name` from raw JSON, or None when it does not fit."""
    if name == "default_target":
        return value if isinstance(value, str) and value in TARGETS else None
    if name == "lens_targets":
        return _target_list(value, allowed=set(TARGETS))
    if name == "diagnostic_targets":
        return _target_list(value, allowed=set(DIAGNOSED))
    if name == "diagnostics":
        return value if value in DIAGNOSTIC_MODES else None
    if name == "timeout_seconds":
        ok = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
        return float(value) if ok else None
    if name == "memory_limit_mb":
        ok = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
        return int(value) if ok else None
    if name in ("example_inputs", "pipelines"):
        return _str_map(value)
    if name == "cache_size_mb":
        ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
        return int(value) if ok else None
    if name in ("strict_export", "stitch_blocks"):
        return value if isinstance(value, bool) else None
    if name == "rewrites":
        return _rewrites(value)
    if name == "iree_archs":
        return _iree_archs(value)
    return None


def _iree_archs(value: Any) -> dict[str, str] | None:
    """`{"iree-cuda": "sm_86", ...}`: each an IREE target and one word of an architecture
    (rules/iree_targets.py); an empty one or the default is left out (the target's default
    then applies, and the job stays the one every other front end sends). None when one is
    bad."""
    given = _str_map(value)
    if given is None:
        return None
    out = {}
    for target, arch in given.items():
        arch = arch.strip()
        if target not in IREE_TARGETS or arch_error(target, arch):
            return None
        if arch and arch != default_arch(target):
            out[target] = arch
    return out


def _rewrites(value: Any) -> tuple[str, ...] | None:
    """Rewrite items as rules/rewrite_specs.py reads them, or None when one is bad."""
    from torch_mlir_lens.rules.rewrite_specs import parse_specs

    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        return None
    try:
        return tuple(str(s) for s in parse_specs(list(value)))
    except ValueError:
        return None


def parse_settings(
    *layers: Mapping[str, Any] | None,
) -> tuple[Settings, list[str]]:
    """Merge raw settings layers (later wins) into `Settings`; also return the problems.

    Each layer is the `torchMlirLens` object (camelCase keys). Unknown keys are ignored,
    bad values keep the earlier value and are listed in the problems.
    """
    values: dict[str, Any] = {}
    problems: list[str] = []
    for layer in layers:
        if not isinstance(layer, Mapping):
            continue
        for key, raw in layer.items():
            name = _KEYS.get(key)
            if name is None or raw is None:
                continue
            value = _coerce(name, raw)
            if value is None:
                problems.append(f"{SECTION}.{key}: ignoring invalid value {raw!r}")
                continue
            values[name] = value
    known = {f.name for f in fields(Settings)}
    return Settings(**{k: v for k, v in values.items() if k in known}), problems


def section_of(payload: Any) -> Mapping[str, Any] | None:
    """The `torchMlirLens` object inside a settings payload, however the client nests it.

    Accepts `{"torchMlirLens": {...}}`, `{"torchMlirLens.defaultTarget": ...}` (flat keys)
    and the bare section itself.
    """
    if not isinstance(payload, Mapping):
        return None
    if isinstance(payload.get(SECTION), Mapping):
        return payload[SECTION]
    prefix = SECTION + "."
    flat = {k[len(prefix):]: v for k, v in payload.items() if k.startswith(prefix)}
    if flat:
        return flat
    if any(k in _KEYS for k in payload):
        return payload
    return None


def project_layer(folder: str | None) -> tuple[dict[str, Any], str | None, list[str]]:
    """A workspace folder's `[tool.torch-mlir-lens]` as a settings layer, its file, its
    problems.

    The table of the folder's own pyproject.toml: never one above the folder (which its trust
    does not cover) nor another folder's; `targets` becomes `diagnosticTargets`. A malformed
    table is reported and ignored. Callers read it only for trusted folders.
    """
    if not folder:
        return {}, None, []
    from torch_mlir_lens.project.config import ConfigError, discover_config

    try:
        config = discover_config(folder, boundary=folder)
    except ConfigError as err:
        return {}, err.path, [f"{err.path}: {err.message}"]
    return config.editor_settings(), config.path, []


def effective_settings(
    init: Mapping[str, Any] | None, client: Mapping[str, Any] | None,
    workspace_root: str | None,
) -> tuple[Settings, list[str]]:
    """Editor settings (initializationOptions, then the client's), then the project's.

    The project's pyproject.toml wins for the keys it sets, so the editor checks what CI
    checks: clients send every setting, defaults included, so an editor value cannot be told
    from an untouched default. `exampleInputs` are merged, the project's entries winning.
    """
    settings, problems = parse_settings(init, client)
    project, _path, more = project_layer(workspace_root)
    problems += more
    if not project:
        return settings, problems
    if "exampleInputs" in project:
        project["exampleInputs"] = {**settings.example_inputs, **project["exampleInputs"]}
    settings, problems = parse_settings(init, client, project)
    return settings, problems + more
