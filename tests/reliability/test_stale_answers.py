"""Invalidation follows what a lowering read (docs/security.md, "Caches"): an answer goes when
any file it read changes, whatever its folder, through edits, saves or watched-file events,
and a file saved while a lowering runs leaves no answer behind. Written as the attacks that
once left stale IR: `from lib.acts import act` with `lib` in another folder, edited and saved.
"""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from torch_mlir_lens.engine import Engine, EngineConfig, ModuleJob

from .rawrpc import RawServer

MODEL = textwrap.dedent("""\
    import torch
    import torch.nn as nn

    from lib.acts import act


    # torch-mlir-lens: inputs=(torch.randn(2, 4),)
    class M(nn.Module):
        def forward(self, x):
            return act(x) + 1.0
    """)
TANH = "import torch\n\n\ndef act(x):\n    return torch.tanh(x)\n"
EXP = "import torch\n\n\ndef act(x):\n    return torch.exp(x)\n"


def folders(root: Path) -> tuple[Path, Path]:
    """Workspace folder `a` (the model) and another folder `b` (its `lib`, importable)."""
    a, b = root / "a", root / "b"
    a.mkdir()
    (b / "lib").mkdir(parents=True)
    (a / "model.py").write_text(MODEL)
    (b / "lib" / "__init__.py").write_text("")
    (b / "lib" / "acts.py").write_text(TANH)
    return a, b


@pytest.fixture
def servers() -> Iterator[list[RawServer]]:
    started: list[RawServer] = []
    yield started
    for server in started:
        server.kill()


def lower(server: RawServer, path: Path) -> str:
    msg_id = server.request("torchMlirLens/lower", {
        "uri": path.as_uri(), "module": "M", "target": "linalg"})
    reply = server.response(msg_id, 180)
    assert "result" in reply and reply["result"]["ok"], reply
    return str(reply["result"]["ir"])


def rewrite(path: Path, text: str) -> None:
    """Replace a file's text, its modification time surely moved on."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))


@pytest.mark.parametrize("how", ["saved in the editor", "watched-file event", "on disk only"])
@pytest.mark.parametrize("cache", ["no persistent cache", "persistent cache"])
def test_an_imported_file_of_another_folder_edited_and_saved(
        tmp_path: Path, servers: list[RawServer], monkeypatch: pytest.MonkeyPatch,
        how: str, cache: str) -> None:
    """Finding 4: editing and saving `lib/acts.py` (another folder) left the server's IR of
    `model.py` stale, with or without the persistent cache."""
    a, b = folders(tmp_path)
    # The user's environment makes `lib` importable.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(b), os.environ.get("PYTHONPATH")) if p))
    if cache == "persistent cache":
        monkeypatch.setenv("TORCH_MLIR_LENS_CACHE_DIR", str(tmp_path / "cache"))
    server = RawServer(a, command=[sys.executable, "-P", "-m", "torch_mlir_lens", "serve"],
                       cwd=tmp_path)
    servers.append(server)
    msg_id = server.request("initialize", {
        "processId": None, "rootUri": a.as_uri(), "capabilities": {},
        "workspaceFolders": [{"uri": a.as_uri(), "name": "a"}, {"uri": b.as_uri(), "name": "b"}],
        "initializationOptions": {"settings": {}, "trusted": True,
                                  "trustedFolders": [a.as_uri()]}})
    assert "result" in server.response(msg_id, 60)
    server.notify("initialized", {})
    server.open(a / "model.py")
    assert "math.tanh" in lower(server, a / "model.py")
    acts = b / "lib" / "acts.py"
    if how == "saved in the editor":
        uri = server.open(acts)
        rewrite(acts, EXP)
        server.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": EXP}]})
        server.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    elif how == "watched-file event":
        rewrite(acts, EXP)
        server.notify("workspace/didChangeWatchedFiles", {"changes": [
            {"uri": acts.as_uri(), "type": 2}]})
    else:  # a client without a watcher: nothing is said, the server looks
        rewrite(acts, EXP)
        deadline = time.monotonic() + 60
        while "math.exp" not in lower(server, a / "model.py"):
            assert time.monotonic() < deadline, "a change on disk was never seen"
            time.sleep(0.5)
    ir = lower(server, a / "model.py")
    assert "math.exp" in ir and "math.tanh" not in ir


SLOW_MODEL = textwrap.dedent("""\
    import time

    import torch
    import torch.nn as nn

    from lib.acts import act


    # torch-mlir-lens: inputs=(torch.randn(2, 4),)
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            open({started!r}, "w").close()  # the test saves lib/acts.py now
            time.sleep(4)

        def forward(self, x):
            return act(x) + 1.0
    """)


def test_a_file_saved_during_a_lowering_leaves_no_answer(tmp_path: Path) -> None:
    """Finding 4: an entry recorded file digests taken after the job, so a sibling saved
    while it ran left an entry trusted for ever with the old result. Now the digest is taken
    before the code runs: the answer is given, but kept neither in memory nor on disk, and
    the next lowering (this worker, another engine) sees the saved file."""
    a, b = folders(tmp_path)
    started = tmp_path / "constructing"
    (a / "model.py").write_text(SLOW_MODEL.format(started=str(started)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(b), os.environ.get("PYTHONPATH")) if p))
    config = EngineConfig(python=sys.executable, timeout_s=120, memory_limit_mb=3000, env=env,
                          cache_dir=str(tmp_path / "cache"))
    job = ModuleJob(path=str(a / "model.py"), module="M")

    async def scenario() -> tuple[str, str, str]:
        engine = Engine(config)
        await engine.start()
        try:
            lowering = asyncio.ensure_future(engine.lower(job, targets=["linalg"]))
            deadline = time.monotonic() + 120
            while not started.exists():
                assert time.monotonic() < deadline and not lowering.done()
                await asyncio.sleep(0.05)
            rewrite(b / "lib" / "acts.py", EXP)  # saved while the module is being built
            (during,) = await lowering
            await engine.flush()
            (after,) = await engine.lower(job, targets=["linalg"])
        finally:
            await engine.stop()
        other = Engine(config)  # another process, later: the persistent cache alone
        try:
            (fresh,) = await other.lower(job, targets=["linalg"])
        finally:
            await other.stop()
        return during.ir, after.ir, fresh.ir

    during, after, fresh = asyncio.run(scenario())
    assert "math.tanh" in during  # what the job executed
    assert "math.exp" in after and "math.tanh" not in after
    assert "math.exp" in fresh and "math.tanh" not in fresh


SHADOWED = textwrap.dedent("""\
    import torch
    import torch.nn as nn

    from fakelib import SHIFT


    # torch-mlir-lens: inputs=(torch.randn(2, 4),)
    class M(nn.Module):
        def forward(self, x):
            return x + SHIFT
    """)


def test_a_new_package_that_shadows_an_import_is_seen(tmp_path: Path) -> None:
    """The probe's finding: an answer recorded the files it read, not how its imports
    resolved, so a pull request adding `fakelib/__init__.py` at the repository's root (which
    an import finds before the installed library) left the old answer in place, in the
    persistent cache and in a warm engine, and `check` stayed green."""
    site = tmp_path / "site-packages"  # installed code, as far as anyone can tell
    (site / "fakelib").mkdir(parents=True)
    (site / "fakelib" / "__init__.py").write_text("SHIFT = 0.5\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "model.py").write_text(SHADOWED)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(site), os.environ.get("PYTHONPATH")) if p))
    config = EngineConfig(python=sys.executable, timeout_s=120, memory_limit_mb=3000, env=env,
                          cache_dir=str(tmp_path / "cache"))
    job = ModuleJob(path=str(repo / "model.py"), module="M", workspace=str(repo))

    async def scenario() -> tuple[str, str, str]:
        warm = Engine(config)
        await warm.start()
        try:
            (before,) = await warm.lower(job, targets=["torch"])
            await warm.flush()
            (repo / "fakelib").mkdir()
            planted = repo / "fakelib" / "__init__.py"
            planted.write_text("SHIFT = 7.0\n")
            other = Engine(config)  # another run, later: the persistent cache first
            try:
                (fresh,) = await other.lower(job, targets=["torch"])
                stats = other.persistent_stats
                assert stats is not None and stats.hits == 0 and stats.stale == 1, stats
            finally:
                await other.stop()
            # The warm worker imported the installed fakelib: it must find the new one.
            assert warm.invalidate(str(planted)) == {str(repo / "model.py")}
            (again,) = await warm.lower(job, targets=["torch"])
        finally:
            await warm.stop()
        return before.ir, fresh.ir, again.ir

    before, fresh, again = asyncio.run(scenario())
    assert "5.000000e-01" in before
    assert "7.000000e+00" in fresh and "5.000000e-01" not in fresh
    assert "7.000000e+00" in again and "5.000000e-01" not in again
