"""Load: many requests while the worker is busy, and a very large file.

- 20 concurrent hover and code-lens requests over 5 files while a long lowering runs: all are
  answered with content before the lowering ends (nothing waits behind the worker).
- A 5,000-line file with 200 modules: lenses and the module list stay right after edits, and
  the server's memory stays bounded.

Speed is measured in bench/ (figure 3: lens latency and RSS on a 3,000-line file), not here:
the latencies below are printed for people reading the log, never asserted.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

from . import procs
from .rawrpc import RawServer

FILES = 5


def small_module(k: int) -> str:
    return (
        "import torch\nfrom torch import nn\n\n\n"
        f"# torch-mlir-lens: inputs=(torch.randn(2, {k}),)\n"
        f"class Load{k}(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        f"        self.fc = nn.Linear({k}, 4)\n\n"
        "    def forward(self, x):\n"
        "        y = self.fc(x)\n"
        "        return torch.relu(y)\n"
    )


@pytest.fixture
def raw_trusted(workspace: Path, server_tmp: Path) -> Iterator[RawServer]:
    """A trusted server on raw pipes: latencies are measured where the bytes arrive, without
    the test client's own (slow) conversion of large results into objects."""
    server = RawServer(workspace, server_tmp,
                       settings={"diagnostics": "off", "timeoutSeconds": 60})
    server.initialize(trusted=True)
    yield server
    server.kill()


def test_requests_while_a_long_lowering_runs(raw_trusted: RawServer, workspace: Path) -> None:
    server = raw_trusted
    uris = []
    for k in range(FILES):
        path = workspace / f"load_{k}.py"
        path.write_text(small_module(k + 2))
        uris.append(server.open(path))
        reply = server.response(server.request("torchMlirLens/lower", {
            "uri": uris[-1], "module": f"Load{k + 2}", "target": "linalg"}), 180)
        assert reply.get("result", {}).get("ok"), reply
    slow_uri = server.open(workspace / "slow.py")
    slow = server.request("torchMlirLens/lower",
                          {"uri": slow_uri, "module": "Slow", "target": "linalg"})
    procs.wait_until(lambda: (workspace / "slow_started").exists(), 60, "the slow lowering")

    # Two bursts during the same lowering: the server keeps answering while the worker is busy.
    bursts = [burst(server, uris) for _ in range(2)]
    assert slow not in server.arrived_at, "the lowering ended first: no overlap"
    for lens_s, hover_s in bursts:
        print(f"lens max {lens_s[-1] * 1000:.1f} ms, hover max {hover_s[-1] * 1000:.1f} ms")
    assert server.response(slow, 120)["result"]["ok"]
    assert not server.stderr_log.tracebacks, server.stderr_log.tracebacks[0]


def burst(server: RawServer, uris: list[str]) -> tuple[list[float], list[float]]:
    """20 requests at once (lenses and cached hovers alternating over the files); all must be
    answered with content. Returns the sorted lens and hover latencies."""
    lens_ids, hover_ids = [], []
    for i in range(20):
        td = {"uri": uris[i % len(uris)]}
        if i % 2:  # hover `y = self.fc(x)`: lowered before, so answered from the cache
            hover_ids.append(server.request("textDocument/hover", {
                "textDocument": td, "position": {"line": 11, "character": 10}}))
        else:
            lens_ids.append(server.request("textDocument/codeLens", {"textDocument": td}))
    replies = {i: server.response(i, 60) for i in lens_ids + hover_ids}
    assert all("result" in r for r in replies.values()), replies
    assert all(replies[i]["result"] for i in lens_ids), "a file without lenses"
    assert all(replies[i]["result"] for i in hover_ids), "a cached hover came back empty"
    return (sorted(server.latency(i) for i in lens_ids),
            sorted(server.latency(i) for i in hover_ids))


def big_file(modules: int = 200, lines: int = 5000) -> str:
    """`modules` module classes filling `lines` lines (each class padded with comments)."""
    head = "import torch\nfrom torch import nn\n\n\n"
    per = (lines - 4) // modules
    blocks = []
    for k in range(modules):
        block = [
            f"# torch-mlir-lens: inputs=(torch.randn(2, {k % 16 + 1}),)",
            f"class Block{k}(nn.Module):",
            "    def __init__(self):",
            "        super().__init__()",
            f"        self.fc = nn.Linear({k % 16 + 1}, 8)",
            "",
            "    def forward(self, x):",
            "        y = self.fc(x)",
            "        return torch.relu(y)",
        ]
        block += [f"# padding line {i}" for i in range(per - len(block))]
        blocks.append("\n".join(block))
    body = head + "\n".join(blocks) + "\n"
    return body + "# tail padding\n" * (lines - len(body.splitlines()))


def test_big_file_stays_right_and_bounded(workspace: Path, server_tmp: Path) -> None:
    server = RawServer(workspace, server_tmp, settings={"diagnostics": "off"})
    try:
        server.initialize(trusted=True)
        check_big_file(server, workspace)
    finally:
        server.kill()


def check_big_file(server: RawServer, workspace: Path) -> None:
    text = big_file()
    assert len(text.splitlines()) == 5000
    path = workspace / "big.py"
    path.write_text(text)
    rss_before = procs.rss_mb(server.proc.pid)
    uri = server.open(path, text)
    lens_s, modules_s, cpu_s = [], [], []
    for edit in range(10):
        cpu_before = procs.cpu_seconds(server.proc.pid)
        lens = server.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
        lenses = server.response(lens, 120)["result"]  # answered at all; speed: bench fig. 3
        mods = server.request("torchMlirLens/modules", {"uri": uri})
        modules = server.response(mods, 120)["result"]["modules"]
        lens_s.append(server.latency(lens))
        modules_s.append(server.latency(mods))
        assert len(modules) == 200, len(modules)
        assert len(lenses) >= 200
        if edit:  # the first round includes the didOpen
            cpu_s.append(procs.cpu_seconds(server.proc.pid) - cpu_before)
        at = {"line": edit * 25 + 3, "character": 0}
        server.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": edit + 2},
            "contentChanges": [{"range": {"start": at, "end": at}, "text": f"# edit {edit}\n"}],
        })
    print(f"big file: lens median {statistics.median(lens_s) * 1000:.0f} ms "
          f"max {max(lens_s) * 1000:.0f} ms; modules max {max(modules_s) * 1000:.0f} ms; "
          f"server CPU per edit median {statistics.median(cpu_s) * 1000:.0f} ms")
    grown = procs.rss_mb(server.proc.pid) - rss_before
    assert grown < 150, f"server RSS grew {grown:.0f} MB for one 5,000-line file"
    assert not server.stderr_log.tracebacks, server.stderr_log.tracebacks[0]
