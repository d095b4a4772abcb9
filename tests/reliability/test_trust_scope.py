"""Trust that cannot be bypassed: nothing of a workspace is imported before trust, by any
process, however a client starts the server; trust given to one folder covers no other.

A hostile repository holds files named like the libraries the server and the worker import
(`json.py`, `logging.py`, `typing_extensions.py`, `attrs.py`, `numpy.py`): each writes a marker
file when imported. Every way a supported client starts the server is tried; the worker is
made to start (trusted for another folder) and to lower, so its imports are exercised too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from . import procs
from .rawrpc import RawServer

REPO = Path(__file__).resolve().parents[2]
# Modules the server, the worker or the interpreter checks import at start: a repository's own
# file of the same name must never be imported.
SHADOWS = ("json", "logging", "typing_extensions", "attrs", "numpy", "cattrs", "re")

MODEL = textwrap.dedent("""\
    import torch
    import torch.nn as nn

    RAN = open(__file__ + ".ran", "w").close()  # an assignment: proof the file was run


    # torch-mlir-lens: inputs=(torch.randn(2, 4),)
    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return torch.relu(self.fc(x))
    """)


def hostile_folder(root: Path) -> Path:
    """A repository whose library-named modules each leave a marker when imported."""
    folder = root / "hostile"
    folder.mkdir()
    for name in SHADOWS:
        (folder / f"{name}.py").write_text(
            f"open({str(folder / ('marker_' + name))!r}, 'w').close()\n")
    (folder / "model.py").write_text(MODEL)
    return folder.resolve()


def markers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("marker_"))


def trusted_folder(root: Path) -> Path:
    folder = root / "trusted"
    folder.mkdir()
    (folder / "model.py").write_text(MODEL)
    return folder.resolve()


# How each supported client starts the server: VS Code and the Neovim plugin with `-P` from a
# neutral folder; the Eglot and Helix snippets with `-P` in the project (their editors choose
# the working directory); an old configuration without `-P`, in the project.
LAUNCHES = {
    "vscode-neovim": (["-P", "-m", "torch_mlir_lens", "serve"], "neutral"),
    "eglot-helix": (["-P", "-m", "torch_mlir_lens", "serve"], "project"),
    "without-P": (["-m", "torch_mlir_lens", "serve"], "project"),
}


def initialize(server: RawServer, folders: list[Path], options: dict[str, Any]) -> None:
    msg_id = server.request("initialize", {
        "processId": None, "rootUri": folders[0].as_uri(), "capabilities": {},
        "workspaceFolders": [{"uri": f.as_uri(), "name": f.name} for f in folders],
        "initializationOptions": {"settings": {}, **options}})
    reply = server.response(msg_id, 60)
    assert "result" in reply, reply
    server.notify("initialized", {})


def lower(server: RawServer, path: Path, timeout: float = 120) -> dict[str, Any]:
    """`torchMlirLens/lower` of the file's `Tiny`, by URI (the file is never opened)."""
    msg_id = server.request("torchMlirLens/lower", {
        "uri": path.as_uri(), "module": "Tiny", "target": "linalg"})
    return server.response(msg_id, timeout)


def shown(server: RawServer) -> list[str]:
    return [m["params"]["message"] for m in server.received
            if m.get("method") == "window/showMessage"]


@pytest.fixture
def servers() -> Iterator[list[RawServer]]:
    started: list[RawServer] = []
    yield started
    for server in started:
        server.kill()


@pytest.mark.parametrize("launch", sorted(LAUNCHES))
def test_no_workspace_module_is_imported_before_trust(
        launch: str, tmp_path: Path, servers: list[RawServer]) -> None:
    """The server, its early worker and the worker that lowers import nothing of an
    untrusted folder, started as each client starts it; the trusted folder's file lowers."""
    hostile, trusted = hostile_folder(tmp_path), trusted_folder(tmp_path)
    neutral = tmp_path / "neutral"
    neutral.mkdir()
    args, where = LAUNCHES[launch]
    server = RawServer(hostile, command=[sys.executable, *args],
                       cwd=neutral if where == "neutral" else hostile)
    servers.append(server)
    # Both folders are in the workspace; only `trusted` is trusted: the worker starts.
    initialize(server, [hostile, trusted], {"trusted": True,
                                            "trustedFolders": [trusted.as_uri()]})
    answer = lower(server, trusted / "model.py")
    assert "linalg.matmul" in answer["result"]["ir"], answer
    assert (trusted / "model.py.ran").exists()
    refused = lower(server, hostile / "model.py")["result"]
    assert refused["error"]["kind"] == "untrusted", refused
    assert not (hostile / "model.py.ran").exists()
    server.sample_processes()
    assert markers(hostile) == [], f"imported from the untrusted folder: {markers(hostile)}"


def test_interpreter_checks_import_nothing_from_the_project(tmp_path: Path) -> None:
    """The VS Code extension's and the Neovim plugin's interpreter probes, run as they run
    them (`python -c PROBE`) in the project: the project's json.py does not run."""
    hostile = hostile_folder(tmp_path)
    probes = {
        "client/src/serverCheck.ts": re.compile(r"const PROBE = `\n(.*?)`;", re.S),
        "editors/nvim/lua/torch_mlir_lens/interpreter.lua":
            re.compile(r"local PROBE = \[\[\n(.*?)\]\]", re.S),
    }
    for file, pattern in probes.items():
        found = pattern.search((REPO / file).read_text())
        assert found, f"no PROBE in {file}"
        # The module list is spliced in by the client; any list will do here.
        code = found.group(1).replace("${JSON.stringify(Object.keys(REQUIRED))}", '["torch"]')
        code = code.replace("%s", '["torch"]')
        done = subprocess.run([sys.executable, "-c", code], cwd=hostile, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert '"missing": []' in done.stdout, done.stdout
        assert markers(hostile) == [], f"{file}'s probe imported {markers(hostile)}"


def test_trust_of_one_folder_covers_no_other(tmp_path: Path, servers: list[RawServer]) -> None:
    """Folder A is trusted; a folder B added later and a file outside every folder (asked
    for by URI, never opened) run nothing, and the user is told once per folder; trusting B
    by name then lowers it."""
    a = trusted_folder(tmp_path)
    b = tmp_path / "b"
    b.mkdir()
    (b / "model.py").write_text(MODEL)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "model.py").write_text(MODEL)
    server = RawServer(a, command=[sys.executable, "-P", "-m", "torch_mlir_lens", "serve"],
                       cwd=tmp_path)
    servers.append(server)
    initialize(server, [a], {"trusted": True})  # the workspace's folders at initialize
    server.notify("workspace/didChangeWorkspaceFolders", {"event": {
        "added": [{"uri": b.as_uri(), "name": "b"}], "removed": []}})
    for path in (b / "model.py", outside / "model.py", b / "model.py"):
        answer = lower(server, path)["result"]
        assert answer["error"]["kind"] == "untrusted", answer
        assert "not a trusted folder" in answer["error"]["message"]
    assert not (b / "model.py.ran").exists() and not (outside / "model.py.ran").exists()
    told = [m for m in shown(server) if "not" in m and "trusted" in m]
    assert len([m for m in told if str(b.resolve()) in m]) == 1, told  # once for B
    assert len([m for m in told if str(outside.resolve()) in m]) == 1, told

    answer = lower(server, a / "model.py")["result"]  # A is still trusted
    assert "linalg.matmul" in answer["ir"], answer
    server.notify("torchMlirLens/setTrusted", {"trusted": True, "folders": [b.as_uri()]})
    answer = lower(server, b / "model.py")["result"]
    assert "linalg.matmul" in answer["ir"], answer
    assert (b / "model.py.ran").exists()
    assert not (outside / "model.py.ran").exists()
    # A symlink inside the trusted folder does not carry trust to where it points.
    (a / "link").symlink_to(outside, target_is_directory=True)
    answer = lower(server, a / "link" / "model.py")["result"]
    assert answer["error"]["kind"] == "untrusted", answer
    assert not (outside / "model.py.ran").exists()


def test_special_files_and_huge_documents(tmp_path: Path, servers: list[RawServer]) -> None:
    """`file:///dev/zero` and `file:///dev/stdin` are refused at once with a small server;
    a 50 MB document does not hold up a hover on another one."""
    ws = trusted_folder(tmp_path)
    server = RawServer(ws, command=[sys.executable, "-P", "-m", "torch_mlir_lens", "serve"],
                       cwd=tmp_path)
    servers.append(server)
    initialize(server, [ws], {"trusted": False})
    server.response(server.request("torchMlirLens/serverInfo", {}), 60)  # fully started
    os.mkfifo(tmp_path / "fifo.py")
    for uri in ("file:///dev/zero", "file:///dev/stdin", (tmp_path / "fifo.py").as_uri()):
        msg_id = server.request("torchMlirLens/modules", {"uri": uri})
        reply = server.response(msg_id, 5)
        assert server.latency(msg_id) < 1.0, (uri, server.latency(msg_id))
        assert "not a regular file" in reply["error"]["message"], reply
    rss_mb = procs_rss_mb(server.proc.pid)
    assert rss_mb < 200, f"server RSS {rss_mb:.0f} MB after the special files"

    small = server.open(ws / "model.py")
    server.open(tmp_path / "huge.py", "x = 1  # padding\n" * 3_000_000)  # 51 MB
    msg_id = server.request("textDocument/hover", {
        "textDocument": {"uri": small}, "position": {"line": 15, "character": 12}})
    server.response(msg_id, 30)
    assert server.latency(msg_id) < 1.0, server.latency(msg_id)
    diagnostics = wait_diagnostics(server, (tmp_path / "huge.py").as_uri())
    assert any("does not analyse this file" in d["message"] for d in diagnostics), diagnostics


def procs_rss_mb(pid: int) -> float:
    return float(psutil.Process(pid).memory_info().rss) / 1e6


def wait_diagnostics(server: RawServer, uri: str, timeout: float = 10) -> list[dict[str, Any]]:
    def published() -> list[dict[str, Any]] | None:
        for message in reversed(server.received):
            if (message.get("method") == "textDocument/publishDiagnostics"
                    and message["params"]["uri"] == uri):
                return list(message["params"]["diagnostics"])
        return None

    procs.wait_until(lambda: published() is not None, timeout, f"diagnostics of {uri}")
    return published() or []


def test_malformed_trust_statements_change_nothing_and_pop_nothing(
        tmp_path: Path, servers: list[RawServer]) -> None:
    """A `setTrusted` notification with a non-boolean, or folders that are not a list of
    URIs, leaves trust as it was, shows the user no error, and the server answers on."""
    ws = trusted_folder(tmp_path)
    server = RawServer(ws, command=[sys.executable, "-P", "-m", "torch_mlir_lens", "serve"],
                       cwd=tmp_path)
    servers.append(server)
    initialize(server, [ws], {"trusted": False})
    server.response(server.request("torchMlirLens/serverInfo", {}), 30)  # past `initialized`
    before = len(shown(server))
    for params in ({"trusted": "yes"}, {"trusted": 1}, {"trusted": True, "folders": "file:///"},
                   {"trusted": True, "folders": [42]}, {}):
        server.notify("torchMlirLens/setTrusted", params)
    info = server.response(server.request("torchMlirLens/serverInfo", {}), 30)["result"]
    assert info["trusted"] is False and info["trustedFolders"] == [], info
    assert len(shown(server)) == before, shown(server)[before:]
    refused = lower(server, ws / "model.py")["result"]
    assert refused["error"]["kind"] == "untrusted", refused
