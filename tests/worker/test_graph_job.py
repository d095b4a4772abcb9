"""The `graph` job on real lowerings (worker/graph/): the exported program's ops grouped by the
module hierarchy, each at its line with its Torch IR lines, its verdict per backend from the
same diagnostics `check` reads; a stitched model's repeated block shown once; a ResNet-50's
depth. The worker's own entry point, in-process."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from torch_mlir_lens.protocol.graph import ModuleGraph
from torch_mlir_lens.protocol.jobs import GraphJob
from torch_mlir_lens.worker import job_handlers

MODELS = Path(__file__).resolve().parent / "models"
GRAPHS = MODELS / "graph_models.py"
BLOCKS = MODELS / "repeated_blocks.py"


def _line(path: Path, marker: str) -> int:
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if text.rstrip().endswith(f"# {marker}"):
            return number
    raise AssertionError(f"no line marked {marker!r}")


def _graph(path: Path, module: str, targets: list[str], **fields: Any) -> ModuleGraph:
    job = GraphJob(path=str(path), module=module, targets=targets, **fields)
    reply = job_handlers.run_job({**job.to_json(), "id": 1})
    assert reply["ok"], reply
    return ModuleGraph.from_json(reply["result"]["graph"])


def test_rejected_ops_carry_their_backend_verdict_line_and_ir() -> None:
    graph = _graph(GRAPHS, "Rejected", ["linalg", "tosa"])
    by_op = {n.op: n for n in graph.nodes}
    erfinv = by_op["aten.erfinv"]
    assert erfinv.line == _line(GRAPHS, "graph: erfinv")
    for target in ("linalg", "tosa"):
        verdict = erfinv.targets[target]
        assert (verdict.ok, verdict.status) == (False, "rejected")
        assert "erfinv" in (verdict.why or "")
        assert graph.verdicts[target].ok is False
    # Its Torch IR line names the op; the IR is the graph's own.
    ir = graph.ir.splitlines()
    assert erfinv.ir_lines and all("torch.aten.erfinv" in ir[n - 1] for n in erfinv.ir_lines)
    # The linear's ops sit in the `proj` submodule's group, at the line calling it.
    groups = {g.id: g for g in graph.groups}
    mm = by_op["aten.mm"]
    assert mm.group is not None and groups[mm.group].path == "proj"
    assert mm.line == _line(GRAPHS, "graph: proj")
    assert mm.targets["tosa"].status == "lowered" and mm.targets["tosa"].ok is True
    # Edges carry the type of what they pass, from an op to its user.
    assert any(e.source == mm.id and re.fullmatch(r"f32\[4, 16\]", e.type) for e in graph.edges)
    inputs = [n for n in graph.nodes if n.op == "input"]
    assert [n.name for n in inputs] == ["p"]


def test_a_rewrite_the_module_goes_through_marks_the_op_rewritten() -> None:
    graph = _graph(GRAPHS, "Rejected", ["tosa"], rewrites=["erfinv@tosa"])
    erfinv = next(n for n in graph.nodes if n.op == "aten.erfinv")
    assert erfinv.targets["tosa"].status == "rewritten"
    assert erfinv.targets["tosa"].ok is True
    assert erfinv.targets["tosa"].rewrite == "erfinv"


def test_a_stitched_block_is_one_group_its_calls_point_at() -> None:
    graph = _graph(BLOCKS, "Stack", ["linalg"])
    blocks = [g for g in graph.groups if g.kind == "block"]
    assert len(blocks) == 1 and blocks[0].paths == [f"blocks.{i}" for i in range(4)]
    calls = [n for n in graph.nodes if n.op == "block"]
    assert calls and all(n.block == blocks[0].id for n in calls)
    assert calls[0].line == _line(BLOCKS, "parent: call")
    # The block's ops once, not once per layer: one gelu, inside the block's group.
    gelu = [n for n in graph.nodes if n.op == "aten.gelu"]
    assert len(gelu) == 1 and gelu[0].line == _line(BLOCKS, "block: up")
    parents = {g.id: g.parent for g in graph.groups}
    group = gelu[0].group
    while group is not None and group != blocks[0].id:
        group = parents[group]
    assert group == blocks[0].id
    assert graph.stats["stitched"] is True


def test_a_resnet_50_deep_model_nests_its_stages_and_layers() -> None:
    graph = _graph(GRAPHS, "ResNet50Shape", ["linalg"])
    groups = {g.id: g for g in graph.groups}
    assert len(graph.nodes) > 500
    layer = re.compile(r"net\.encoder\.stages\.\d\.layers\.\d+")
    layers = [g for g in groups.values() if layer.fullmatch(g.path)]
    assert len(layers) == 3 + 4 + 6 + 3
    for g in groups.values():
        assert g.parent is None or g.parent in groups
    assert all(n.group is None or n.group in groups for n in graph.nodes)
    ids = {n.id for n in graph.nodes}
    assert all(e.source in ids and e.target in ids for e in graph.edges)
    # Ops made in the library carry its line beside the user's line calling the model.
    conv = next(n for n in graph.nodes if n.op == "aten.convolution")
    assert conv.line == _line(GRAPHS, "graph: resnet call")
    assert conv.library_line is not None and conv.library_line.file.endswith("modeling_resnet.py")
    assert graph.verdicts["linalg"].ok is True
