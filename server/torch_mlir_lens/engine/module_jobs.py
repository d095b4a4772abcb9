"""The one builder of a module job: every front end (the editor, the command line, `check`)
asks for a module's lowering the same way.

What decides a module job besides its file, module and text is resolved by each front end its
own way (the editor's settings with its folder's pyproject.toml, the command line's options,
`check`'s settings) into the same two objects: `JobSettings` (what every module of a run is
lowered with) and, when the user named them, `GivenInputs` (the module's example inputs and
constructor arguments, which win over every other way of finding them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from torch_mlir_lens.protocol.jobs import ModuleJob


@dataclass(frozen=True)
class JobSettings:
    """What every module of a run is lowered with."""

    example_inputs: Mapping[str, str] = field(default_factory=dict)  # class → inputs expr
    strict_export: bool = False
    rewrites: tuple[str, ...] = ()  # `erfinv@tosa`, `auto`: the rewrites it lowers through
    inline_blocks: bool = False  # repeated blocks inline, not one function per block


@dataclass(frozen=True)
class GivenInputs:
    """Example inputs the user named for one module (the command line's `--inputs`,
    `--inputs-file`, `--init`)."""

    inputs: str | None = None  # a Python expression giving the tuple of inputs
    inputs_file: str | None = None  # an absolute path: a torch.save'd tuple or dict
    init: str | None = None  # the constructor's arguments (a tuple)

    def __bool__(self) -> bool:
        return bool(self.inputs or self.inputs_file or self.init)


def module_job(path: str, module: str, *, text: str | None, settings: JobSettings,
               workspace: str | None, given: GivenInputs | None = None, via: str = "fx",
               dims: Mapping[str, int] | None = None) -> ModuleJob:
    """The job lowering `module` of the file at `path` (its `text` when given: an unsaved
    buffer, a notebook's cells up to the module's; None: read from disk by the engine).
    `workspace`: the folder its imports may come from; `via`: "fx" (torch.export) or "onnx";
    `dims`: an ONNX model's dynamic dims."""
    given = given or GivenInputs()
    return ModuleJob(
        path=path, module=module, text=text, inputs=given.inputs,
        inputs_file=given.inputs_file, init=given.init,
        settings_inputs=dict(settings.example_inputs), workspace=workspace,
        strict=settings.strict_export, rewrites=list(settings.rewrites),
        inline_blocks=settings.inline_blocks, via=via, dims=dict(dims or {}))
