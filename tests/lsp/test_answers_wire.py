"""The typed answers over the wire: a real server, its JSON field names as the client reads them.

`torchMlirLens/lower` (a lowering and a failed one), `torchMlirLens/serverInfo` (settings and
engine counters) and a server command's argument checks. One trusted server for the file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from .helpers import CONFIG, execute, init_params, request, server_info

pytestmark = pytest.mark.asyncio(loop_scope="module")

# Settings keyed by the user's own names: they must arrive as written, not camelCased.
PIPELINES = {"my_tosa_pipe": "builtin.module(torch-backend-to-tosa-backend-pipeline)"}
EXAMPLE_INPUTS = {"my_block_fn": "(torch.randn(2, 16),)"}


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    settings = {"pipelines": PIPELINES, "exampleInputs": EXAMPLE_INPUTS}
    await lsp_client.initialize_session(init_params(workspace, trusted=True, settings=settings))
    yield
    await lsp_client.shutdown_session()


async def test_lower_answers_the_client_field_names(client: LanguageClient,
                                                   workspace: Path) -> None:
    uri = (workspace / "mlp.py").as_uri()
    answer = await request(client, "torchMlirLens/lower",
                           {"uri": uri, "module": "MLP", "target": "linalg"})
    assert set(answer) == {"module", "target", "ok", "ir", "map", "diagnostics", "stats",
                           "timings", "inputsSource", "partial"}
    assert answer["ok"] is True and answer["partial"] is False
    assert answer["module"] == "MLP" and answer["target"] == "linalg"
    assert "linalg" in answer["ir"] and answer["diagnostics"] == []
    entry = answer["map"][0]
    assert set(entry) == {"irLine", "uri", "line", "depth"} and entry["uri"] == uri
    assert {"ops", "mappedOps", "unmappedOps", "unmappedOpNames", "irBytes"} <= set(
        answer["stats"])
    assert answer["stats"]["irBytes"] == len(answer["ir"].encode())
    assert "total" in answer["timings"]


async def test_a_failed_lowering_answers_its_error(client: LanguageClient,
                                                  workspace: Path) -> None:
    uri = (workspace / "mlp.py").as_uri()
    answer = await request(client, "torchMlirLens/lower",
                           {"uri": uri, "module": "NoSuchModule", "target": "linalg"})
    assert answer["ok"] is False and answer["ir"] == "" and answer["map"] == []
    assert answer["error"]["kind"] == "unknown-module"
    assert set(answer["error"]) == {"kind", "message", "uri", "line"}
    [diag] = answer["diagnostics"]
    assert diag["kind"] == "unknown-module" and diag["message"] == answer["error"]["message"]
    assert set(diag) == {"severity", "message", "kind", "uri", "line", "op", "target",
                         "related", "cause", "ops", "knockOn"}


async def test_server_info_settings_keep_the_users_names(client: LanguageClient) -> None:
    info = await server_info(client)
    settings = info["settings"]
    assert set(settings) == {"defaultTarget", "lensTargets", "diagnostics",
                             "diagnosticTargets", "timeoutSeconds", "memoryLimitMb",
                             "exampleInputs", "pipelines", "strictExport"}
    assert settings["pipelines"] == PIPELINES
    assert settings["exampleInputs"] == EXAMPLE_INPUTS
    engine = info["engine"]
    assert {"restarts", "ready", "busy", "workerPid", "earlyPid", "jobsRun", "exportsRun",
            "cacheEntries", "cacheHits"} <= set(engine)
    assert engine["ready"] is True and engine["jobsRun"] >= 1  # the lowerings above
    assert "workerBusy" not in engine  # it answered
    assert info["status"]["state"] in {"ready", "lowering"}


async def test_a_command_argument_that_does_not_fit_is_named(client: LanguageClient,
                                                            workspace: Path) -> None:
    uri = (workspace / "mlp.py").as_uri()
    with pytest.raises(JsonRpcException, match=r"invalid command argument: .*argument\.module"):
        await execute(client, "torchMlirLens.explainInputs", {"uri": uri})
    with pytest.raises(JsonRpcException, match="expected one object argument"):
        await execute(client, "torchMlirLens.explainInputs", "MLP")
    answer = await execute(client, "torchMlirLens.explainInputs",
                           {"uri": uri, "module": "MLP"})
    assert set(answer) == {"message", "template", "inputs"} and "MLP" in answer["message"]
