"""Find the example inputs (and constructor arguments) of a module, and instantiate it.

Precedence, first match wins (the README quotes this list):

1. **Given from outside for this run**: `--inputs EXPR` / `--inputs-file PATH` (and `--init
   EXPR`) on the CLI, `inputs`/`inputs_file`/`init` in a worker job. Source "cli" or
   "inputs-file". These beat the file's own comment on purpose: a one-off run with other
   shapes should not require editing the file, and whoever passes them explicitly means them.
2. **The comment** right above the class/def: `# torch-mlir-lens: inputs=...` (and `init=...`,
   `dynamic=...`). Source "comment".
3. **Conventions** already in use, checked in this order: an `example_inputs()` method, an
   `example_input_array` attribute (class attribute, or set in `__init__`: the module is then
   instantiated), torch-mlir's `@annotate_args([None, ([2, 16], torch.float32, True), ...])` on
   `forward` (read from the source when the decorator is not importable; a -1 dim becomes 4),
   and a module-level `example_inputs()` function. The module-level function may return a dict
   keyed by class/function name (`{"Pooler": (x,)}`) to serve several modules; a result that is
   not keyed that way serves only the top-level modules of the file (those no other module of
   the file uses), so blocks inside them still get derived inputs. Source "convention:<which>"
   (`example_inputs`, `example_input_array`, `annotate_args`, `module_example_inputs`).
4. **Settings**: `torchMlirLens.exampleInputs` `{"rel/path.py::Name" or "Name": "EXPR" or
   "@path/to/inputs.pt"}` (the path-qualified key wins; "@" paths are relative to the
   workspace). Source "settings".
5. **Derived**: a class used inside another module of the file whose inputs are known (by 1–4 or
   6) gets the arguments it actually received, recorded with forward pre-hooks during one eager
   forward pass of that parent (the first call wins); its constructor arguments are recorded the
   same way. Nearest parents are tried first, then their parents, then module classes of sibling
   files (same folder) that import this class and have inputs of their own (`model.py` using
   blocks from `layers.py`). Recordings are cached per (file content, parent). Source
   "derived:<Parent>" (or "derived:<file.py>::<Parent>" for a sibling file's).
6. **Inferred**: `forward` takes exactly one required argument and the first layer it calls
   (else the first registered one) is a Linear / Conv / Embedding / RNN / norm layer: a small
   tensor of the fitting shape. Source "inferred".

None applies → `LensError("inputs-missing")` naming the module, why, and the comment to add.

Expressions are evaluated in the user's module namespace with `torch` available. An inputs
value that is a tuple (or list) gives positional arguments, a dict keyword arguments, anything
else one positional argument. `init` likewise. `dynamic` strings such as "batch" become
`torch.export.Dim("batch")` (the same name gives the same Dim); the comment's `dynamic=` applies
whatever the inputs' source (they name `forward`'s parameters, not particular tensors). Init:
`--init` beats the comment's `init=`, which beats recorded constructor arguments (derived).

One module per step:

- `resolve`: the precedence above (`resolve_inputs`), `instantiate`, the inputs-missing error
- `values`: expressions, saved inputs files, settings values, dynamic dims
- `conventions`: level 3
- `derived`: level 5, which parents to try and the recordings cache
- `recording`: one forward pass of a parent with pre-hooks, with or without weights
- `inferred`: level 6
- `construction`: look up, build and call user code, failures explained
- `result`: `ResolvedInputs`
"""

from torch_mlir_lens.worker.inputs.construction import lookup
from torch_mlir_lens.worker.inputs.recording import recording_without_weights
from torch_mlir_lens.worker.inputs.resolve import instantiate, resolve_inputs
from torch_mlir_lens.worker.inputs.result import ResolvedInputs
from torch_mlir_lens.worker.inputs.values import as_call_args

__all__ = [
    "ResolvedInputs",
    "as_call_args",
    "instantiate",
    "lookup",
    "recording_without_weights",
    "resolve_inputs",
]
