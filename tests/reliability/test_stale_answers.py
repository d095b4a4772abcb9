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


@pytest.mark.parametrize("how", ["saved in the editor", "watched-file event"])
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
    else:
        rewrite(acts, EXP)
        server.notify("workspace/didChangeWatchedFiles", {"changes": [
            {"uri": acts.as_uri(), "type": 2}]})
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
