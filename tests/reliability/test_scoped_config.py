"""Configuration is scoped to its folder (docs/security.md, "Configuration"): a module's
settings come from its own trusted workspace folder's pyproject.toml, never from another
folder's nor from a folder above the workspace folder, and no configured string is evaluated
unless that folder is trusted. Written as the attacks that once ran code.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .rawrpc import RawServer

# A module without inputs of its own: the product infers some (its first layer's shape)
# unless a pyproject's `exampleInputs` names them (the answer's `inputs_source` says which).
MODEL = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return torch.relu(self.fc(x))
    """)


def pyproject(folder: Path, marker: Path) -> None:
    """`[tool.torch-mlir-lens.exampleInputs]` whose expression leaves `marker` when evaluated."""
    expr = f"(open({str(marker)!r}, 'w').close(), torch.randn(2, 4))[1:]"
    (folder / "pyproject.toml").write_text(
        f'[tool.torch-mlir-lens.exampleInputs]\n"M" = "{expr}"\n')


@pytest.fixture
def servers() -> Iterator[list[RawServer]]:
    started: list[RawServer] = []
    yield started
    for server in started:
        server.kill()


def start(servers: list[RawServer], cwd: Path, folders: list[Path],
          options: dict[str, Any]) -> RawServer:
    server = RawServer(cwd, command=[sys.executable, "-P", "-m", "torch_mlir_lens", "serve"],
                       cwd=cwd)
    servers.append(server)
    msg_id = server.request("initialize", {
        "processId": None, "rootUri": folders[0].as_uri(), "capabilities": {},
        "workspaceFolders": [{"uri": f.as_uri(), "name": f.name} for f in folders],
        "initializationOptions": {"settings": {}, **options}})
    assert "result" in server.response(msg_id, 60)
    server.notify("initialized", {})
    return server


def lower(server: RawServer, path: Path) -> dict[str, Any]:
    msg_id = server.request("torchMlirLens/lower", {
        "uri": path.as_uri(), "module": "M", "target": "linalg"})
    reply = server.response(msg_id, 180)
    assert "result" in reply, reply
    return reply["result"]


def test_another_folders_pyproject_never_configures_a_trusted_module(
        tmp_path: Path, servers: list[RawServer]) -> None:
    """Finding 1: in a multi-root workspace where only A is trusted, B's exampleInputs were
    evaluated for A's module when B was listed first. Now A's module gets A's own table (its
    marker shows the scoping lets the right one through) and never B's."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "model.py").write_text(MODEL)
    pyproject(b, tmp_path / "b-ran")
    server = start(servers, tmp_path, [b, a], {"trusted": True,
                                              "trustedFolders": [a.as_uri()]})
    answer = lower(server, a / "model.py")
    assert answer["inputsSource"] != "settings", answer["inputsSource"]
    assert not (tmp_path / "b-ran").exists()
    # Trusting B (the attacker's own folder) still gives A nothing of B's.
    server.notify("torchMlirLens/setTrusted", {"trusted": True, "folders": [b.as_uri()]})
    assert lower(server, a / "model.py")["inputsSource"] != "settings"
    assert not (tmp_path / "b-ran").exists()
    # A's own pyproject.toml configures A's module (the test could fail the other way).
    pyproject(a, tmp_path / "a-ran")
    server.notify("workspace/didChangeWatchedFiles", {"changes": [
        {"uri": (a / "pyproject.toml").as_uri(), "type": 1}]})
    answer = lower(server, a / "model.py")
    assert answer["inputsSource"] == "settings" and "linalg.matmul" in answer["ir"], answer
    assert (tmp_path / "a-ran").exists() and not (tmp_path / "b-ran").exists()


def test_a_pyproject_above_the_workspace_folder_configures_nothing(
        tmp_path: Path, servers: list[RawServer]) -> None:
    """Finding 1: a single trusted folder with no repository root above it read the
    pyproject.toml of any ancestor, so one dropped in a shared temporary folder of a
    multi-user machine ran code in someone else's lowering."""
    shared = tmp_path / "shared-tmp"
    workspace = shared / "alice" / "project"
    workspace.mkdir(parents=True)
    (workspace / "model.py").write_text(MODEL)
    pyproject(shared, tmp_path / "planted-ran")
    pyproject(shared / "alice", tmp_path / "planted-ran")
    server = start(servers, tmp_path, [workspace], {"trusted": True})
    answer = lower(server, workspace / "model.py")
    assert answer["inputsSource"] != "settings", answer["inputsSource"]
    assert not (tmp_path / "planted-ran").exists()
    pyproject(workspace, tmp_path / "own-ran")  # the folder's own table: used
    server.notify("workspace/didChangeWatchedFiles", {"changes": [
        {"uri": (workspace / "pyproject.toml").as_uri(), "type": 1}]})
    assert lower(server, workspace / "model.py")["inputsSource"] == "settings"
    assert (tmp_path / "own-ran").exists() and not (tmp_path / "planted-ran").exists()


def test_the_command_line_reads_no_pyproject_above_the_repository(tmp_path: Path) -> None:
    """`check` from a folder with no repository above it reads its own pyproject.toml only;
    inside a repository, up to the repository's root and never above it."""
    from torch_mlir_lens.project.config import discover_config

    pyproject(tmp_path, tmp_path / "x")
    run_here = tmp_path / "work" / "sub"
    run_here.mkdir(parents=True)
    assert discover_config(run_here).path is None  # no repository: not the parent's
    (tmp_path / "work" / ".git").mkdir()
    assert discover_config(run_here).path is None  # a repository: not above its root
    pyproject(tmp_path / "work", tmp_path / "x")
    assert discover_config(run_here).path == str(tmp_path / "work" / "pyproject.toml")


def test_only_a_repository_git_itself_would_take_bounds_the_search(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty `.git` file, or a `.git` of another user, planted in a shared parent folder
    must not make that folder a project whose pyproject.toml configures (and runs code in)
    someone else's `check`."""
    from torch_mlir_lens.project import config

    shared = tmp_path / "shared"
    run_here = shared / "alice" / "proj" / "sub"
    run_here.mkdir(parents=True)
    pyproject(shared, tmp_path / "planted-ran")
    (shared / ".git").write_text("")  # an empty file: not a repository
    assert config.discover_config(run_here).path is None
    (shared / ".git").write_text("gitdir: /elsewhere\n")  # a git file: a repository
    assert config.discover_config(run_here).path == str(shared / "pyproject.toml")
    (shared / ".git").unlink()
    (shared / ".git").mkdir()
    assert config.discover_config(run_here).path == str(shared / "pyproject.toml")
    owner = os.stat(shared / ".git").st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)  # the folder is another user's
    assert config.discover_config(run_here).path is None


def test_a_huge_pyproject_is_refused_by_its_size_not_read(
        tmp_path: Path, servers: list[RawServer]) -> None:
    """Finding 6: a 250 MB pyproject.toml in an untrusted workspace was read whole (12 s to
    `serverInfo`, 528 MB). Untrusted, it is not read at all; trusted, it is refused by its
    size with a message, and the server stays small and quick."""
    import psutil

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "model.py").write_text(MODEL)
    with open(workspace / "pyproject.toml", "wb") as f:  # sparse: no disk is used
        f.write(b"[tool.torch-mlir-lens]\n")
        f.truncate(250_000_000)
    for trusted in (False, True):
        server = start(servers, tmp_path, [workspace], {"trusted": trusted})
        # Not waiting for the worker (a trusted server starts one): the file's read alone.
        msg_id = server.request("torchMlirLens/serverInfo", {"waitForWorker": False})
        assert "result" in server.response(msg_id, 30)
        assert server.latency(msg_id) < 5.0, server.latency(msg_id)
        assert psutil.Process(server.proc.pid).memory_info().rss < 300e6
    assert b"too large to read" in bytes(server.stderr_log.tail)
