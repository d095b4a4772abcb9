"""`torch-mlir-lens graph --verify` through the real command and worker: a module whose compiled
values differ from eager (fresh random noise on each side) gets Verify's verdict on its graph
and the mismatch on the ops of the line that adds the noise; bad input is a located message."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)

NOISY = textwrap.dedent(
    """\
    import torch
    from torch import nn


    # torch-mlir-lens: inputs=(torch.randn(2, 8),)
    class Noisy(nn.Module):
        def forward(self, x):
            y = x * 2.0
            z = y + torch.rand_like(y)
            return z - 1.0
    """
)


def _graph(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torch_mlir_lens", "graph", *args],
                          capture_output=True, text=True, timeout=240)


def test_verify_marks_the_first_diverging_line_on_the_graph(tmp_path: Path) -> None:
    path = tmp_path / "noisy.py"
    path.write_text(NOISY)
    out = tmp_path / "graph.json"
    proc = _graph(str(path), "--targets", "linalg", "--verify", "--format", "json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr  # written: Verify's verdict is not the exit code
    assert "Verify: ✗ differs" in proc.stderr and "(marked on 2 ops)" in proc.stderr
    graph = json.loads(out.read_text())
    assert graph["verify"]["ok"] is False and graph["verify"]["line"] == 9
    marked = {n["op"]: n["verify"] for n in graph["nodes"] if n.get("verify")}
    assert set(marked) == {"aten.rand_like", "aten.add.Tensor"}, marked
    assert all(m.startswith("✗ compiled values first differ from eager here: float32 [2, 8]")
               for m in marked.values())
    assert marked["aten.add.Tensor"].endswith("(this op's value was the one compared)")
    # Without --verify the graph says nothing of Verify.
    plain = _graph(str(path), "--targets", "linalg", "--format", "json")
    assert plain.returncode == 0, plain.stderr
    data = json.loads(plain.stdout)
    assert "verify" not in data and not any(n.get("verify") for n in data["nodes"])


def test_an_output_in_no_folder_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "noisy.py"
    path.write_text(NOISY)
    proc = _graph(str(path), "-o", str(tmp_path / "missing" / "graph.html"))
    assert proc.returncode == 2
    assert "graph.html" in proc.stderr and "does not exist" in proc.stderr


def test_model_explorer_files_carry_the_graph_and_the_verdicts(tmp_path: Path) -> None:
    """`--format model-explorer`: one graph collection as Model Explorer opens it (`label`,
    `graphs`: each node's op, its module path as namespace, its edges and verdicts), and one
    node data file per backend whose values and colours are the verdicts."""
    models = Path(__file__).resolve().parents[1] / "worker" / "models" / "graph_models.py"
    out = tmp_path / "rejected.json"
    proc = _graph(str(models), "--module", "Rejected", "--targets", "linalg,tosa",
                  "--format", "model-explorer", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    collection = json.loads(out.read_text())
    (graph,) = collection["graphs"]
    assert collection["label"] == "Rejected (torch-mlir-lens)" and graph["id"] == "Rejected"
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert all(e["sourceNodeId"] in nodes for n in nodes.values() for e in n["incomingEdges"])
    erfinv = nodes["erfinv"]
    assert erfinv["label"] == "aten.erfinv"
    attrs = {a["key"]: a["value"] for a in erfinv["attrs"]}
    assert attrs["line"].endswith("graph_models.py:30")
    assert attrs["tosa"].startswith("rejected: ") and attrs["linalg"].startswith("rejected")
    assert erfinv["style"]["backgroundColor"] == "#c62828"  # the first backend's verdict
    assert any(n["namespace"] == "proj" for n in nodes.values())  # the Linear's ops
    assert [e["sourceNodeId"] for e in erfinv["incomingEdges"]]
    tosa = json.loads((tmp_path / "rejected.tosa.nodedata.json").read_text())["Rejected"]
    assert tosa["results"]["erfinv"] == {"value": 4, "bgColor": "#c62828"}
    lowered = [i for i, n in nodes.items() if n["label"] == "aten.sigmoid"]
    assert lowered and tosa["results"][lowered[0]]["value"] == 0
    assert (tmp_path / "rejected.linalg.nodedata.json").exists()


def test_a_node_data_file_that_would_replace_the_source_stops_everything(
        tmp_path: Path) -> None:
    """Model Explorer's node data files are checked with the graph file, before the lowering:
    one that is a link to the module's source is refused and nothing at all is written."""
    source = tmp_path / "noisy.py"
    source.write_text(NOISY)
    (tmp_path / "out.linalg.nodedata.json").symlink_to(source)
    proc = _graph(str(source), "--module", "Noisy", "--targets", "linalg",
                  "--format", "model-explorer", "-o", str(tmp_path / "out.json"))
    assert proc.returncode == 2, proc.stderr
    assert "out.linalg.nodedata.json: will not write the graph here" in proc.stderr
    assert not (tmp_path / "out.json").exists() and source.read_text() == NOISY
