"""What `torchMlirLens.explainInputs` says about a module's example inputs.

It reads the module's inputs status (`ModuleInfo.inputs`, discovery/statuses.py) of the text
the server holds now: a module that has inputs (its comment, a convention, the settings, a
parent, its first layer) is told where they come from; only one without them is told it needs
some, with the comment to paste. (A lens is drawn from an older text: "Set example inputs"
can still be clicked after the comment was added, and must not say the comment is missing.)
"""

from __future__ import annotations

from dataclasses import dataclass

from torch_mlir_lens import discovery

DEFAULT_TEMPLATE = "# torch-mlir-lens: inputs=(torch.randn(2, 16),)"
_CONVENTIONS = {
    "example_inputs": "its `example_inputs()` method",
    "example_input_array": "its `example_input_array` attribute",
    "annotate_args": "the `@annotate_args` of its `forward`",
    "module_example_inputs": "the file's `example_inputs()` function",
}
_OTHER_WAYS = ("an `example_input_array` attribute / `example_inputs()` method, or map the "
               "class in the `torchMlirLens.exampleInputs` setting")


@dataclass
class Explanation:
    """The message shown, the comment to paste (or the one in effect), the inputs status."""

    message: str
    template: str
    inputs: str


def explain(info: discovery.ModuleInfo | None, module: str, text: str) -> Explanation:
    """Where `module`'s example inputs come from, or how to give it some."""
    if info is None:
        return Explanation(
            f"This file has no module {module} now (renamed or removed?): nothing to give "
            f"inputs to.", DEFAULT_TEMPLATE, "missing")
    template = discovery.input_template(info, text).strip()
    ann = info.annotation
    if info.inputs == "comment" and ann is not None and ann.errors:
        first = ann.errors[0]
        return Explanation(
            f"The inputs comment of {module} (line {ann.line}) cannot be read: line "
            f"{first.line}: {first.message}. Fix it, or replace it with: {template}",
            template, info.inputs)
    if info.inputs == "comment" and ann is not None and ann.inputs:
        in_effect = f"# torch-mlir-lens: inputs={ann.inputs}"
        return Explanation(
            f"{module} has example inputs: the comment at line {ann.line}, `{in_effect}`.",
            in_effect, info.inputs)
    if info.inputs != "missing":
        return Explanation(f"{module} has example inputs: {_source(info)}. To give others, "
                           f"put this comment on the line above it: {template}",
                           template, info.inputs)
    return Explanation(
        f"Torch-MLIR Lens needs example inputs to lower {module}. Put this comment on the line "
        f"above the class (the quick fix on the class name does it): {template} — or give "
        f"{_OTHER_WAYS}.", template, info.inputs)


def _source(info: discovery.ModuleInfo) -> str:
    """Where the inputs of a module with a status other than comment or missing come from."""
    if info.inputs == "convention":
        return _CONVENTIONS.get(info.convention or "", f"`{info.convention}`")
    if info.inputs == "settings":
        return f"the `torchMlirLens.exampleInputs` setting `{info.settings_key}`"
    if info.inputs == "derived":
        users = [*info.parent_candidates, *info.sibling_parents]
        return "recorded while lowering the module that uses it" + (
            f" ({', '.join(users)})" if users else "")
    if info.inputs == "inferred":
        layer = info.first_layer.kind if info.first_layer else "first layer"
        return f"inferred from its first layer (`{layer}`)"
    return info.inputs
