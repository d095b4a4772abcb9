"""Find the `nn.Module` classes and lowerable functions of a Python file, statically.

No torch import and no execution: only the AST (and the `# torch-mlir-lens:` comments), so the
language server can list modules, draw code lenses and find "the module under the cursor" on every
keystroke. A file with syntax errors still yields what can be found, and nothing here raises.

What counts as a module class: a class deriving from `torch.nn.Module` (spelled through any import
alias: `import torch.nn as nn`, `from torch import nn`, `from torch.nn import Module`,
`torch.nn.Module`, or a top-level `Base = nn.Module`), from another `torch.nn` layer class
(`nn.Sequential`, ...), from a Lightning `LightningModule`, from another module class of the same
file (transitively), or from a module class imported from a sibling file (`from layers import
Block` / `from .layers import Block`, looked up next to `path`). Classes nested in classes are
found too, named by their dotted qualified name (`Outer.Inner`); classes defined inside functions
are not (nothing can reach them from outside).

Top-level functions are listed (kind "function") only when they take parameters and have an
inputs comment or a settings entry: nothing else says which functions are meant to be lowered.

`ModuleInfo.inputs` tells where the worker will find example inputs, in the precedence order of
`worker/inputs/` (minus the CLI, which discovery does not know): "comment", "convention",
"settings", "derived", "inferred", else "missing". "derived" means a module class with inputs
uses this one: in this file (`parent_candidates`, transitively) or in a sibling file of the same
folder that imports it (`sibling_parents`, "model.py::Net").

Speed: the file is parsed per top-level statement through a cache keyed by (line, text), and
per-class facts are cached with their nodes, so an edit re-analyses only the class it touches;
an unchanged text is answered from a small result cache. Results are shared with that cache:
treat the returned objects as read-only.

One module per concern:

- `model`: `ModuleInfo`, `FirstLayer`, `module_at_line`
- `finder`: `find_modules`, the pipeline from text to infos
- `parsing`: tolerant, chunk-cached parsing
- `names`: dotted names, import aliases, torch module qualnames
- `classes`: which classes are module classes (following sibling files)
- `syntax`: small AST readers (columns, parameters, literal values)
- `analyzer`: one file's shared analysis state
- `statuses`: the inputs status of each module (and the settings key rule)
- `siblings`: derived inputs from module classes of sibling files
- `shapes`: the first layer and an input that fits it
- `templates`: the quick fix's inputs comment
- `caches`: node, text and result caches and the file stamps that void them
"""

from torch_mlir_lens.discovery.finder import find_modules
from torch_mlir_lens.discovery.model import FirstLayer, ModuleInfo, module_at_line
from torch_mlir_lens.discovery.names import (
    dotted_name,
    import_aliases,
    is_torch_module_qualname,
    qualify,
)
from torch_mlir_lens.discovery.parsing import parse_tolerant, parses_cleanly
from torch_mlir_lens.discovery.shapes import INFERABLE_LAYERS, layer_inputs_expr
from torch_mlir_lens.discovery.statuses import settings_key_for
from torch_mlir_lens.discovery.templates import input_template

__all__ = [
    "INFERABLE_LAYERS",
    "FirstLayer",
    "ModuleInfo",
    "dotted_name",
    "find_modules",
    "import_aliases",
    "input_template",
    "is_torch_module_qualname",
    "layer_inputs_expr",
    "module_at_line",
    "parse_tolerant",
    "parses_cleanly",
    "qualify",
    "settings_key_for",
]
