"""Where `exportModule` and `exportRepro` may write, over a real server (project/write_policy.py).

Never over a source file (not even with `overwrite` and `chosenByUser`); only inside the
workspace folder unless the client says the path came from its dialog (`chosenByUser`), and
neither `..`, an absolute path, a `file:` URI nor a symlink gets out of it; a relative path is
relative to the source file's folder. A refusal is a JSON-RPC error naming the path and the
reason, sent before any job: nothing is written and the worker runs nothing.

The workspace: the examples, plus `pkg/model.py` (the MLP, in a subfolder, so "beside the
source" and "the workspace root" differ), and `escape`, a symlink to a folder outside it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from .helpers import CONFIG, execute, init_params, plain, server_info

pytestmark = pytest.mark.asyncio(loop_scope="module")
EXPORT = "torchMlirLens.exportModule"
REPRO = "torchMlirLens.exportRepro"
REQUEST_FAILED = -32803


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder beside the workspace, outside it: nothing may appear here unasked."""
    return tmp_path_factory.mktemp("outside")


@pytest.fixture(scope="module")
def ws(workspace: Path, outside: Path) -> Iterator[Path]:
    pkg = workspace / "pkg"
    pkg.mkdir()
    shutil.copy(workspace / "mlp.py", pkg / "model.py")
    (pkg / "helper.py").write_text("VALUE = 1\n")
    (workspace / "escape").symlink_to(outside, target_is_directory=True)
    yield workspace


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, ws: Path):
    await lsp_client.initialize_session(init_params(ws, trusted=True))
    yield
    await lsp_client.shutdown_session()


def model(ws: Path) -> Path:
    return ws / "pkg" / "model.py"


def stamp(path: Path) -> tuple[bytes, int]:
    """What must not change: the bytes and the modification time."""
    return path.read_bytes(), path.stat().st_mtime_ns


async def refused(client: LanguageClient, command: str, args: dict[str, Any],
                  *needles: str) -> str:
    """Run a command that must be refused; its message (checked for `needles`)."""
    with pytest.raises(JsonRpcException) as caught:
        await execute(client, command, args, timeout=60)
    message = str(caught.value)
    for needle in needles:
        assert needle in message, message
    # RequestFailed, with what the client needs to say it: the kind, the path, the reason.
    data = plain(caught.value.data)
    assert caught.value.code == REQUEST_FAILED, (caught.value.code, message)
    assert data["kind"] == "write-refused" and data["path"] in message
    assert data["reason"] and data["reason"] in message
    return message


async def jobs_run(client: LanguageClient) -> int:
    return int((await server_info(client))["engine"]["jobsRun"])


async def test_the_module_own_file_and_other_sources_are_never_replaced(
        client: LanguageClient, ws: Path) -> None:
    src, helper = model(ws), ws / "pkg" / "helper.py"
    kept = {p: stamp(p) for p in (src, helper)}
    base = {"uri": src.as_uri(), "module": "MLP", "target": "linalg", "overwrite": True}
    jobs = await jobs_run(client)
    # The security review's case, then the same through every spelling and with the dialog's
    # permission: the dialog may leave the workspace, never replace a source.
    for output in (str(src), src.as_uri(), "model.py", "../pkg/./model.py"):
        for chosen in (False, True):
            await refused(client, EXPORT, {**base, "output": output, "chosenByUser": chosen},
                          "model.py", "the module's own source file")
    for output in (str(helper), "helper.py", "new_module.py", "notes.ipynb", "stubs.pyi"):
        await refused(client, EXPORT, {**base, "output": output, "chosenByUser": True},
                      output.rsplit("/", 1)[-1], "Python source")
    # A symlink with an IR name that leads to the source is the source.
    link = ws / "pkg" / "model.linalg-link.mlir"
    link.symlink_to(src)
    await refused(client, EXPORT, {**base, "output": str(link), "chosenByUser": True},
                  "the module's own source file")
    # A name no file can have (a NUL byte): refused with its reason, not a traceback.
    for chosen in (False, True):
        await refused(client, EXPORT, {**base, "output": "out\0put.mlir", "chosenByUser": chosen},
                      "a file name cannot hold a NUL byte")
        await refused(client, REPRO, {**base, "outputDir": "re\0pro", "chosenByUser": chosen},
                      "a file name cannot hold a NUL byte")
    assert {p: stamp(p) for p in (src, helper)} == kept
    assert not (ws / "pkg" / "new_module.py").exists()
    assert not (ws / "pkg" / "notes.ipynb").exists()
    assert await jobs_run(client) == jobs  # refused before any job was sent


async def test_a_relative_output_lands_beside_the_source(client: LanguageClient,
                                                         ws: Path) -> None:
    answer = await execute(client, EXPORT, {"uri": model(ws).as_uri(), "module": "MLP",
                                            "target": "linalg", "output": "model.linalg.mlir"})
    written = ws / "pkg" / "model.linalg.mlir"
    assert Path(answer["path"]) == written and written.stat().st_size == answer["bytes"] > 0
    assert b"func.func" in written.read_bytes()
    assert not (ws / "model.linalg.mlir").exists()  # not the workspace root


async def test_nothing_is_written_outside_the_workspace_unless_chosen_in_a_dialog(
        client: LanguageClient, ws: Path, outside: Path) -> None:
    uri = model(ws).as_uri()
    base = {"uri": uri, "module": "MLP", "target": "linalg"}
    jobs = await jobs_run(client)
    escapes = {
        "../ walks out": f"../../{outside.name}/a.mlir",
        "absolute path": str(outside / "b.mlir"),
        "file: URI": (outside / "c.mlir").as_uri(),
        "a symlink inside the workspace (relative)": "../escape/d.mlir",
        "a symlink inside the workspace (absolute)": str(ws / "escape" / "e.mlir"),
    }
    for why, output in escapes.items():
        message = await refused(client, EXPORT, {**base, "output": output},
                                "outside the workspace folders", "dialog")
        assert output.rsplit("/", 1)[-1] in message, (why, message)
    # Inside, an export's name must be an export's, unless chosen in a dialog.
    await refused(client, EXPORT, {**base, "output": str(ws / "notes.txt")}, "notes.txt",
                  ".mlir or .mlirbc")
    # Another scheme is no path at all.
    await refused(client, EXPORT, {**base, "output": "https://example.com/a.mlir",
                                   "chosenByUser": True}, "file paths")
    assert list(outside.iterdir()) == [] and not (ws / "notes.txt").exists()
    assert await jobs_run(client) == jobs
    # The path the user picked in the client's save dialog may be anywhere.
    chosen = outside / "chosen.mlir"
    answer = await execute(client, EXPORT, {**base, "output": str(chosen),
                                            "chosenByUser": True})
    assert Path(answer["path"]) == chosen and b"func.func" in chosen.read_bytes()
    chosen.unlink()


async def test_the_repro_folder_keeps_the_same_rules(client: LanguageClient, ws: Path,
                                                     outside: Path) -> None:
    uri = model(ws).as_uri()
    base = {"uri": uri, "module": "MLP", "target": "tosa"}
    jobs = await jobs_run(client)
    for output_dir in (f"../../{outside.name}/r1", str(outside / "r2"),
                       (outside / "r3").as_uri(), "../escape/r4", str(ws / "escape")):
        await refused(client, REPRO, {**base, "outputDir": output_dir},
                      "outside the workspace folders")
    await refused(client, REPRO, {**base, "outputDir": str(model(ws)), "chosenByUser": True},
                  "not a folder")
    assert list(outside.iterdir()) == []
    assert await jobs_run(client) == jobs
    # Relative: beside the source file.
    answer = await execute(client, REPRO, {**base, "outputDir": "repro"})
    mlir = Path(answer["mlirPath"])
    assert mlir.parent == ws / "pkg" / "repro" and mlir.suffix == ".mlir"
    assert "torch-mlir-opt" in answer["command"]
    # Chosen in the client's folder dialog: anywhere.
    answer = await execute(client, REPRO, {**base, "outputDir": str(outside / "picked"),
                                           "chosenByUser": True})
    assert Path(answer["mlirPath"]).parent == outside / "picked"
    shutil.rmtree(outside / "picked")


async def test_without_a_destination_the_write_goes_beside_the_source(
        client: LanguageClient, ws: Path) -> None:
    before = set(os.listdir(ws / "pkg"))
    answer = await execute(client, EXPORT, {"uri": model(ws).as_uri(), "module": "MLP",
                                            "target": "linalg"})
    written = Path(answer["path"])
    assert written.parent == ws / "pkg" and written.name not in before
    assert written.name.startswith("model.MLP.linalg") and written.suffix == ".mlir"
