"""The start-up front (lsp/front.py): it answers `initialize` and the first lenses before the
full server is loaded, with the very answers the full server gives, and hands everything it
took to the full server without a second answer.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.harness.lsp_session import child_env, server_command

from torch_mlir_lens.lsp.front import Front, InitializeAnswers

REPO = Path(__file__).resolve().parents[2]
MLP = REPO / "examples" / "mlp.py"
CAPABILITIES = {"textDocument": {"codeLens": {}}, "workspace": {"configuration": False}}
# An unsaved buffer: one module more than the file on disk, so that what the full server
# knows of the document after the hand-over can only come from the didOpen the front took.
EXTRA = "\n\n# torch-mlir-lens: inputs=(torch.randn(2, 3),)\nclass Unsaved(nn.Module):\n" \
        "    def forward(self, x):\n        return x * 2\n"


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def messages(data: bytes) -> list[dict[str, Any]]:
    """The JSON messages of a captured byte stream (pygls's and the front's framing)."""
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length"))
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out


def session(settings: dict[str, Any], text: str) -> list[dict[str, Any]]:
    """What a client sends first: initialize, initialized, didOpen, codeLens, then a request
    only the full server answers (the module list of the open document)."""
    uri = MLP.as_uri()
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": REPO.as_uri(), "capabilities": CAPABILITIES,
            "initializationOptions": {"trusted": False, "settings": settings}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}}},
        {"jsonrpc": "2.0", "id": 2, "method": "textDocument/codeLens",
         "params": {"textDocument": {"uri": uri}}},
        {"jsonrpc": "2.0", "id": 3, "method": "torchMlirLens/modules", "params": {"uri": uri}},
        {"jsonrpc": "2.0", "id": 4, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]


def run_server(cache_home: Path, settings: dict[str, Any], text: str) -> list[dict[str, Any]]:
    """A real server over stdio (as editors start it), sent the session's first messages at
    once, then shutdown and exit once they are answered; every message it wrote."""
    script = session(settings, text)
    proc = subprocess.Popen(server_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=cache_home,
                            env=child_env({"XDG_CACHE_HOME": str(cache_home)}))
    assert proc.stdin is not None and proc.stdout is not None
    out: list[dict[str, Any]] = []

    def until_answered(msg_id: int) -> None:
        while not any(m.get("id") == msg_id and "method" not in m for m in out):
            out.append(read_message(proc.stdout))

    try:
        proc.stdin.write(b"".join(frame(m) for m in script[:5]))
        proc.stdin.flush()
        until_answered(3)
        proc.stdin.write(frame(script[5]))
        proc.stdin.flush()
        until_answered(4)
        proc.stdin.write(frame(script[6]))
        proc.stdin.close()
        assert proc.wait(60) == 0
    finally:
        proc.kill()
        proc.wait()
    return out


def read_message(stream: Any) -> dict[str, Any]:
    length = None
    while (line := stream.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length"):
            length = int(line.split(b":")[1])
    assert length is not None, "the server closed its output"
    return dict(json.loads(stream.read(length)))


def answers(output: list[dict[str, Any]]) -> dict[int, Any]:
    """id → result of each response (a second response to one id fails the test)."""
    out: dict[int, Any] = {}
    for message in output:
        if "id" in message and "method" not in message:
            assert message["id"] not in out, f"two answers to request {message['id']}"
            out[message["id"]] = message.get("result", message.get("error"))
    return out


def test_the_front_answers_as_the_full_server_does(tmp_path: Path) -> None:
    """The first start has no kept answer: the full server answers `initialize` and keeps it.
    The second start's answers (the front's, from the kept one) are the same, for the same
    settings; a request only the full server answers sees the document the front took."""
    settings = {"lensTargets": ["linalg", "stablehlo"], "defaultTarget": "tosa"}
    text = MLP.read_text() + EXTRA
    first = answers(run_server(tmp_path, settings, text))
    kept = list(tmp_path.rglob("initialize-answers.json"))
    assert len(kept) == 1, "the full server's answer to initialize was not kept"
    second = answers(run_server(tmp_path, settings, text))
    assert second[1] == first[1]
    assert second[2] == first[2]
    titles = [lens["command"]["title"] for lens in second[2]]
    assert "Show StableHLO IR" in titles and "Show TOSA IR" not in titles, titles
    exports = [lens["command"]["arguments"][0] for lens in second[2]
               if lens["command"]["title"] == "Export…"]
    assert exports and all(a["target"] == "tosa" for a in exports), exports
    assert "Unsaved" in {m["name"] for m in second[3]["modules"]}, second[3]
    assert second[4] is None  # shutdown answered: the full server took over


class Captured:
    """A writer that keeps what is written."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    def close(self) -> None:
        pass


def test_the_front_waits_for_nothing_it_can_answer(tmp_path: Path) -> None:
    """In process: with a kept answer, `initialize` and the lenses are answered before the full
    server is made; the first request the front cannot answer makes it, and every message
    taken is handed over, pygls's answer to `initialize` dropped."""
    from torch_mlir_lens.lsp.server import create_server

    store = InitializeAnswers(tmp_path / "answers.json")
    script = session({}, MLP.read_text())
    store.put(store.key(script[0]["params"]), {"capabilities": {"kept": True}})
    writer = Captured()
    loaded: list[Any] = []

    def load() -> Any:
        loaded.append(create_server())
        return loaded[-1]

    front = Front(writer, store, load)  # type: ignore[arg-type]
    # A client that states trust after `initialize` (Neovim's plugin, the benchmark) still
    # gets its lenses from the front; the statement reaches the full server, in order.
    trust = {"jsonrpc": "2.0", "method": "torchMlirLens/setTrusted", "params": {"trusted": True}}
    for message in [*script[:2], trust, *script[2:4]]:
        front.receive(message)
    assert loaded == [], "the full server was made before the front's answers"
    early = answers(messages(writer.data))
    assert early[1] == {"capabilities": {"kept": True}}
    assert any(lens["command"]["title"] == "Show Linalg IR" for lens in early[2])

    front.receive(script[4])  # the module list: only the full server answers it
    assert len(loaded) == 1
    everything = answers(messages(writer.data))  # no second answer to 1 or 2
    assert {m["name"] for m in everything[3]["modules"]} >= {"MLP"}
    assert loaded[0].session.store.get(MLP.as_uri()) is not None  # the didOpen was handed over
    assert loaded[0].session.trusted  # and the trust statement


def test_no_kept_answer_for_other_capabilities(tmp_path: Path) -> None:
    """The kept answer is for one client's capabilities and this build only."""
    store = InitializeAnswers(tmp_path / "answers.json")
    store.put(store.key({"capabilities": CAPABILITIES}), {"capabilities": {}})
    assert store.get(store.key({"capabilities": CAPABILITIES})) is not None
    assert store.get(store.key({"capabilities": {**CAPABILITIES, "general": {}}})) is None
    (tmp_path / "answers.json").write_text("not json")
    assert store.get(store.key({"capabilities": CAPABILITIES})) is None
    store.put(store.key({"capabilities": CAPABILITIES}), {"capabilities": {"again": 1}})
    assert store.get(store.key({"capabilities": CAPABILITIES})) == {"capabilities": {"again": 1}}


def test_a_client_that_asks_for_no_lens_still_gets_the_full_server(tmp_path: Path) -> None:
    """With a kept answer, a client that sends nothing the front must answer after
    `initialize` (it waits for diagnostics the server sends by itself) gets them: the front
    hands over once the client is quiet."""
    run_server(tmp_path, {}, MLP.read_text())  # keeps the answer to initialize
    doc = tmp_path / "no_inputs.py"
    doc.write_text("import torch.nn as nn\n\n\nclass NoInputs(nn.Module):\n"
                   "    def forward(self, x):\n        return x\n")
    script = session({}, doc.read_text())
    script[2]["params"]["textDocument"]["uri"] = doc.as_uri()
    proc = subprocess.Popen(server_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=tmp_path,
                            env=child_env({"XDG_CACHE_HOME": str(tmp_path)}))
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b"".join(frame(m) for m in script[:3]))  # no lens request
        proc.stdin.flush()
        while True:  # a wait that only a hang reaches: the test's own time-out
            message = read_message(proc.stdout)
            if (message.get("method") == "textDocument/publishDiagnostics"
                    and message["params"]["uri"] == doc.as_uri()):
                break
        assert any("no example inputs" in d["message"]
                   for d in message["params"]["diagnostics"]), message
    finally:
        proc.kill()
        proc.wait()
