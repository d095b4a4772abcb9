"""Traffic no well-behaved client sends: broken framing, broken JSON, unknown methods, bad params,
documents never opened, huge documents, requests out of order, a client that vanishes.

The server must answer as JSON-RPC / LSP say, or exit cleanly when the client is gone; never
hang, never put anything but framed JSON-RPC on stdout.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import procs
from .rawrpc import RawServer, encode, frame

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
# Bounds on waiting for an answer at all (a hang or a dead server fails them), never speed
# targets: how fast big files are answered is bench figure 3's.
ANSWER_S = 60.0
HUGE_ANSWER_S = 180.0  # a 10 MB document is parsed first


@pytest.fixture
def raw(workspace: Path, server_tmp: Path) -> Iterator[RawServer]:
    server = RawServer(workspace, server_tmp)
    yield server
    server.kill()


def assert_stdout_clean(server: RawServer) -> None:
    assert not server.garbage, f"non-protocol bytes on stdout: {bytes(server.garbage[:500])!r}"


def assert_still_answers(server: RawServer) -> None:
    """A cheap request still gets its answer: the server neither died nor wedged."""
    reply = server.response(server.request("torchMlirLens/serverInfo", {}), ANSWER_S)
    assert "result" in reply, reply
    assert_stdout_clean(server)


def assert_exits_cleanly(server: RawServer, codes: tuple[int, ...] = (0, 1)) -> None:
    """After the client is gone: the server exits by itself, with no process left over."""
    server.sample_processes()
    server.close_stdin()
    code = server.wait_exit(ANSWER_S)
    assert code is not None, "server still running after its client disconnected"
    assert code in codes, f"exit code {code}\n{server.stderr_log.text()[-3000:]}"
    procs.wait_until(
        lambda: not any(procs.alive(p) for p in server.seen_pids), 10, "the server's children"
    )
    assert_stdout_clean(server)


def error_code(reply: dict[str, Any]) -> int | None:
    return reply.get("error", {}).get("code") if "error" in reply else None


def test_unknown_methods(raw: RawServer) -> None:
    raw.initialize()
    reply = raw.response(raw.request("torchMlirLens/noSuchThing", {}), ANSWER_S)
    assert error_code(reply) == METHOD_NOT_FOUND, reply
    reply = raw.response(raw.request("textDocument/noSuchThing", {}), ANSWER_S)
    assert error_code(reply) == METHOD_NOT_FOUND, reply
    reply = raw.response(raw.request("workspace/executeCommand",
                                     {"command": "torchMlirLens.noSuchCommand", "arguments": []}),
                         ANSWER_S)
    assert "error" in reply and error_code(reply) != INTERNAL_ERROR, reply
    for command in ("torchMlirLens.exportModule", "torchMlirLens.exportRepro",
                    "torchMlirLens.explainInputs", "torchMlirLens.verify"):
        for arguments in ([], [None], [42], ["file:///x.py"], [{"uri": 1}]):
            reply = raw.response(raw.request("workspace/executeCommand", {
                "command": command, "arguments": arguments}), ANSWER_S)
            assert "error" in reply and error_code(reply) != INTERNAL_ERROR, (command, reply)
    raw.notify("$/noSuchNotification", {"x": 1})  # $/ notifications: ignore silently
    raw.notify("custom/noSuchNotification", {"x": 1})
    assert_still_answers(raw)
    assert_exits_cleanly(raw)


def test_malformed_json_and_framing(raw: RawServer) -> None:
    raw.initialize()
    raw.send_bytes(frame(b'{"jsonrpc": "2.0", "id": 7, "method": '))  # cut-off JSON
    raw.send_bytes(frame(b"\xff\xfe not utf-8 \x80"))
    raw.send_bytes(frame(b"[1, 2, 3]"))  # JSON, but not a message
    raw.send_bytes(frame(b'"just a string"'))
    raw.send_bytes(frame(b"{}"))  # no jsonrpc member
    raw.send_bytes(b"this is not a header\r\nX-Junk: 1\r\n")  # junk lines before a frame
    raw.send(
        [{"jsonrpc": "2.0", "id": 8, "method": "shutdown"}]  # type: ignore[arg-type]
    )  # a batch: LSP has none
    assert_still_answers(raw)
    for reply in raw.received:
        if "error" in reply:  # any error sent must be a well-formed JSON-RPC error
            assert isinstance(reply["error"].get("code"), int), reply
    assert_exits_cleanly(raw)


def test_invalid_params_get_an_error_response(raw: RawServer) -> None:
    """A request whose params do not fit its method still gets a response (-32602)."""
    raw.initialize()
    reply = raw.response(raw.request("textDocument/hover", {"bogus": True}), ANSWER_S)
    assert error_code(reply) == INVALID_PARAMS, reply
    reply = raw.response(raw.request("textDocument/codeLens", []), ANSWER_S)
    assert error_code(reply) == INVALID_PARAMS, reply
    assert_still_answers(raw)


def test_custom_requests_with_bad_params(raw: RawServer) -> None:
    """Custom requests validate their params (absent ones too, which JSON-RPC allows): a
    response every time, and not an internal error."""
    raw.initialize()
    for params in ({}, {"uri": 42}, {"uri": "file:///x.py", "position": "nope"}, None, [1]):
        for method in ("torchMlirLens/lower", "torchMlirLens/modules"):
            reply = raw.response(raw.request(method, params), ANSWER_S)
            assert "result" in reply or error_code(reply) != INTERNAL_ERROR, (method, reply)
    assert_still_answers(raw)


def test_bad_params_name_the_field(raw: RawServer) -> None:
    """The typed requests and commands (`protocol.lsp`) answer InvalidParams naming the field
    that is wrong, for requests and command arguments alike."""
    raw.initialize()
    cases = [
        ("torchMlirLens/lower", {"module": "M"}, "$.params.uri"),
        ("torchMlirLens/lower", {"uri": "file:///x.py", "position": "nope"}, "$.params.position"),
        ("torchMlirLens/verify", {"uri": "file:///x.py"}, "$.params.module"),
        ("torchMlirLens/modules", {}, "$.params.uri"),
        # Values of the wrong JSON type are refused, not converted ({"uri": 42} is not "42").
        ("torchMlirLens/lower", {"uri": 42, "module": "M"}, "expected str @ $.params.uri"),
        ("torchMlirLens/lower", {"uri": "file:///x.py", "module": "M", "printAfterAll": 1},
         "expected bool @ $.params.printAfterAll"),
        ("torchMlirLens/verify", {"uri": "file:///x.py", "module": "M", "rtol": "0.1"},
         "$.params.rtol"),
    ]
    for method, params, where in cases:
        reply = raw.response(raw.request(method, params), ANSWER_S)
        assert error_code(reply) == INVALID_PARAMS, (method, reply)
        message = reply["error"]["message"]
        assert message.startswith(f"invalid params for {method}: ") and where in message, reply
    reply = raw.response(raw.request("workspace/executeCommand", {
        "command": "torchMlirLens.exportModule",
        "arguments": [{"uri": "file:///x.py", "target": "tosa"}]}), ANSWER_S)
    assert error_code(reply) == INVALID_PARAMS, reply
    assert "argument.module" in reply["error"]["message"], reply
    assert_still_answers(raw)


def test_documents_never_opened(raw: RawServer, workspace: Path) -> None:
    """Requests about documents the client never opened: an answer (or an error that is not
    an internal one), for a file that exists on disk and for one that does not."""
    raw.initialize()
    # Names no file can have (a NUL byte, a lone surrogate) were internal errors everywhere.
    odd = [(workspace / "a").as_uri() + "%00b.py", (workspace / "a").as_uri() + "%ED%A0%80.py"]
    for uri in ((workspace / "healthy.py").as_uri(), (workspace / "missing.py").as_uri(), *odd):
        td = {"textDocument": {"uri": uri}}
        pos = {**td, "position": {"line": 3, "character": 2}}
        for method, params in (
            ("textDocument/hover", pos),
            ("textDocument/codeLens", td),
            ("textDocument/codeAction", {**td, "range": {"start": pos["position"],
                                                          "end": pos["position"]},
                                         "context": {"diagnostics": []}}),
            ("torchMlirLens/modules", {"uri": uri}),
            ("torchMlirLens/lower", {"uri": uri, "module": "Healthy"}),
            ("workspace/executeCommand", {"command": "torchMlirLens.explainInputs",
                                          "arguments": [{"uri": uri, "module": "Healthy"}]}),
        ):
            reply = raw.response(raw.request(method, params), ANSWER_S)
            assert error_code(reply) != INTERNAL_ERROR, (method, uri, reply)
        raw.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"text": "x = 1\n"}],
        })
        raw.notify("textDocument/didSave", td)
        raw.notify("textDocument/didClose", td)
    assert_still_answers(raw)


def test_huge_documents(raw: RawServer, workspace: Path) -> None:
    """A 10 MB file (275k statements) and a 5 MB single line: lenses and module list still
    answer (empty: a document over 1 MB is not parsed, and says so), and the server's memory
    stays bounded."""
    raw.initialize()
    big = "import torch\nfrom torch import nn\n" + "x = 1  # filler line of a huge file\n" * 275_000
    big += "class Tail(nn.Module):\n    def forward(self, x):\n        return x\n"
    wide = "import torch\nfrom torch import nn\nS = '" + "a" * 5_000_000 + "'\n"
    for name, text in (("big.py", big), ("wide.py", wide)):
        uri = (workspace / name).as_uri()
        raw.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}})
        lens = raw.response(raw.request("textDocument/codeLens", {"textDocument": {"uri": uri}}),
                            HUGE_ANSWER_S)
        assert "result" in lens, lens
        mods = raw.response(raw.request("torchMlirLens/modules", {"uri": uri}), HUGE_ANSWER_S)
        assert "result" in mods, mods
        hover = raw.response(raw.request("textDocument/hover", {
            "textDocument": {"uri": uri}, "position": {"line": 2, "character": 4_000_000}}),
            HUGE_ANSWER_S)
        assert error_code(hover) != INTERNAL_ERROR, hover
    assert mods_of(raw, (workspace / "big.py").as_uri()) == []
    procs.wait_until(lambda: any(
        m.get("method") == "textDocument/publishDiagnostics"
        and m["params"]["uri"] == (workspace / "big.py").as_uri()
        and any("does not analyse this file" in d["message"] for d in m["params"]["diagnostics"])
        for m in raw.received), ANSWER_S, "the too-large warning on big.py")
    assert procs.rss_mb(raw.proc.pid) < 1024, "server RSS above 1 GB after two huge documents"
    assert_still_answers(raw)


def mods_of(raw: RawServer, uri: str) -> list[dict[str, Any]]:
    reply = raw.response(raw.request("torchMlirLens/modules", {"uri": uri}), HUGE_ANSWER_S)
    return reply["result"]["modules"]


def test_request_before_initialize(raw: RawServer, workspace: Path) -> None:
    """LSP: before `initialize`, requests get -32002 (ServerNotInitialized)."""
    uri = (workspace / "healthy.py").as_uri()
    reply = raw.response(raw.request("textDocument/codeLens", {"textDocument": {"uri": uri}}),
                         ANSWER_S)
    assert error_code(reply) == SERVER_NOT_INITIALIZED, reply
    raw.initialize()
    assert_still_answers(raw)


def test_shutdown_then_exit(raw: RawServer) -> None:
    """shutdown → requests are refused (-32600), exit → code 0, no process left."""
    raw.initialize()
    assert "result" in raw.response(raw.request("shutdown"), ANSWER_S)
    reply = raw.response(raw.request("torchMlirLens/serverInfo", {}), ANSWER_S)
    assert error_code(reply) == INVALID_REQUEST, reply
    raw.sample_processes()
    raw.notify("exit")
    assert raw.wait_exit(ANSWER_S) == 0
    assert_stdout_clean(raw)


def test_exit_without_shutdown(raw: RawServer) -> None:
    """LSP: exit without shutdown → exit code 1."""
    raw.initialize()
    raw.sample_processes()
    raw.notify("exit")
    assert raw.wait_exit(ANSWER_S) == 1
    assert_stdout_clean(raw)


def test_disconnect_mid_request(raw: RawServer, workspace: Path) -> None:
    """The client vanishes with requests in flight: the server exits, taking its worker along."""
    raw.initialize(trusted=True)
    uri = (workspace / "hang_init.py").as_uri()
    raw.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1,
        "text": (workspace / "hang_init.py").read_text()}})
    raw.request("torchMlirLens/lower", {"uri": uri, "module": "HangInit"})
    raw.request("textDocument/hover", {"textDocument": {"uri": uri},
                                       "position": {"line": 10, "character": 8}})
    procs.wait_until(lambda: procs.descendants(raw.proc.pid), 30, "the worker to start")
    assert_exits_cleanly(raw)


def test_disconnect_mid_frame(raw: RawServer) -> None:
    """The client dies half-way through a message (header promises more than comes)."""
    raw.initialize()
    body = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "shutdown"}).encode()
    raw.send_bytes(b"Content-Length: %d\r\n\r\n" % (len(body) + 1000) + body)
    assert_exits_cleanly(raw)


def test_absurd_content_length(raw: RawServer) -> None:
    """A header announcing a terabyte must not make the server allocate it or hang; the
    server may give up on such a client (any exit code), but must end."""
    raw.initialize()
    raw.send_bytes(b"Content-Length: 1000000000000\r\n\r\n{}")
    raw.sample_processes()
    if raw.alive():
        assert procs.rss_mb(raw.proc.pid) < 1024
    assert_exits_cleanly(raw, codes=tuple(range(-64, 256)))


def test_garbage_only_client(raw: RawServer) -> None:
    """A client that speaks no LSP at all: the server must not hang once it goes away."""
    raw.send_bytes(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n" + encode({"hello": "world"}))
    assert_exits_cleanly(raw)


GARBAGE_SETTINGS: dict[str, Any] = {
    "defaultTarget": "no-such-target",
    "lensTargets": "linalg",  # a string, not a list
    "diagnostics": "sometimes",
    "diagnosticTargets": [1, None, "tosa"],
    "timeoutSeconds": -5,
    "memoryLimitMb": "lots",
    "exampleInputs": ["not", "a", "mapping"],
    "pipelines": {"bad": 42},
    "strictExport": "yes",
}


def test_garbage_settings(raw: RawServer, workspace: Path) -> None:
    """Settings of the wrong type or out of range (in initializationOptions and in a change):
    the server starts, keeps sane values, and answers; no traceback."""
    raw.settings = dict(GARBAGE_SETTINGS)
    raw.initialize(trusted=False)
    raw.notify("workspace/didChangeConfiguration",
               {"settings": {"torchMlirLens": {**GARBAGE_SETTINGS, "timeoutSeconds": "x"}}})
    raw.notify("workspace/didChangeConfiguration", {"settings": None})
    raw.notify("workspace/didChangeConfiguration", {"settings": {"torchMlirLens": 7}})
    uri = raw.open(workspace / "healthy.py")
    lens = raw.response(raw.request("textDocument/codeLens", {"textDocument": {"uri": uri}}),
                        ANSWER_S)
    assert lens.get("result"), lens
    info = raw.response(raw.request("torchMlirLens/serverInfo", {}), ANSWER_S)["result"]
    settings = info["settings"]
    assert settings["timeoutSeconds"] > 0, settings
    assert isinstance(settings["memoryLimitMb"], int | float), settings
    assert isinstance(settings["lensTargets"], list), settings
    assert settings["diagnostics"] in ("onSave", "onType", "off"), settings
    assert not raw.stderr_log.tracebacks, raw.stderr_log.tracebacks[0]
