"""Lowering through the server: hover, cache, export, quick fix, crash, cancellation.

One trusted server for the whole file (module scope), like an editor session.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from .helpers import (
    CONFIG,
    change_doc,
    code_lenses,
    diagnostics,
    ensure_open,
    execute,
    hover,
    init_params,
    line_of,
    open_doc,
    plain,
    request,
    save_doc,
    server_info,
    settled,
    wait_until,
    write_unreadable_comment_module,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
TOSA_PIPELINE = "builtin.module(torch-backend-to-tosa-backend-pipeline)"
# Past slow.py's 300 s sleep: when a test sees its job end, a cancel or a newer text ended it.
JOB_TIMEOUT_S = 600
SETTINGS = {"pipelines": {"tosa-only": TOSA_PIPELINE}, "timeoutSeconds": JOB_TIMEOUT_S}


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    lsp_client.set_configuration(SETTINGS, section="torchMlirLens")
    await lsp_client.initialize_session(init_params(workspace, trusted=True, settings=SETTINGS))
    yield
    await lsp_client.shutdown_session()


def hover_text(result: types.Hover | None) -> str:
    assert result is not None
    contents = result.contents
    assert isinstance(contents, types.MarkupContent)
    return contents.value


def mlir_block(markdown: str) -> str:
    assert "```mlir\n" in markdown, markdown
    return markdown.split("```mlir\n", 1)[1].split("```", 1)[0]


async def test_server_never_imports_torch(client: LanguageClient) -> None:
    info = await server_info(client)
    assert info["torchImported"] is False and info["torchMlirImported"] is False
    assert info["trusted"] is True
    # The worker was started at initialize, in the background: one worker, no stray copy
    # (a worker being replaced may linger for a moment, hence the wait).
    assert info["engine"]["ready"] is True
    # That worker is the one `serve` spawned before importing pygls, adopted by the engine.
    assert info["engine"]["earlyPid"] == info["engine"]["workerPid"] is not None

    async def one_worker() -> bool:
        pid = (await server_info(client))["engine"]["workerPid"]
        return _live_children(info["pid"]) == [pid]

    await wait_until(client, one_worker, timeout=30)


async def test_hover_shows_linalg_of_the_line(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "mlp.py"
    uri = open_doc(client, path)
    line = line_of(path, "x = F.relu(self.fc1(x))")
    text = hover_text(await hover(client, uri, line))
    block = mlir_block(text)
    assert text.startswith("**Linalg** · `MLP`")
    assert "linalg." in block  # the Linear's matmul / the ReLU's generic
    assert "torch.aten" not in block  # the default target, not the Torch dialect
    # The hover answers after the default target; the other backends' verdicts follow.
    assert "linalg ✓ · tosa" in text and "stablehlo" in text

    async def all_verdicts() -> bool:
        again = hover_text(await hover(client, uri, line))
        return "linalg ✓ · tosa ✓ · stablehlo ✓" in again

    await wait_until(client, all_verdicts, timeout=60)
    # The line of the class itself and of __init__ produced no ops: no hover at all.
    assert await hover(client, uri, line_of(path, "class MLP")) is None
    assert await hover(client, uri, line_of(path, "self.fc1 = nn.Linear")) is None
    assert await hover(client, uri, line_of(path, "import torch.nn as nn")) is None


async def test_hover_through_submodules(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "transformer.py"
    uri = open_doc(client, path)
    # A line of Block.forward that calls the attention submodule: its ops are the attention's
    # (depth 1 of the user-frame chain), far too many to show: the list is cut.
    line = line_of(path, "x = x + self.attn(self.ln1(x))")
    text = hover_text(await hover(client, uri, line))
    assert text.startswith("**Linalg** · `Block`")  # the module under the cursor, lowered
    block = mlir_block(text)
    assert "linalg." in block and "more lines" in block.splitlines()[-1]
    # On demand, with work-done progress.
    begins = [v for reports in client.progress_reports.values() for v in reports
              if isinstance(v, types.WorkDoneProgressBegin)]
    assert any(v.title == "Lowering Block" for v in begins), begins
    # A line of Attention.forward is in Block's result already (depth 0): Attention is not
    # lowered. (Counted in the log, not in jobs: the file's checks go on in the background.)
    text = hover_text(await hover(client, uri, line_of(path, "mask = torch.triu(")))
    assert "`Block`" in text and "linalg." in mlir_block(text)
    # A line of Attention.forward that made no ops: Block's result maps Attention.forward,
    # so Attention is not lowered on its own for it (null at once).
    assert await hover(client, uri, line_of(path, "b, t, d = x.shape")) is None
    assert not [m.message for m in client.log_messages if "lowering Attention" in m.message]


async def test_a_repeated_block_is_one_function_and_its_call_says_where(
        client: LanguageClient, workspace: Path) -> None:
    path = workspace / "transformer.py"
    uri = open_doc(client, path)
    text = hover_text(await hover(client, uri, line_of(path, "x = block(x)")))
    assert "call @Block(" in mlir_block(text)
    # The hover names the function and its line in the pane's IR.
    answer = await request(client, "torchMlirLens/lower",
                           {"uri": uri, "module": "TinyTransformer", "target": "linalg"})
    ir = answer["ir"].splitlines()
    defined = next(i for i, t in enumerate(ir, start=1) if "func.func private @Block(" in t)
    assert f"`@Block` (line {defined} of the IR: one function for the 2 calls of `Block`)" \
        in text
    assert sum("call @Block(" in t for t in ir) == 2
    # The pane's other form: every layer inline, no function.
    inline = await request(client, "torchMlirLens/lower",
                           {"uri": uri, "module": "TinyTransformer", "target": "linalg",
                            "inlineBlocks": True})
    assert inline["ok"] and "func.func private" not in inline["ir"]
    assert inline["stats"]["blocksNote"] == "inline: asked for"


async def test_the_onnx_path_beside_torch_export(client: LanguageClient,
                                                 workspace: Path) -> None:
    """A pane's other path (`via: "onnx"`): the module through torch.onnx.export and the
    ONNX importer, its ops at the Python lines the exporter recorded; torch.export's pane
    answers as before, and an unknown path is refused."""
    path = workspace / "mlp.py"
    uri = open_doc(client, path)
    fx = await request(client, "torchMlirLens/lower",
                       {"uri": uri, "module": "MLP", "target": "tosa"})
    onnx = await request(client, "torchMlirLens/lower",
                         {"uri": uri, "module": "MLP", "target": "tosa", "via": "onnx"})
    assert fx["ok"] and onnx["ok"], onnx.get("diagnostics")
    assert "tosa." in onnx["ir"] and onnx["stats"]["via"] == "onnx"
    assert "via" not in fx["stats"] or fx["stats"]["via"] != "onnx"
    forward = {line_of(path, needle) for needle in (
        "F.relu(self.fc1(x))", "torch.relu(self.fc2(x))", "return self.head(x)")}
    placed = {m["line"] for m in onnx["map"] if m["uri"] == uri}
    assert placed and placed <= forward, (placed, forward)
    with pytest.raises(JsonRpcException, match="unknown path"):
        await request(client, "torchMlirLens/lower",
                      {"uri": uri, "module": "MLP", "target": "tosa", "via": "tflite"})


async def test_hover_in_a_helper_function(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "with_helper.py"
    uri = open_doc(client, path)
    text = hover_text(await hover(client, uri, line_of(path, "return x * torch.sigmoid(x)")))
    assert text.startswith("**Linalg** · `Net`") and "linalg." in mlir_block(text)
    # The line in forward that calls the helper shows the helper's ops too (depth 1).
    text = hover_text(await hover(client, uri, line_of(path, "return swish(self.fc(x))")))
    assert "linalg." in mlir_block(text)
    assert await hover(client, uri, line_of(path, "import torch.nn as nn")) is None


async def test_second_hover_is_served_from_cache(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "mlp.py"
    uri = ensure_open(client, path)
    await hover(client, uri, line_of(path, "x = F.relu(self.fc1(x))"))  # lowered, if not yet
    before = (await settled(client))["engine"]  # earlier tests' checks may still run
    text = hover_text(await hover(client, uri, line_of(path, "return self.head(x)")))
    assert "linalg." in mlir_block(text)
    again = hover_text(await hover(client, uri, line_of(path, "x = F.relu(self.fc1(x))")))
    assert "linalg." in mlir_block(again)
    after = (await server_info(client))["engine"]
    assert after["jobsRun"] == before["jobsRun"], (before, after)
    assert after["exportsRun"] == before["exportsRun"]


async def test_target_with_passes(client: LanguageClient, workspace: Path) -> None:
    """What "Show IR After Pass…" asks for: a backend's IR after each of its passes."""
    uri = (workspace / "mlp.py").as_uri()
    answer = await request(client, "torchMlirLens/lower",
                           {"uri": uri, "module": "MLP", "target": "linalg",
                            "printAfterAll": True})
    assert answer["ok"] is True and answer["target"] == "linalg"
    assert len(answer["passes"]) > 3 and all(p["name"] and p["ir"] for p in answer["passes"])
    assert "func.func" in answer["passes"][0]["ir"]


async def test_named_pipeline_with_passes(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "mlp.py").as_uri()
    answer = await request(client, "torchMlirLens/lower",
                           {"uri": uri, "module": "MLP", "pipeline": "tosa-only",
                            "printAfterAll": True})
    assert answer["ok"] is True and answer["target"] == "custom"
    assert "tosa." in answer["ir"] and "torch.aten" not in answer["ir"]
    assert answer["passes"] and all(p["name"] and p["ir"] for p in answer["passes"])
    relu = line_of(workspace / "mlp.py", "x = F.relu(self.fc1(x))")
    assert any(m["line"] == relu and m["uri"] == uri for m in answer["map"])
    with pytest.raises(JsonRpcException, match="unknown pipeline"):
        await request(client, "torchMlirLens/lower",
                      {"uri": uri, "module": "MLP", "pipeline": "no-such-pipeline"})


async def test_verify_shows_its_verdict_on_the_lens(client: LanguageClient,
                                                    workspace: Path) -> None:
    uri = ensure_open(client, workspace / "mlp.py")  # the verdict is a lens of an open file
    result = await execute(client, "torchMlirLens.verify", {"uri": uri, "module": "MLP"})
    assert result["ok"] is True and result["message"].startswith("✓ matches eager")
    assert result["outputs"][0]["maxAbsErr"] < 1e-3

    async def verdict_on_lens() -> bool:
        titles = [lens.command.title for lens in await code_lenses(client, uri)]
        return result["message"] in titles

    await wait_until(client, verdict_on_lens, timeout=30)
    assert not [d for d in diagnostics(client, uri) if str(d.code).startswith("verify")]


async def test_export_writes_valid_mlir(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "mlp.py").as_uri()
    exports = workspace / "exports"  # inside the workspace: no dialog chose this path
    exports.mkdir(exist_ok=True)
    out = exports / "mlp.linalg.mlir"
    answer = await execute(client, "torchMlirLens.exportModule",
                           {"uri": uri, "module": "MLP", "target": "linalg", "output": str(out)})
    assert Path(answer["path"]) == out and answer["bytes"] == out.stat().st_size > 0
    bytecode = exports / "mlp.tosa.mlirbc"
    await execute(client, "torchMlirLens.exportModule",
                  {"uri": uri, "module": "MLP", "target": "tosa", "output": str(bytecode),
                   "bytecode": True})
    # Re-parse both with torch-mlir's own MLIR bindings, in a process of their own.
    check = textwrap.dedent("""
        import sys
        from torch_mlir import ir
        for path in sys.argv[1:]:
            with ir.Context() as ctx:
                ctx.allow_unregistered_dialects = False
                data = open(path, "rb").read()
                module = ir.Module.parse(data)
                names = {op.operation.name for op in module.body.operations}
                print(path, sorted(names))
    """)
    proc = subprocess.run([sys.executable, "-c", check, str(out), str(bytecode)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "func.func" in proc.stdout
    # Never replaces a file the user did not ask to replace.
    before = out.read_bytes()
    with pytest.raises(JsonRpcException, match="exists"):
        await execute(client, "torchMlirLens.exportModule",
                      {"uri": uri, "module": "MLP", "target": "tosa", "output": str(out)})
    assert out.read_bytes() == before
    await execute(client, "torchMlirLens.exportModule",
                  {"uri": uri, "module": "MLP", "target": "tosa", "output": str(out),
                   "overwrite": True})
    assert out.read_bytes() != before and b"tosa." in out.read_bytes()


async def test_quick_fix_adds_inputs_that_lower(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "no_inputs.py"
    uri = open_doc(client, path)
    found = await wait_until(
        client, lambda: [d for d in diagnostics(client, uri) if d.code == "inputs-missing"],
        timeout=60,
    )
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=found[0].range,
        context=types.CodeActionContext(diagnostics=found),
    )
    actions = await client.text_document_code_action_async(params)
    assert actions and len(actions) == 1
    action = actions[0]
    assert isinstance(action, types.CodeAction) and action.kind == types.CodeActionKind.QuickFix
    assert action.edit is not None and action.edit.changes is not None
    (edit,) = action.edit.changes[uri]
    class_line = line_of(path, "class Mixer")
    assert edit.range.start == types.Position(line=class_line - 1, character=0)
    assert edit.new_text.startswith("# torch-mlir-lens: inputs=(torch.randn(2, 8), ")
    # Apply the edit as the editor would, then lower the module.
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(class_line - 1, edit.new_text)
    change_doc(client, uri, "".join(lines), version=2)
    answer = await request(client, "torchMlirLens/lower",
                           {"uri": uri, "module": "Mixer", "target": "linalg"})
    assert answer["ok"] is True, answer.get("error") or answer["diagnostics"]
    assert "linalg." in answer["ir"]
    tanh_line = class_line + 1 + 6  # `return torch.tanh(...)`, one line lower now
    assert any(m["line"] == tanh_line for m in answer["map"]), answer["map"]
    # The information diagnostic is gone from the edited text.
    await wait_until(
        client, lambda: not [d for d in diagnostics(client, uri) if d.code == "inputs-missing"],
        timeout=30,
    )


async def test_an_unreadable_inputs_comment_is_one_error_when_trusted_too(
        client: LanguageClient, workspace: Path) -> None:
    # The editor marks the comment from the text alone, and the worker refuses the module
    # with the same message at the same line: the user sees it once, and no other inputs.
    path = workspace / "bad_comment_trusted.py"
    comment_line = write_unreadable_comment_module(path, "init=(3,)")
    uri = open_doc(client, path)
    answer = await request(client, "torchMlirLens/lower",
                           {"uri": uri, "module": "Scaled", "target": "linalg"})
    assert answer["ok"] is False
    assert (answer["error"]["kind"], answer["error"]["line"]) == ("bad-inputs", comment_line)
    await settled(client)
    found = diagnostics(client, uri)
    assert [(d.code, d.range.start.line + 1) for d in found] == [("bad-inputs", comment_line)]
    assert "separate `inputs=` and `init=` with `;`" in found[0].message


async def test_crashing_module_leaves_server_answering(client: LanguageClient,
                                                       workspace: Path) -> None:
    path = workspace / "crashing.py"
    uri = open_doc(client, path)
    found = await wait_until(
        client, lambda: [d for d in diagnostics(client, uri) if d.code == "worker-crash"],
    )
    line = line_of(path, "class Crash")
    text = path.read_text().splitlines()[line - 1]
    diag = found[0]
    assert diag.severity == types.DiagnosticSeverity.Error
    assert diag.range.start.line == line - 1
    assert text[diag.range.start.character:diag.range.end.character] == "Crash"
    # The server, and a new worker, still answer.
    mlp = workspace / "mlp.py"
    answer = await request(client, "torchMlirLens/lower",
                           {"uri": mlp.as_uri(), "module": "MLP", "target": "torch"})
    assert answer["ok"] is True and "torch.aten.relu" in answer["ir"]


async def test_cancel_request_stops_the_lowering(client: LanguageClient,
                                                 workspace: Path) -> None:
    slow = (workspace / "slow.py").as_uri()  # not opened: no diagnostics check starts it
    restarts = (await server_info(client))["engine"]["restarts"]
    msg_id = "cancel-me-1"
    future = client.protocol.send_request(
        "torchMlirLens/lower", {"uri": slow, "module": "Slow", "target": "linalg"},
        msg_id=msg_id,
    )
    await wait_until(
        client, lambda: any("Slow" in (s.get("detail") or "") for s in client.statuses),
        timeout=60)
    # Cancel once the job runs in the worker (it sleeps there for 300 s).
    busy = await wait_until(client, _worker_running(client), timeout=120)
    client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
    with pytest.raises(JsonRpcException, match="cancel"):
        await asyncio.wait_for(asyncio.wrap_future(future), 60)
    # The worker was killed: with the job's time-out raised past the module's sleep (by the
    # fixture), nothing else would end it before the test's waits give up.
    await wait_until(client, lambda: _gone(busy["workerPid"]), timeout=60,
                     what="the cancelled job's worker to be killed")
    # The next lowering runs on a fresh worker, and the engine counts a restart.
    mlp = (workspace / "mlp.py").as_uri()
    answer = await request(client, "torchMlirLens/lower",
                           {"uri": mlp, "module": "MLP", "target": "raw"}, timeout=120)
    assert answer["ok"] is True
    info = await server_info(client)
    assert info["engine"]["restarts"] > restarts


async def test_timeout_setting_applies_without_restart(client: LanguageClient,
                                                      workspace: Path) -> None:
    slow = (workspace / "slow.py").as_uri()
    await set_timeout(client, 4)
    answer = await request(client, "torchMlirLens/lower",
                           {"uri": slow, "module": "Slow", "target": "torch"}, timeout=90)
    assert answer["ok"] is False and answer["error"]["kind"] == "timeout"
    assert answer["error"]["line"] == line_of(workspace / "slow.py", "time.sleep(300)")
    # Stopped by the new time-out, not the one the session started with.
    assert "longer than 4 s" in answer["error"]["message"], answer["error"]
    await set_timeout(client, JOB_TIMEOUT_S)


def _live_children(pid: int) -> list[int]:
    out = []
    for child in psutil.Process(pid).children():
        with contextlib.suppress(psutil.Error):
            if child.status() != psutil.STATUS_ZOMBIE:
                out.append(child.pid)
    return out


def _worker_running(client: LanguageClient) -> Callable[[], Any]:
    """A warm worker is running a job (not waiting for its start-up or idle): the engine's
    serverInfo then, else None."""
    async def check() -> dict[str, Any] | None:
        engine = (await server_info(client, wait=False))["engine"]
        running = engine["ready"] and engine["busy"] and engine.get("workerBusy")
        return engine if running else None

    return check


def _gone(pid: int) -> bool:
    """The process has exited (a zombie not yet reaped counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def set_timeout(client: LanguageClient, seconds: int) -> None:
    """Change the job time-out as the editor does (no restart); wait until it applies."""
    client.set_configuration({**SETTINGS, "timeoutSeconds": seconds}, section="torchMlirLens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={}))
    await wait_until(client, _setting_is(client, "timeoutSeconds", seconds), timeout=30)


def _setting_is(client: LanguageClient, name: str, value: object) -> Callable[[], Any]:
    async def check() -> bool:
        return bool((await server_info(client, wait=False))["settings"][name] == value)

    return check


async def test_newer_text_supersedes_stale_lowering(client: LanguageClient,
                                                   workspace: Path) -> None:
    path = workspace / "slow.py"
    uri = open_doc(client, path)  # the check on open sleeps 300 s in the worker
    seen = len(client.statuses)
    await wait_until(
        client, lambda: any("Slow" in (s.get("detail") or "") for s in client.statuses[seen:]),
        timeout=60)

    # Supersede the job once it runs in a warm worker: the case where superseding means
    # killing the worker mid-export (a job still waiting for the start-up is just dropped).
    busy = await wait_until(client, _worker_running(client), timeout=120)
    restarts = (await server_info(client, wait=False))["engine"]["restarts"]
    text = path.read_text().replace("time.sleep(300)", "time.sleep(0)")
    change_doc(client, uri, text, version=2)
    save_doc(client, uri)

    async def verdict() -> bool:
        titles = [lens.command.title for lens in await code_lenses(client, uri)]
        return "Linalg ✓ · TOSA ✓ · StableHLO ✓" in titles

    # The new text's check kills the stale export instead of waiting for it (the job's
    # time-out is past the module's sleep) and lowers the new text on a fresh worker.
    await wait_until(client, lambda: _gone(busy["workerPid"]), timeout=60,
                     what="the stale job's worker to be killed")
    await wait_until(client, verdict, timeout=120)
    assert (await server_info(client))["engine"]["restarts"] > restarts


STAGED = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    # torch-mlir-lens: inputs=(torch.randn(4, 8), torch.randn(4, 8))
    class Angle(nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return torch.atan2(x, y) + 1
    """)


async def test_lower_answers_first_then_the_other_backends(
    client: LanguageClient, workspace: Path
) -> None:
    path = workspace / "staged.py"
    path.write_text(STAGED)
    before = (await settled(client))["engine"]
    uri = open_doc(client, path)  # starts the diagnostics check of Angle
    answer = await request(client, "torchMlirLens/lower", {"uri": uri, "module": "Angle"})
    assert answer["target"] == "linalg" and answer["ok"] is True
    # The other backends follow: TOSA cannot lower atan2, published once all are known.
    found = await wait_until(client, lambda: [
        d for d in diagnostics(client, uri) if str(d.code).startswith("aten.atan2")], timeout=60)
    assert found[0].message.startswith("`aten.atan2`") and "TOSA" in found[0].message

    async def verdict() -> bool:
        titles = [lens.command.title for lens in await code_lenses(client, uri)]
        return "Linalg ✓ · TOSA ✗ 1 op · StableHLO ✓" in titles

    await wait_until(client, verdict, timeout=30)
    after = (await server_info(client))["engine"]
    # One export served both stages (the worker's exported-program cache): two jobs.
    assert after["exportsRun"] == before["exportsRun"] + 1, (before, after)
    assert after["jobsRun"] == before["jobsRun"] + 2, (before, after)


async def test_save_rechecks_and_edits_invalidate(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "mlp.py"
    uri = ensure_open(client, path)
    line = line_of(path, "x = torch.relu(self.fc2(x))")
    first = mlir_block(hover_text(await hover(client, uri, line)))
    jobs = (await settled(client))["engine"]["jobsRun"]
    text = path.read_text().replace("x = torch.relu(self.fc2(x))",
                                    "x = torch.tanh(self.fc2(x))")
    change_doc(client, uri, text)
    second = mlir_block(hover_text(await hover(client, uri, line)))
    assert second != first and "math.tanh" in second
    # The new text's check: the default target, then the other backends from the same export.
    assert (await settled(client))["engine"]["jobsRun"] == jobs + 2
    save_doc(client, uri)
    await wait_until(client, lambda: plain(client.diagnostics.get(uri)) == [], timeout=60)


async def test_still_no_torch_after_everything(client: LanguageClient,
                                               workspace: Path) -> None:
    # Whatever ran before in this session (in the whole file: crash, cancel, time-out), this
    # test lowers on two workers itself: one that crashes, then its replacement ...
    crash = await request(client, "torchMlirLens/lower",
                          {"uri": (workspace / "crashing.py").as_uri(), "module": "Crash",
                           "target": "torch"})
    assert crash["ok"] is False and crash["error"]["kind"] == "worker-crash", crash
    answer = await request(client, "torchMlirLens/lower",
                           {"uri": (workspace / "mlp.py").as_uri(), "module": "MLP",
                            "target": "linalg"})
    assert answer["ok"] is True
    info = await server_info(client)
    assert info["engine"]["restarts"] >= 1
    assert info["torchImported"] is False  # ... all of it in the worker processes
    assert info["torchMlirImported"] is False
