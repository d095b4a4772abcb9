"""The IREE targets in the editor, over the real server and IREE 3.13: with `diagnosticTargets`
naming IREE CPU and ROCm, the verdict lens says `IREE CPU ✓ · ROCm ✓ (not run)` and the
module gets an Information diagnostic "compiled, not run: no device"; the hover names the
dispatch a line landed in, and the IR pane of an IREE target shows its dispatch regions mapped
to their lines; "Time on IREE CPU" (`torchMlirLens.profile`) gives the compiled
time beside eager's and each line's share, which the lens and the hover then show; Verify on
IREE's runtime answers its time; Export writes a `.vmfb` inside the workspace without a
dialog (the settings, lens titles, write policy and missing-IREE notice alone:
test_iree_settings.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient
from tests.harness.lsp_session import hover_text as text_of

from .helpers import (
    CONFIG,
    code_lenses,
    diagnostics,
    execute,
    hover,
    init_params,
    line_of,
    open_doc,
    request,
    wait_until,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
SETTINGS = {"diagnosticTargets": ["linalg", "iree-cpu", "iree-rocm"],
            "ireeArchs": {"iree-cpu": "host", "iree-rocm": "gfx942"}}


# --- over the real server -------------------------------------------------------------------


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(init_params(workspace, trusted=True, settings=SETTINGS))
    yield
    await lsp_client.shutdown_session()


def _titles(lenses: list[types.CodeLens]) -> list[str]:
    return [lens.command.title for lens in lenses if lens.command]


async def test_verdicts_not_run_and_the_dispatch_of_a_line(client: LanguageClient,
                                                           workspace: Path) -> None:
    path = workspace / "mlp.py"
    uri = open_doc(client, path)

    async def verdict() -> str | None:
        return next((t for t in _titles(await code_lenses(client, uri)) if "IREE CPU ✓" in t),
                    None)

    title = await wait_until(client, verdict, what="the IREE verdicts in the lens")
    assert title == "Linalg ✓ · IREE CPU ✓ · ROCm ✓ (not run)"
    titles = _titles(await code_lenses(client, uri))
    assert "Verify on IREE CPU" in titles and "Time on IREE CPU" in titles
    found = await wait_until(client, lambda: [d for d in diagnostics(client, uri)
                                              if "not run" in d.message], what="not run")
    assert found[0].severity == types.DiagnosticSeverity.Information
    assert "compiled, not run: no device" in found[0].message
    line = line_of(path, "self.fc2(x)")
    shown = text_of(await hover(client, uri, line, character=12))
    assert "**IREE CPU**: in dispatch" in shown and "matmul" in shown, shown
    assert "iree-rocm ✓ (compiled, not run: no device)" in shown
    # The IR pane of an IREE target: its dispatch regions, each mapped to its lines.
    pane = await request(client, "torchMlirLens/lower",
                         {"uri": uri, "module": "MLP", "target": "iree-rocm"})
    assert pane["ir"].startswith("// IREE ROCm (gfx942)"), pane["ir"][:200]
    assert line in {m["line"] for m in pane["map"] if m["uri"] == uri}
    assert pane["stats"]["lineDispatches"]


async def test_time_on_iree_cpu_then_lens_and_hover(client: LanguageClient,
                                                   workspace: Path) -> None:
    path = workspace / "mlp.py"
    uri = path.as_uri()
    answer = await execute(client, "torchMlirLens.profile",
                           {"uri": uri, "module": "MLP", "target": "iree-cpu"})
    speed = answer["speed"]
    assert speed["target"] == "iree-cpu" and speed["compiledMs"] > 0 and speed["eagerMs"] > 0
    costs = {c["line"]: c["share"] for c in answer["lineCosts"]}
    assert set(costs) == {line_of(path, n) for n in ("self.fc1(x)", "self.fc2(x)", "self.head(x)")}
    assert abs(sum(costs.values()) - 1) < 0.01
    titles = _titles(await code_lenses(client, uri))
    assert any(t.startswith("IREE CPU ") and "· eager " in t for t in titles), titles
    shown = text_of(await hover(client, uri, line_of(path, "self.fc2(x)"), character=12))
    assert "% of the compiled module's dispatch time" in shown and "· eager " in shown


async def test_verify_on_iree_answers_its_time(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "mlp.py").as_uri()
    answer = await execute(client, "torchMlirLens.verify",
                           {"uri": uri, "module": "MLP", "target": "iree-cpu"})
    assert answer["ok"] is True and answer["speed"]["target"] == "iree-cpu"
    titles = _titles(await code_lenses(client, uri))
    assert any(t.startswith("IREE CPU ✓ matches eager") for t in titles), titles
    assert "Verify" in titles  # the Linalg Verify lens keeps its own verdict (none yet)


async def test_export_a_vmfb_inside_the_workspace(client: LanguageClient,
                                                  workspace: Path) -> None:
    uri = (workspace / "mlp.py").as_uri()
    answer = await execute(client, "torchMlirLens.exportModule",
                           {"uri": uri, "module": "MLP", "target": "iree-cpu"})
    written = Path(answer["path"])
    assert written.suffix == ".vmfb" and written.parent == workspace
    assert written.stat().st_size == answer["bytes"] > 1000
