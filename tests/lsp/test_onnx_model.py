"""An `.onnx` file in the editor, over the real server: `torchMlirLens/onnxModel` answers the
graph (opsets, inputs, outputs, every node with its values' types and its verdict per backend)
and publishes the rejected nodes to the file (node N at line N); the IR panes lower the model
by the answer's `module`, their maps pointing at node lines; a truncated file is one located
message, and a model whose weights are in an external data file opens without reading them.

The models are built here with the `onnx` wheel (tests/worker/models/onnx_models.py): x → Relu
→ com.microsoft FastGelu ("last", which no backend lowers) → Relu → y.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient
from tests.worker.models import onnx_models as models

from .helpers import CONFIG, diagnostics, init_params, request, wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")
ONNX_MODEL = "torchMlirLens/onnxModel"


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(init_params(workspace, trusted=True))
    yield
    await lsp_client.shutdown_session()


async def test_nodes_with_types_and_verdicts_and_problems(client: LanguageClient,
                                                         workspace: Path) -> None:
    path = models.chain(workspace, "FastGelu", domain="com.microsoft")
    uri = path.as_uri()
    answer = await request(client, ONNX_MODEL, {"uri": uri})
    assert answer.get("error") is None, answer.get("error")
    assert (answer["graph"], answer["module"]) == ("chain", "chain")
    assert answer["opsets"] == {"": 17, "com.microsoft": 1}
    assert answer["inputs"] == [{"name": "x", "dtype": "float", "dims": [2, 3]}]
    first, last, _relu = answer["nodes"]
    assert (first["opType"], last["name"], last["domain"]) == ("Relu", "last", "com.microsoft")
    assert first["inputs"] == ["f32[2,3]"] and first["outputs"] == ["f32[2,3]"]
    states = {n["index"]: {v["target"]: v["state"] for v in n["verdicts"]}
              for n in answer["nodes"]}
    assert states == {1: dict.fromkeys(("linalg", "tosa", "stablehlo"), "ok"),
                      2: dict.fromkeys(("linalg", "tosa", "stablehlo"), "rejected"),
                      3: dict.fromkeys(("linalg", "tosa", "stablehlo"), "knock-on")}
    why = {v["why"] for v in last["verdicts"]}
    assert any("no conversion of `com.microsoft.FastGelu`" in w for w in why), why
    assert all(t["partial"] and t["rejected"] == 1 for t in answer["targets"])
    # The Problems panel: the rejected node at its line (node 2 → line 2, 0-based 1), once.
    found = await wait_until(client, lambda: diagnostics(client, uri), what="diagnostics")
    (diag,) = found
    assert diag.range.start.line == 1
    assert "FastGelu" in diag.message and "cannot be lowered to" in diag.message
    assert [r.location.range.start.line for r in diag.related_information or []] == [2]


async def test_the_ir_pane_of_a_model_maps_its_nodes(client: LanguageClient,
                                                    workspace: Path) -> None:
    path = models.chain(workspace, "FastGelu", domain="com.microsoft", name="pane")
    uri = path.as_uri()
    answer = await request(client, ONNX_MODEL, {"uri": uri, "targets": ["tosa"]})
    assert [t["target"] for t in answer["targets"]] == ["tosa"]
    pane = await request(client, "torchMlirLens/lower",
                         {"uri": uri, "module": answer["module"], "target": "tosa"})
    assert pane["partial"] is True
    lines = {m["line"] for m in pane["map"] if m["uri"] == uri}
    assert 1 in lines  # the first Relu's ops
    (diag,) = [d for d in pane["diagnostics"] if d["severity"] == "error"]
    assert diag["node"]["opType"] == "FastGelu" and diag["line"] == 2


async def test_the_graph_view_draws_a_model(client: LanguageClient, workspace: Path) -> None:
    """`torchMlirLens/graph` on a model (the model view's Graph button): its nodes with their
    verdicts and the values between them, as for a module."""
    path = models.chain(workspace, "FastGelu", domain="com.microsoft", name="drawn")
    uri = path.as_uri()
    answer = await request(client, ONNX_MODEL, {"uri": uri, "targets": ["tosa"]})
    drawn = await request(client, "torchMlirLens/graph",
                          {"uri": uri, "module": answer["module"], "targets": ["tosa"]})
    graph = drawn["graph"]
    assert graph["module"] == "drawn" and graph["targets"] == ["tosa"]
    status = {n["line"]: n["targets"]["tosa"]["status"] for n in graph["nodes"] if n["line"]}
    assert status == {1: "lowered", 2: "rejected", 3: "knock-on"}
    assert [(e["from"], e["to"]) for e in graph["edges"]] == [
        ("in:x", "n1"), ("n1", "n2"), ("n2", "n3"), ("n3", "out")]


async def test_a_truncated_model_is_one_located_message(client: LanguageClient,
                                                       workspace: Path) -> None:
    good = models.chain(workspace, "Relu", name="whole")
    cut = workspace / "cut.onnx"
    cut.write_bytes(good.read_bytes()[:40])
    answer = await request(client, ONNX_MODEL, {"uri": cut.as_uri()})
    assert answer["nodes"] == [] and answer.get("error") is not None
    assert answer["error"]["kind"] == "load-error", answer["error"]
    found = await wait_until(client, lambda: diagnostics(client, cut.as_uri()),
                             what="the model's diagnostic")
    assert found[0].range.start.line == 0


async def test_a_model_with_external_weights_opens(client: LanguageClient,
                                                  workspace: Path) -> None:
    folder = workspace / "external"
    folder.mkdir()
    path = models.dynamic_add(folder, external=True)
    answer = await request(client, ONNX_MODEL, {"uri": path.as_uri()})
    assert answer.get("error") is None, answer.get("error")
    assert answer["inputs"][0]["dims"] == ["batch", 4]
    assert [n["opType"] for n in answer["nodes"]] == ["Add"]
    assert all(v["state"] == "ok" for v in answer["nodes"][0]["verdicts"])
