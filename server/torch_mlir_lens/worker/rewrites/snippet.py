"""Export code the user owns: a standalone Python file that reproduces the module's IR with
plain torch-mlir, the rewrites it lowers with inlined as functions.

    export_code(spec)   → the Python text (ExportCodeSpec says what to reproduce)

The file imports only torch and torch-mlir (never this product): it loads the user's file by
path, builds the module as the product did (the `init=` expression, else no arguments), takes
the same example inputs (the written expression, else tensors of the same shapes and dtypes:
the IR depends on those only) and calls `torch_mlir.fx.export_and_import` with torch-mlir's
decomposition table plus the rewrites' entries, which is what the product runs.
tests/worker/test_export_code.py runs it in a fresh interpreter that cannot import the product
and compares its IR with the product's export.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from torch_mlir_lens.project.write_policy import EXPORT_CODE_MARK
from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.protocol.rewrite_results import SPECIALIZE
from torch_mlir_lens.worker.rewrites.specialize import (
    parameters_as_buffers,
    strip_runtime_checks,
)
from torch_mlir_lens.worker.rewrites.table import TORCH_DECOMP, TORCH_REFS, Rewrite

# Targets and torch-mlir's name for them (`fx.export_and_import(output_type=...)`).
# A specialised export's inputs are written out up to this size (their values decide it).
MAX_EXACT_ELEMENTS = 4096
OUTPUT_TYPES = {"raw": "raw", "torch": "torch", "linalg": "linalg-on-tensors", "tosa": "tosa",
                "stablehlo": "stablehlo"}


@dataclass
class ExportCodeSpec:
    """What the export code reproduces."""

    path: str  # the user's file
    module: str  # class or function name (`Outer.Inner` for a nested class)
    target: str
    rewrites: list[Rewrite] = field(default_factory=list)
    # Pins (pins.py): each tensor's dotted name → the Python value it is during the export.
    pins: dict[str, Any] = field(default_factory=dict)
    # The export specialised to the example (specialize.py): draft_export, its checks dropped.
    specialize: bool = False
    inputs_expr: str | None = None  # the written expression (comment, command line)
    args: tuple[Any, ...] = ()  # the inputs themselves (their shapes, when not written)
    kwargs: dict[str, Any] = field(default_factory=dict)
    init_expr: str | None = None
    inputs_source: str | None = None
    custom_ops: dict[str, Callable[..., Any]] = field(default_factory=dict)  # op → equivalent
    dynamic_shapes: Any = None  # torch.export's spec, {name: {dim: Dim}} or a tuple of those


def _tensor_expr(t: torch.Tensor) -> str:
    """A tensor of `t`'s shape and dtype (its values do not change the IR)."""
    shape = ", ".join(str(s) for s in t.shape)
    dtype = str(t.dtype)
    if t.dtype.is_floating_point:
        return f"torch.randn(({shape}{',' if t.dim() == 1 else ''}), dtype={dtype})"
    return f"torch.zeros(({shape}{',' if t.dim() == 1 else ''}), dtype={dtype})"


def _exact_expr(t: torch.Tensor) -> str:
    """`t` itself, its values written out (a specialised export depends on them); a tensor
    too large to write is one of its shape and dtype (the inputs' comment says so)."""
    if t.numel() > MAX_EXACT_ELEMENTS or t.is_meta:
        return _tensor_expr(t)
    return f"torch.tensor({t.detach().cpu().tolist()!r}, dtype={t.dtype})"


def _value_expr(value: Any, *, exact: bool = False) -> str:
    if isinstance(value, torch.Tensor):
        return _exact_expr(value) if exact else _tensor_expr(value)
    if isinstance(value, tuple | list):
        inner = ", ".join(_value_expr(v, exact=exact) for v in value)
        return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else (
            f"({inner})" if isinstance(value, tuple) else f"[{inner}]")
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_value_expr(v, exact=exact)}"
                               for k, v in value.items()) + "}"
    return repr(value)


def _dims_expr(spec: Any) -> str:
    """torch.export's `dynamic_shapes` as Python: Dims by name and bounds."""
    if spec is None:
        return "None"
    if isinstance(spec, dict):
        return "{" + ", ".join(f"{k!r}: {_dims_expr(v)}" for k, v in spec.items()) + "}"
    if isinstance(spec, tuple | list):
        inner = ", ".join(_dims_expr(v) for v in spec)
        return f"({inner},)" if len(spec) == 1 else f"({inner})"
    name = getattr(spec, "__name__", None)
    if name is None:
        return repr(spec)
    bounds = "".join(f", {k}={getattr(spec, k)}" for k in ("min", "max")
                     if isinstance(getattr(spec, k, None), int) and getattr(spec, k) < 2**62)
    return f"torch.export.Dim({name!r}{bounds})"


def _source(fn: Callable[..., Any]) -> str:
    return textwrap.dedent(inspect.getsource(fn)).rstrip() + "\n"


def _table_lines(rewrites: list[Rewrite], custom_ops: dict[str, Callable[..., Any]],
                 ) -> tuple[list[str], list[str]]:
    """(function definitions, lines filling DECOMPOSITIONS) for the rewrites."""
    defs: dict[str, str] = {}
    lines: list[str] = []
    for rewrite in rewrites:
        lines.append(f"# {rewrite.name}: {rewrite.method}")
        for op, fn in rewrite.entries:
            target = f"torch.ops.{op}"
            if rewrite.source == TORCH_DECOMP:
                lines.append(f"DECOMPOSITIONS.update(get_decompositions([{target}]))")
            elif rewrite.source == TORCH_REFS:
                lines.append(f"DECOMPOSITIONS[{target}] = torch._refs.{fn.__name__}")
            else:
                for helper in (*rewrite.helpers, fn):
                    defs.setdefault(helper.__name__, _source(helper))
                lines.append(f"DECOMPOSITIONS[{target}] = {fn.__name__}")
    for op, fn in custom_ops.items():
        namespace, name = op.split("::")
        defs.setdefault(fn.__name__, _source(fn))
        lines.append(f"# {op}: traced through an equivalent that reads no tensor values")
        lines.append(f"DECOMPOSITIONS[torch.ops.{namespace}.{name}.default] = {fn.__name__}")
    return list(defs.values()), lines


def _pin_lines(pinned: dict[str, Any]) -> list[str]:
    """The lines of `main` that make each pinned tensor its Python value (pins.py)."""
    if not pinned:
        return []
    return [
        "    # Pinned: each of these tensors is its value during the export, a plain",
        "    # attribute (the forward never writes it; the graph is specialised to it).",
        f"    for name, value in {pinned!r}.items():",
        '        *path, attr = name.split(".")',
        "        owner = model",
        "        for part in path:",
        "            owner = getattr(owner, part)",
        "        owner._buffers.pop(attr, None)",
        "        owner._parameters.pop(attr, None)",
        "        object.__setattr__(owner, attr, value)",
    ]


def _export_lines(spec: ExportCodeSpec, output_type: str) -> list[str]:
    """The lines of `main` that export and import the module: `fx.export_and_import` on the
    module, or, specialised (specialize.py), on the program draft_export made of it with the
    runtime checks of the example's decisions dropped."""
    dims = _dims_expr(spec.dynamic_shapes)
    if not spec.specialize:
        return [
            "    module = fx.export_and_import(",
            f"        model, *inputs, output_type={output_type!r},",
            f"        dynamic_shapes={dims},",
            '        decomposition_table=DECOMPOSITIONS, func_name="main", **kwargs)',
        ]
    return [
        "    # Specialised to the example: each line torch.export refuses for a tensor's value",
        "    # is decided as these inputs decide it. The IR holds only for inputs that decide",
        "    # those lines the same way.",
        "    parameters_as_buffers(model)  # draft_export decides on a buffer's real values",
        "    program = torch.export.draft_export(model, inputs, kwargs,",
        f"                                        dynamic_shapes={dims})",
        "    strip_runtime_checks(program)",
        "    module = fx.export_and_import(",
        f"        program, output_type={output_type!r},",
        '        decomposition_table=DECOMPOSITIONS, func_name="main")',
    ]


def export_code(spec: ExportCodeSpec) -> str:
    """The standalone Python file that reproduces the module's IR at `spec.target`."""
    output_type = OUTPUT_TYPES.get(spec.target)
    if output_type is None:
        raise LensError(ErrorKind.BAD_REQUEST,
                        f"export code reproduces {', '.join(OUTPUT_TYPES)}, not {spec.target!r}"
                        " (plain torch-mlir has no other output type)")
    defs, table = _table_lines(spec.rewrites, spec.custom_ops)
    if spec.specialize:
        defs += [_source(parameters_as_buffers), _source(strip_runtime_checks)]
    exact = spec.specialize  # a specialised IR depends on the example's values too
    if spec.inputs_expr:
        inputs = f"eval({spec.inputs_expr!r}, vars(user))  # as written ({spec.inputs_source})"
    elif exact:
        large = any(isinstance(t, torch.Tensor) and t.numel() > MAX_EXACT_ELEMENTS
                    for t in (*spec.args, *spec.kwargs.values()))
        inputs = (f"{_value_expr(tuple(spec.args), exact=True)}  # the inputs found "
                  f"({spec.inputs_source}): their values decide the specialised lines" + (
                      f"; those over {MAX_EXACT_ELEMENTS} elements are written by shape: put "
                      "the example's values there" if large else ""))
    else:
        inputs = (f"{_value_expr(tuple(spec.args))}  # shapes and dtypes of the inputs found "
                  f"({spec.inputs_source}): the IR depends on those only")
    kwargs = _value_expr(spec.kwargs, exact=exact) if spec.kwargs else "{}"
    init = f"eval({spec.init_expr!r}, vars(user))" if spec.init_expr else "()"
    names = ", ".join([*(f"pin.{n}" for n in spec.pins),
                       *([SPECIALIZE] if spec.specialize else []),
                       *(r.name for r in spec.rewrites)]) or "none"
    # Annotations unevaluated: the library's helpers name types the file does not define.
    imports = ["from __future__ import annotations", "", "import importlib.util", "import math",
               "import sys", "", "import torch"]
    if any(r.source == TORCH_REFS for r in spec.rewrites):
        imports.append("import torch._refs")
    if any(r.source == TORCH_DECOMP for r in spec.rewrites):
        imports.append("from torch._decomp import get_decompositions")
    imports += ["from torch_mlir import fx",
                "from torch_mlir.extras.fx_decomp_util import get_decomposition_table"]
    parts = [
        f'"""The {spec.target} IR of `{spec.module}` ({spec.path}), with plain torch-mlir.',
        "",
        f"{EXPORT_CODE_MARK} Rewrites: {names}.",
        "Run: python THIS_FILE.py [OUT.mlir]   (the IR goes to stdout without OUT.mlir)",
        '"""',
        "",
        *imports,
        "",
        f"USER_FILE = {spec.path!r}",
        f"MODULE = {spec.module!r}",
        "",
        "",
        *[d + "\n" for d in defs],
        "DECOMPOSITIONS = get_decomposition_table()",
        *table,
        "",
        "",
        "def load_user_file(path):",
        '    """The user\'s file as a module (its `if __name__ == "__main__":` block does not '
        'run)."""',
        '    spec = importlib.util.spec_from_file_location("user_model", path)',
        "    module = importlib.util.module_from_spec(spec)",
        "    sys.modules[spec.name] = module",
        "    spec.loader.exec_module(module)",
        "    return module",
        "",
        "",
        "def main(out=None):",
        "    user = load_user_file(USER_FILE)",
        "    model = user",
        '    for part in MODULE.split("."):',
        "        model = getattr(model, part)",
        "    if isinstance(model, type):",
        f"        init = {init}",
        "        model = model(*init) if isinstance(init, tuple) else model(init)",
        "        model.eval()",
        "    else:  # a function: export a module that calls it",
        "        fn = model",
        "",
        "        class Wrapped(torch.nn.Module):",
        "            def forward(self, *args, **kwargs):",
        "                return fn(*args, **kwargs)",
        "",
        "        model = Wrapped()",
        *_pin_lines(spec.pins),
        f"    inputs = {inputs}",
        "    if not isinstance(inputs, tuple):",
        "        inputs = (inputs,)",
        f"    kwargs = {kwargs}",
        *_export_lines(spec, output_type),
        "    text = str(module)",
        "    if out is None:",
        "        sys.stdout.write(text)",
        "    else:",
        '        with open(out, "w") as f:',
        "            f.write(text)",
        "",
        "",
        'if __name__ == "__main__":',
        "    main(sys.argv[1] if len(sys.argv) > 1 else None)",
        "",
    ]
    return "\n".join(parts)


__all__ = ["OUTPUT_TYPES", "ExportCodeSpec", "export_code"]
