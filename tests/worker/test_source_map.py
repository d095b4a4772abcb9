"""Every op maps back to the user's source line, on every target (real torch-mlir, no mocks)."""

from __future__ import annotations

import ast
import os
import runpy
from typing import Any

import pytest
import torch

from torch_mlir_lens.protocol.results import LowerResult
from torch_mlir_lens.worker.ir import ir_text
from torch_mlir_lens.worker.ir.locations import LocationResolver, UserFiles
from torch_mlir_lens.worker.lowering import LowerOptions, lower_module

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models", "small_models.py")
MLIR_TARGETS = ["raw", "torch", "linalg", "tosa", "stablehlo"]
INPUTS: dict[str, tuple[Any, ...]] = {
    "MLP": (torch.randn(2, 16),),
    "CNN": (torch.randn(1, 3, 16, 16),),
    "AttentionBlock": (torch.randn(2, 4, 16),),
    "HelperUser": (torch.randn(2, 16),),
}
USES = {"AttentionBlock": {"SelfAttention"}, "HelperUser": {"_gated"}}


@pytest.fixture(scope="module")
def ns() -> dict[str, Any]:
    return runpy.run_path(MODELS)


@pytest.fixture(scope="module")
def results(ns: dict[str, Any]) -> dict[tuple[str, str], LowerResult]:
    torch.manual_seed(0)
    out = {}
    for name, args in INPUTS.items():
        for res in lower_module(ns[name](), args, {}, module_name=name, user_files={MODELS},
                                targets=["fx", *MLIR_TARGETS]):
            out[(name, res.target)] = res
    return out


def _computing_lines(class_name: str) -> set[int]:
    """Lines marked `# computes` in the forward of `class_name` and of classes it uses."""
    with open(MODELS) as f:
        source = f.read()
    lines = source.splitlines()
    tree = ast.parse(source)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)}
    wanted = {class_name} | USES.get(class_name, set())
    out = set()
    for name in wanted:
        node = classes[name]
        end = node.end_lineno or node.lineno
        for i in range(node.lineno, end + 1):
            if lines[i - 1].rstrip().endswith("# computes"):
                out.add(i)
    return out


@pytest.mark.parametrize("target", ["fx", *MLIR_TARGETS])
@pytest.mark.parametrize("model", list(INPUTS))
def test_every_computing_line_is_mapped(results: dict, model: str, target: str) -> None:
    res = results[(model, target)]
    assert res.ok, res.diagnostics
    mapped = {m.line for m in res.map if m.file == MODELS}
    missing = _computing_lines(model) - mapped
    assert not missing, f"{model}@{target}: lines {sorted(missing)} have no IR"


@pytest.mark.parametrize("target", MLIR_TARGETS)
@pytest.mark.parametrize("model", list(INPUTS))
def test_map_points_at_real_printed_lines(results: dict, model: str, target: str) -> None:
    res = results[(model, target)]
    ir_lines = res.ir.splitlines()
    assert "loc(" not in res.ir and "#loc" not in res.ir
    for m in res.map:
        assert 1 <= m.ir_line <= len(ir_lines)
        text = ir_lines[m.ir_line - 1].strip()
        assert text and not text.startswith(("^bb", "module", "func.func"))
    stats = res.stats
    assert stats["ops"] == stats["mapped_ops"] + stats["unmapped_ops"]
    assert stats["mapped_ops"] > 0.8 * stats["ops"]
    assert stats["ir_bytes"] == len(res.ir.encode())
    assert set(res.timings) >= {"import", "lower", "print", "total"}


def _line_of(text: str) -> int:
    with open(MODELS) as f:
        for i, line in enumerate(f, start=1):
            if text in line:
                return i
    raise AssertionError(text)


@pytest.mark.parametrize(("target", "op", "source"), [
    ("linalg", "linalg.matmul", "h = self.fc1(x)"),
    ("tosa", "tosa.matmul", "h = self.fc1(x)"),
    ("stablehlo", "stablehlo.dot_general", "h = self.fc1(x)"),
    ("torch", "torch.aten.mm", "h = self.fc1(x)"),
])
def test_specific_ops_map_to_their_lines(results: dict, target: str, op: str,
                                         source: str) -> None:
    """The first matmul of the MLP comes from fc1's line, the last one from fc2's."""
    res = results[("MLP", target)]
    lines = res.ir.splitlines()
    op_lines = [i for i, t in enumerate(lines, start=1) if f" {op} " in t or f" {op}(" in t]
    assert op_lines, f"no {op} in {target} IR"
    by_line: dict[int, set[int]] = {}
    for m in res.map:
        if m.depth == 0:
            by_line.setdefault(m.ir_line, set()).add(m.line)
    assert _line_of(source) in by_line[op_lines[0]]
    assert _line_of("h = self.fc2(h)") in by_line[op_lines[-1]]


def test_conv_maps_to_conv_line_on_each_backend(results: dict) -> None:
    conv_line = _line_of("y = self.conv(x)")
    for target, op in [("linalg", "linalg.conv_2d_nchw_fchw"), ("tosa", "tosa.conv2d"),
                       ("stablehlo", "stablehlo.convolution")]:
        res = results[("CNN", target)]
        hits = [i for i, t in enumerate(res.ir.splitlines(), start=1) if op in t]
        assert hits, f"{op} missing in {target}"
        assert all(any(m.ir_line == h and m.line == conv_line for m in res.map) for h in hits)


def test_submodule_chain_keeps_the_calling_line(results: dict) -> None:
    """An op inside SelfAttention maps to its own line (depth 0) and to the caller (depth 1)."""
    res = results[("AttentionBlock", "linalg")]
    softmax_line = _line_of("att = att.softmax(dim=-1)")
    caller = _line_of("x = x + self.attn(self.norm1(x))")
    ir_lines = {m.ir_line for m in res.map if m.line == softmax_line and m.depth == 0}
    assert ir_lines
    for ir_line in ir_lines:
        assert any(m.ir_line == ir_line and m.line == caller and m.depth == 1 for m in res.map)


def test_helper_function_frames_are_kept(results: dict) -> None:
    """Non-strict export drops helper frames unless registered: ours are kept."""
    res = results[("HelperUser", "linalg")]
    inner, caller = _line_of("return x * torch.sigmoid(x)"), _line_of("return _gated(self.fc(x))")
    ir_lines = {m.ir_line for m in res.map if m.line == inner and m.depth == 0}
    assert ir_lines
    assert all(any(m.ir_line == i and m.line == caller and m.depth == 1 for m in res.map)
               for i in ir_lines)


def test_region_ops_map_header_and_closing_line(results: dict) -> None:
    res = results[("MLP", "linalg")]
    lines = res.ir.splitlines()
    mapped = {m.ir_line for m in res.map}
    headers = [i for i, t in enumerate(lines, start=1) if "linalg.generic" in t]
    closers = [i for i, t in enumerate(lines, start=1) if t.strip().startswith("} ->")]
    assert headers and closers
    assert set(headers) <= mapped and set(closers) <= mapped


def test_debug_info_keeps_locations_and_a_right_map(ns: dict[str, Any]) -> None:
    [res] = lower_module(ns["MLP"](), INPUTS["MLP"], {}, module_name="MLP",
                         user_files={MODELS}, targets=["linalg"],
                         options=LowerOptions(debug_info=True))
    assert "loc(" in res.ir
    lines = res.ir.splitlines()
    fc1 = _line_of("h = self.fc1(x)")
    matmul = next(i for i, t in enumerate(lines, start=1) if "linalg.matmul" in t)
    assert any(m.ir_line == matmul and m.line == fc1 for m in res.map)


def test_weights_elided_by_default_and_kept_on_request(ns: dict[str, Any]) -> None:
    model = ns["MLP"]()
    elided, kept = (
        lower_module(model, INPUTS["MLP"], {}, module_name="MLP", user_files={MODELS},
                     targets=["linalg"], options=LowerOptions(keep_weights=k))[0]
        for k in (False, True)
    )
    assert "dialect_resources" not in elided.ir
    assert "dialect_resources" in kept.ir and "0x" in kept.ir
    assert len(kept.ir) > len(elided.ir) + 4 * 16 * 32


def test_plain_function_is_wrapped(ns: dict[str, Any]) -> None:
    args = (torch.randn(3), torch.randn(3))
    [res] = lower_module(ns["scaled_tanh"], args, {}, module_name="scaled_tanh",
                         user_files={MODELS}, targets=["linalg"])
    assert res.ok
    assert _line_of("return torch.tanh(x) * 2.0 + y") in {m.line for m in res.map}


# -- location parsing (pure) -----------------------------------------------------------------


def test_location_parser_keeps_user_frames_by_full_path(tmp_path: Any) -> None:
    user = str(tmp_path / "conv.py")
    other = "/site-packages/torch/nn/modules/conv.py"
    text = f'loc(callsite("{other}":549:0 at callsite("{user}":10:0 at "{user}":22:0)))'
    resolver = LocationResolver({user})
    assert resolver.user_frames(text) == [(user, 10), (user, 22)]
    assert resolver.user_frames(f'loc("{other}":1:0)') == []


def test_location_parser_aliases_names_and_fused() -> None:
    aliases = {"#loc1": 'loc("/u/a.py":3:0)', "#loc2": "loc(callsite(#loc1 at #loc3))",
               "#loc3": 'loc("/u/a.py":9:0)'}
    resolver = LocationResolver({"/u/a.py"}, aliases)
    assert resolver.user_frames("loc(#loc2)") == [("/u/a.py", 3), ("/u/a.py", 9)]
    assert resolver.user_frames('loc("relu"("/u/a.py":4:2))') == [("/u/a.py", 4)]
    fused = 'loc(fused<"x">["/u/a.py":5:0, "/u/a.py":6:0])'
    assert resolver.user_chains(fused) == [(("/u/a.py", 5),), (("/u/a.py", 6),)]
    assert resolver.user_frames("loc(unknown)") == []


def test_render_strips_inline_and_trailing_locations() -> None:
    asm = "\n".join([
        '#loc1 = loc("/u/a.py":3:0)',
        "module {",
        '  func.func @main(%arg0: i32 loc("/u/a.py":1:0)) -> i32 {',
        '    %0 = arith.addi %arg0, %arg0 : i32 loc(#loc1)',
        "    return %0 : i32 loc(#loc1)",
        "  } loc(#loc1)",
        "} loc(#loc)",
        "#loc = loc(unknown)",
    ])
    r = ir_text.render(asm, UserFiles({"/u/a.py"}))
    assert "loc" not in r.text
    lines = r.text.splitlines()
    assert lines[2].strip() == "%0 = arith.addi %arg0, %arg0 : i32"
    assert {(m.ir_line, m.line) for m in r.map} == {(3, 3), (4, 3)}
    assert r.stats["ops"] == 2 and r.stats["unmapped_ops"] == 0


# -- render() on generated IR (property) -----------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

USER = "/u/model.py"
# alias → frames it stands for (user frames only, innermost first)
ALIASES = {
    "#loc1": ('loc("/u/model.py":11:0)', [11]),
    "#loc2": ('loc(callsite("/site/torch/nn/linear.py":5:0 at "/u/model.py":12:0))', [12]),
    "#loc3": ('loc(callsite("/u/model.py":30:0 at "/u/model.py":13:0))', [30, 13]),
    "#loc4": ('loc("/site/torch/functional.py":7:0)', []),
    "#loc": ("loc(unknown)", []),
}
ops_tree = st.recursive(
    st.tuples(st.just("op"), st.sampled_from(sorted(ALIASES))),
    lambda kids: st.tuples(st.just("region"), st.sampled_from(["#loc1", "#loc2", "#loc3"]),
                           st.lists(kids, min_size=1, max_size=4)),
    max_leaves=12,
)


def _emit(node: Any, indent: int, lines: list[str], expect: dict[int, list[int]],
          inherited: list[int], counter: list[int]) -> None:
    pad = "  " * indent
    counter[0] += 1
    n = counter[0]
    if node[0] == "op":
        lines.append(f"{pad}%{n} = test.op {n} : i32 loc({node[1]})")
        own = ALIASES[node[1]][1]
        expect[len(lines)] = own or inherited
        return
    _, alias, kids = node
    own = ALIASES[alias][1]
    lines.append(f'{pad}%{n} = test.region "s loc(x)" {{')
    header = len(lines)
    lines.append(f"{pad}^bb0(%a{n}: i32 loc({alias})):")
    for kid in kids:
        _emit(kid, indent + 1, lines, expect, own, counter)
    lines.append(f"{pad}}} : i32 loc({alias})")
    expect[header] = expect[len(lines)] = own


@settings(max_examples=60, deadline=None)
@given(st.lists(ops_tree, min_size=1, max_size=5))
def test_render_maps_generated_ir(trees: list[Any]) -> None:
    body: list[str] = []
    expect: dict[int, list[int]] = {}
    counter = [0]
    for tree in trees:
        _emit(tree, 2, body, expect, [], counter)
    head = [f"{name} = {text}" for name, (text, _) in ALIASES.items() if name != "#loc"]
    asm_lines = [*head, "module {", "  func.func @main() {", *body,
                 "  } loc(#loc1)", "} loc(#loc)", '#loc = loc(unknown)']
    rendered = ir_text.render("\n".join(asm_lines), UserFiles({USER}))
    out = rendered.text.splitlines()
    assert len(out) == len(body) + 4
    regions = sum('test.region "s loc(x)" {' in line for line in body)
    assert rendered.text.count('test.region "s loc(x)" {') == regions  # strings untouched
    assert not any(" loc(#" in line or "#loc" in line for line in out)
    offset = 2  # "module {", "func.func" precede the body in the output
    got: dict[int, list[tuple[int, int]]] = {}
    for m in rendered.map:
        got.setdefault(m.ir_line - offset, []).append((m.depth, m.line))
    for line_no, frames in expect.items():
        assert [ln for _, ln in sorted(got.get(line_no, []))] == frames, (line_no, out)
    assert set(got) <= set(expect)


@pytest.mark.parametrize("target", ["torch", "linalg", "tosa"])
def test_fast_location_spans_agree_with_the_full_scan(ns: dict[str, Any], target: str) -> None:
    # Most printed lines end in ` loc(#locN)` and take a shortcut; on real IR it must find
    # exactly what the string- and parenthesis-aware scan finds.
    [res] = lower_module(ns["AttentionBlock"](), INPUTS["AttentionBlock"], {},
                         module_name="AttentionBlock", user_files={MODELS}, targets=[target],
                         options=LowerOptions(debug_info=True))
    lines = res.ir.splitlines()
    with_alias = [ln for ln in lines if ln.rstrip().endswith(")") and "loc(#loc" in ln]
    assert len(with_alias) > 10
    for line in lines:
        assert ir_text._loc_spans(line) == ir_text._scan_loc_spans(line), line


@pytest.mark.parametrize("target", ["fx", *MLIR_TARGETS])
def test_user_code_only_has_no_library_chains(results: dict, target: str) -> None:
    # torch's own frames are not library code: these models' replies carry no frame table
    # (the worker → engine reply of a plain model is as small as before).
    for model in INPUTS:
        res = results[(model, target)]
        assert not res.frames and "frames" not in res.to_json(compact_map=True), model
