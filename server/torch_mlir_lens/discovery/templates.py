"""The quick fix's text: the `# torch-mlir-lens: inputs=...` comment for a module without inputs.

Shaped after the statically found first layer when there is one (`shapes.layer_inputs_expr`),
else placeholder tensors; `init=(...)` placeholders when the constructor needs arguments.
"""

from __future__ import annotations

from torch_mlir_lens.discovery.model import ModuleInfo
from torch_mlir_lens.discovery.shapes import DEFAULT_DIM, layer_inputs_expr


def input_template(info: ModuleInfo, text: str) -> str:
    """The `# torch-mlir-lens: inputs=(...)` comment to insert above a module without inputs.

    Indented like the class/def line, without a trailing newline; one line. When the constructor
    has required parameters and no `init=` comment exists, `; init=(...)` with placeholder values
    follows on the same line. Tensors are placeholders shaped after the first layer when known.
    """
    lines = text.splitlines()
    start = (info.decorator_line or info.line) - 1
    indent = ""
    if 0 <= start < len(lines):
        src = lines[start]
        indent = src[: len(src) - len(src.lstrip())]
    n_inputs = max(info.forward_required, 1)
    first = None
    if info.first_layer is not None:
        first = layer_inputs_expr(info.first_layer.kind, info.first_layer.params)
    exprs = [first or f"torch.randn(2, {DEFAULT_DIM})"] + [
        f"torch.randn(2, {DEFAULT_DIM})" for _ in range(n_inputs - 1)
    ]
    comment = f"{indent}# torch-mlir-lens: inputs={_tuple_source(exprs)}"
    if info.init_required and not (info.annotation and info.annotation.init):
        comment += f"; init={_tuple_source([str(DEFAULT_DIM)] * len(info.init_required))}"
    return comment


def _tuple_source(items: list[str]) -> str:
    """`(a,)` for one item, `(a, b)` for more."""
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
