"""A way past torch.export's data-dependent refusals: the export specialised to the example.

`if mask.any():` on an input-derived tensor, `n = int(index.max()) + 1` used as a size, an
`assert (t[1:] > t[:-1]).all()`: torch.export traces with fake tensors and refuses each line
that needs a tensor's value. `torch.export.draft_export` traces on with the real example
values beside the fake ones and decides each such line as the example does. Its graph keeps
the decisions as runtime checks (`aten._assert_scalar` on `.item()` chains, `sym_ite`), which
torch-mlir's FX importer cannot import; they are dropped here, with what only fed them. The
graph that is left computes what the example's decisions computed: it holds only for inputs
that decide each refused line the same way, as the offer says. Written as a rewrite of the
module's comment,

    # torch-mlir-lens: rewrites=export.specialize

it is applied at export, before the program exists, on every backend; `--rewrites auto`
applies it once proven (worker/rewrite_jobs/specialize_proof.py: the forward writes no state,
the module exports and lowers, and Verify matches eager on the example and a second input).

    is_specialize(name)                               → whether a rewrite name is this one
    specialised_export(module, args, kwargs, ...)     → the draft ExportedProgram, checks dropped
    strip_runtime_checks(program)                     → drop them from a program (in place)
    parameters_as_buffers(module)                     → so that draft_export reads their values
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterable, Iterator
from typing import Any

import torch

from torch_mlir_lens.protocol.rewrite_results import SPECIALIZE
from torch_mlir_lens.worker.loading.kept_state import values_kept

NAME = SPECIALIZE
# draft_export logs each decision and a banner at WARNING: the worker's streams stay clean.
_NOISY_LOGGERS = ("torch.export._draft_export", "torch.fx.experimental.symbolic_shapes")


def is_specialize(name: str) -> bool:
    """Whether a rewrite name is the specialised export (`export.specialize`)."""
    return name == NAME


def any_specialize(names: Iterable[str]) -> bool:
    """Whether rewrite names ask for the specialised export."""
    return any(is_specialize(n) for n in names)


def parameters_as_buffers(module: Any) -> None:
    """Each parameter of `module` made a buffer holding the same tensor (in place; a tied
    one stays one tensor). draft_export decides a line on the real values of inputs and
    buffers, not of parameters (torch 2.13: `if self.fc(x).sum() > 0:` went either way,
    whatever the example said); frozen into the IR, both are the same constants. Needs only
    torch: export code (snippet.py) copies it."""
    made: dict[int, Any] = {}
    for sub in module.modules():
        for name, param in list(sub._parameters.items()):
            if param is None:
                continue
            tensor = made.setdefault(id(param), param.detach())
            del sub._parameters[name]
            sub._buffers[name] = tensor


def strip_runtime_checks(program: Any) -> int:
    """Drop the runtime checks of the example's decisions from `program` (an ExportedProgram,
    in place): `aten._assert_scalar` and `sym_constrain_range*` nodes, then every node only
    they used (the `.item()` and `sym_ite` chains). Returns how many checks went. Needs only
    torch: export code (snippet.py) copies it."""
    graph = program.graph_module.graph
    checks = [node for node in graph.nodes if node.op == "call_function" and (
        node.target is torch.ops.aten._assert_scalar.default
        or "sym_constrain_range" in str(node.target))]
    for node in checks:
        graph.erase_node(node)
    # Pure nodes without users go; placeholders and outputs stay, so the signature holds.
    graph.eliminate_dead_code()
    graph.lint()
    program.graph_module.recompile()
    return len(checks)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """No graph dumps, banners or per-decision warnings on the worker's streams."""
    loggers = [logging.getLogger(name) for name in _NOISY_LOGGERS]
    levels = [logger.level for logger in loggers]
    noise = io.StringIO()
    try:
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        with contextlib.redirect_stdout(noise), contextlib.redirect_stderr(noise):
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def specialised_export(module: torch.nn.Module, args: tuple[Any, ...],
                       kwargs: dict[str, Any], *, strict: bool = False,
                       dynamic_shapes: Any = None) -> Any:
    """`module` exported by draft_export, each data-dependent line decided as the example
    decides it, the runtime checks of those decisions dropped. The program keeps draft_export's
    report (`_report`: the lines decided, and how). Raises what draft_export raises."""
    # draft_export runs the forward on real values, and a forward may write its buffers.
    with _quiet(), values_kept(module):
        parameters_as_buffers(module)  # put back as parameters by values_kept
        program = torch.export.draft_export(module, tuple(args), dict(kwargs),
                                            dynamic_shapes=dynamic_shapes, strict=strict)
    strip_runtime_checks(program)
    return program


__all__ = ["NAME", "any_specialize", "is_specialize", "parameters_as_buffers",
           "specialised_export", "strip_runtime_checks"]
