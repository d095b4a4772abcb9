"""Precision suite: the lens' verdict per line against each line lowered alone (plain torch-mlir).

For every module of the corpus (tests/precision/corpus.py, examples/partial_lowering.py and the
diffusers models of diffusers_corpus.py) and every backend: every line the backend rejects when
lowered alone gets a diagnostic (recall), and no line that lowers alone gets one (precision);
the `# rejects:` comments of the corpus agree with that reference. Then op by op: every op a
diagnostic names fails when lowered alone (a library model puts all its ops on one user line,
where a line-level reference cannot tell a false `cat` from the real culprit). One export per
module; the table of scores is printed (-s).
"""

from __future__ import annotations

import os
import re
import runpy
from typing import Any

import pytest
import torch
from bench.culprit_precision import culprits_lowering_alone

from torch_mlir_lens.protocol.results import LowerResult
from torch_mlir_lens.worker.ir.locations import LocationResolver
from torch_mlir_lens.worker.lowering import ProgramLowerer, export_program

from .line_isolation import failing_lines

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus.py")
DIFFUSERS = os.path.join(HERE, "diffusers_corpus.py")
EXAMPLE = os.path.join(ROOT, "examples", "partial_lowering.py")
BACKENDS = ("linalg", "tosa", "stablehlo")
REJECTS = re.compile(r"#\s*rejects:\s*([\w ]+)$")

Line = tuple[str, int]


def _modules() -> list[tuple[str, str, tuple[Any, ...]]]:
    out = []
    for path in (CORPUS, DIFFUSERS):
        torch.manual_seed(0)
        out.extend((path, name, make()) for name, make in runpy.run_path(path)["INPUTS"].items())
    out.append((EXAMPLE, "PortingCandidate", (torch.rand(4, 8) * 0.5,)))
    return out


def declared(path: str) -> dict[Line, set[str]]:
    """{(file, line): backends} from the `# rejects:` comments."""
    out = {}
    with open(path) as f:
        for number, text in enumerate(f, start=1):
            m = REJECTS.search(text.rstrip())
            if m:
                out[(path, number)] = set(m.group(1).split())
    return out


class Verdicts:
    """One module: the lens' diagnosed lines and the reference's failing lines, per backend."""

    def __init__(self, path: str, name: str, args: tuple[Any, ...]) -> None:
        torch.manual_seed(0)
        ns = runpy.run_path(path)
        files = {path}
        program = export_program(ns[name]().eval(), args, {}, user_files=files)
        lowerer = ProgramLowerer(program, module_name=name, user_files=files)
        resolver = LocationResolver(files)
        torch_module = lowerer.torch_module()
        assert torch_module is not None
        self.reference = {t: failing_lines(torch_module, t, resolver) for t in BACKENDS}
        self.results: dict[str, LowerResult] = {t: lowerer.lower(t) for t in BACKENDS}
        # Op by op: does each op a diagnostic names fail alone? (the broad corpus' check)
        self.op_checks = {t: culprits_lowering_alone(torch_module, t, self.diagnosed_errors(t),
                                                     files)
                          for t in BACKENDS}
        span = [n for n, _ in _forward_lines(path, name)]
        self.forward = (min(span), max(span))
        self.path = path

    def diagnosed_errors(self, target: str) -> list[Any]:
        return [d for d in self.results[target].diagnostics if d.severity == "error"]

    def diagnosed(self, target: str) -> set[Line]:
        return {(d.file, d.line) for d in self.results[target].diagnostics
                if d.severity == "error" and d.file and d.line}


def _forward_lines(path: str, name: str) -> list[tuple[int, str]]:
    with open(path) as f:
        lines = f.read().splitlines()
    start = next(i for i, t in enumerate(lines) if t.startswith(f"class {name}("))
    body = []
    inside = False
    for i in range(start + 1, len(lines)):
        text = lines[i]
        if text.startswith("class ") or (text and not text.startswith(" ")):
            break
        if text.strip().startswith("def forward"):
            inside = True
            continue
        if inside and text.strip().startswith("def "):
            break
        if inside and text.strip():
            body.append((i + 1, text))
    return body


@pytest.fixture(scope="module")
def verdicts() -> dict[str, Verdicts]:
    return {name: Verdicts(path, name, args) for path, name, args in _modules()}


NAMES = [name for _path, name, _args in _modules()]


@pytest.mark.parametrize("target", BACKENDS)
@pytest.mark.parametrize("name", NAMES)
def test_every_culprit_at_its_line_and_nothing_else(verdicts: dict[str, Verdicts], name: str,
                                                   target: str) -> None:
    v = verdicts[name]
    reference = v.reference[target]
    known = {line for line, backends in declared(v.path).items()
             if target in backends and v.forward[0] <= line[1] <= v.forward[1]}
    assert reference == known, "the corpus comments disagree with torch-mlir"
    got = v.diagnosed(target)
    assert reference <= got, f"missed: {sorted(reference - got)}"
    assert got <= reference, f"diagnosed a line that lowers alone: {sorted(got - reference)}"
    # One diagnostic per line and backend.
    lines = [(d.file, d.line) for d in v.results[target].diagnostics if d.severity == "error"]
    assert len(lines) == len(set(lines))
    # The rest of the module is shown lowered: the partial IR, not the Torch dialect.
    if reference:
        assert v.results[target].partial, v.results[target].ir[:300]


def test_scores(verdicts: dict[str, Verdicts]) -> None:
    """Recall and precision per backend over the whole corpus, by line and by op (printed for
    the README)."""
    rows = []
    for target in BACKENDS:
        tp = fp = fn = 0
        ops = ops_alone = 0
        for v in verdicts.values():
            ref, got = v.reference[target], v.diagnosed(target)
            tp, fp, fn = tp + len(ref & got), fp + len(got - ref), fn + len(ref - got)
            ops += len(v.op_checks[target])
            ops_alone += sum(c.lowers_alone for c in v.op_checks[target])
        recall = tp / (tp + fn) if tp + fn else 1.0
        precision = tp / (tp + fp) if tp + fp else 1.0
        op_precision = (ops - ops_alone) / ops if ops else 1.0
        rows.append((target, tp + fn, recall, precision, ops))
        print(f"{target}: {tp + fn} culprit lines, recall {recall:.2f}, precision "
              f"{precision:.2f}; {ops} culprit ops, {op_precision:.2f} fail alone")
        assert recall == 1.0 and precision == 1.0 and op_precision == 1.0
    assert sum(n for _t, n, _r, _p, _o in rows) >= 20  # a corpus worth measuring
    assert sum(o for *_rest, o in rows) >= 30


LIBRARY_MODELS = [name for path, name, _args in _modules() if path == DIFFUSERS]


def _interpolate_line() -> int:
    """The line of diffusers' upsampler that calls F.interpolate (read from the installed
    package, so that another diffusers version moves the expectation with it)."""
    import diffusers.models.upsampling as upsampling

    with open(upsampling.__file__) as f:
        return next(n for n, text in enumerate(f, start=1)
                    if 'F.interpolate(hidden_states, scale_factor=2.0, mode="nearest")' in text)


@pytest.mark.parametrize("target", ["tosa", "stablehlo"])
@pytest.mark.parametrize("name", LIBRARY_MODELS)
def test_a_library_model_gets_its_one_culprit(verdicts: dict[str, Verdicts], name: str,
                                              target: str) -> None:
    """The UNet and the VAE decoder: one culprit, F.interpolate at its line in diffusers, no
    `cat` (the UNet's timestep embedding and skip connections lower); the rest lowered."""
    v = verdicts[name]
    [diag] = v.diagnosed_errors(target)
    assert diag.cause == "`F.interpolate` (decomposed to `aten.__interpolate.size_list_scale_list`)"
    assert diag.ops == ["torch.aten.__interpolate.size_list_scale_list"]
    upsampler = [r for r in diag.related
                 if r.file.endswith(os.path.join("diffusers", "models", "upsampling.py"))]
    assert upsampler and upsampler[0].line == _interpolate_line()
    assert v.results[target].partial
    assert v.results[target].ir.count(" // not lowered to") >= 1
    assert "torch.aten.cat" not in v.results[target].ir
