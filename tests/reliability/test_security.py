"""Security and data: what runs, what gets written, and where the server listens.

- Untrusted workspace: no user code at all, whatever the client asks (sentinel files).
- Trusted: only imports, definitions and assignments of a file run (positive controls prove
  the file was executed; the top-level call, loop and `__main__` block never fire).
- Exports land only where the user said, atomically; an export interrupted mid-write leaves
  the previous file; nothing temporary is left; torch-mlir's repro files (with all weights)
  never reach the temp folder.
- TCP mode listens on loopback only.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from . import procs
from .checks import assert_healthy, cleanup, finish, make_workspace
from .rawrpc import encode
from .session import LensSession, SessionFactory, server_command

NEVER = ("sentinel_toplevel_call", "sentinel_toplevel_loop", "sentinel_main")
ALLOWED_WHEN_TRUSTED = ("sentinel_assignment", "sentinel_init")


def settings_inputs(ws: Path) -> dict[str, str]:
    """An `exampleInputs` setting whose expression leaves a sentinel when evaluated."""
    touch = f"__import__('pathlib').Path({str(ws / 'sentinel_settings')!r}).write_text('x')"
    return {"NoInputs": f"{touch} and (torch.randn(2, 4),)"}


def sentinels(ws: Path) -> list[str]:
    return sorted(p.name for p in ws.glob("sentinel_*") if not p.name.endswith(".py"))


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def try_request(session: LensSession, method: str, params: Any, timeout: float = 60) -> Any:
    """A request whose refusal is fine (untrusted); only its side effects are judged."""
    try:
        return session.request(method, params, timeout)
    except JsonRpcException as exc:
        return exc


def every_request(session: LensSession, ws: Path, uri: str, text: str, module: str) -> None:
    """Everything a client can ask about one document, including each command."""
    td = types.TextDocumentIdentifier(uri)
    for line in range(len(text.splitlines())):
        try_request(session, types.TEXT_DOCUMENT_HOVER, session.hover_params(uri, line, 8))
    try_request(session, types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensParams(td))
    everywhere = types.Range(types.Position(0, 0), types.Position(len(text.splitlines()), 0))
    try_request(session, types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionParams(
        td, everywhere, types.CodeActionContext(diagnostics=session.diagnostics(uri))))
    try_request(session, "torchMlirLens/modules", {"uri": uri})
    for target in ("fx", "linalg", "tosa"):
        try_request(session, "torchMlirLens/lower", {"uri": uri, "module": module,
                                                     "target": target})
    try_request(session, "torchMlirLens/lower", {"uri": uri, "position": {"line": 30,
                                                                          "character": 8}})
    try_request(session, "torchMlirLens/verify", {"uri": uri, "module": module})
    args = {"uri": uri, "module": module, "target": "linalg"}
    for command, extra in (
        ("torchMlirLens.exportModule", {"output": str(ws / f"{module}.mlir")}),
        ("torchMlirLens.exportRepro", {"outputDir": str(ws / "repro")}),
        ("torchMlirLens.explainInputs", {}),
        ("torchMlirLens.verify", {}),
        ("torchMlirLens.exportCode", {"target": "tosa"}),
    ):
        try_request(session, types.WORKSPACE_EXECUTE_COMMAND, types.ExecuteCommandParams(
            command=command, arguments=[{**args, **extra}]))
    session.change(uri, text + "\n# edited\n")
    session.save(uri)


def test_untrusted_runs_no_user_code(lens: SessionFactory, workspace: Path) -> None:
    session = lens(trusted=False, settings={"diagnostics": "onType",
                                            "exampleInputs": settings_inputs(workspace)})
    for name, module in (("sentinels.py", "Sentinel"), ("sentinel_importer.py", "NoInputs"),
                         ("healthy.py", "Healthy")):
        path = workspace / name
        uri = session.open(path)
        every_request(session, workspace, uri, path.read_text(), module)
    session.set_settings(diagnostics="onSave", defaultTarget="tosa")
    session.barrier()
    assert sentinels(workspace) == [], "user code ran in an untrusted workspace"
    info = session.server_info()
    assert info["torchImported"] is False
    assert not session.sample_processes(), "an untrusted session started a worker"
    assert not (workspace / "Sentinel.mlir").exists()
    assert_healthy(session)
    finish(session, marker=str(workspace))


@dataclass
class Trusted:
    """One trusted server shared by the data tests (its TMPDIR must stay empty throughout)."""

    session: LensSession
    ws: Path
    tmp: Path


@pytest.fixture(scope="module")
def trusted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trusted]:
    root = tmp_path_factory.mktemp("security")
    ws = make_workspace(root)
    tmp = root / "systmp"
    tmp.mkdir()
    session = LensSession(ws, trusted=True, tmpdir=tmp, settings={
        "timeoutSeconds": 60, "exampleInputs": settings_inputs(ws)})
    try:
        session.start()
        yield Trusted(session, ws, tmp)
    finally:
        cleanup(session, marker=str(ws))


def test_trusted_runs_only_definitions(trusted: Trusted) -> None:
    session, workspace = trusted.session, trusted.ws
    uri = session.open(workspace / "sentinels.py")
    result = session.lower(uri, "Sentinel", "linalg", timeout=180)
    assert result["ok"], result["diagnostics"]
    every_request(session, workspace, uri, (workspace / "sentinels.py").read_text(), "Sentinel")
    found = sentinels(workspace)
    for name in ALLOWED_WHEN_TRUSTED:  # positive controls: the file really was executed
        assert name in found, f"{name} missing: the test would prove nothing"
    fired = [name for name in NEVER if name in found]
    assert not fired, f"statements that must never run did: {fired}"
    # The settings' inputs expression runs when trusted (positive control for the untrusted
    # test, where the same setting must never be evaluated).
    other = session.open(workspace / "sentinel_importer.py")
    assert session.lower(other, "NoInputs", "linalg")["ok"]
    assert "sentinel_settings" in sentinels(workspace)
    assert_healthy(session)


def test_export_writes_only_where_named(trusted: Trusted) -> None:
    session, workspace, server_tmp = trusted.session, trusted.ws, trusted.tmp
    uri = session.open(workspace / "healthy.py")
    out = workspace / "out_named"
    out.mkdir()
    before = files_under(workspace)
    target = out / "healthy.mlir"
    reply = session.execute("torchMlirLens.exportModule", [
        {"uri": uri, "module": "Healthy", "target": "linalg", "output": str(target)}])
    assert Path(reply["path"]) == target, reply
    assert is_ir(target.read_text()), target.read_text()[:200]
    assert files_under(workspace) - before == {target}
    assert not files_under(server_tmp), sorted(files_under(server_tmp))
    # A second export to the same name without overwrite must not replace it silently.
    first = target.read_bytes()
    with contextlib.suppress(JsonRpcException):
        reply = session.execute("torchMlirLens.exportModule", [
            {"uri": uri, "module": "HealthyTwo", "target": "linalg", "output": str(target)}])
        assert Path(reply["path"]) != target, "an existing file was replaced without overwrite"
    assert target.read_bytes() == first
    assert_healthy(session)


def test_interrupted_export_keeps_previous_file(trusted: Trusted) -> None:
    """The worker dies in the middle of the export's write (export_interrupt.py arms it to
    exit on the final rename, or on opening the destination itself): the previous file is
    intact, nothing temporary is left next to it, and the next export succeeds."""
    session, workspace = trusted.session, trusted.ws
    out = workspace / "out"
    out.mkdir()
    dest = out / "model.mlir"
    dest.write_text("PREVIOUS CONTENT\n")
    # Not opened: a diagnostics check of an open document would arm a fresh worker again.
    uri = (workspace / "export_interrupt.py").as_uri()
    with pytest.raises(JsonRpcException) as failure:
        session.execute("torchMlirLens.exportModule", [{
            "uri": uri, "module": "ExportInterrupt", "target": "linalg",
            "output": str(dest), "overwrite": True}])
    hit = workspace / "interrupt_hit.txt"
    assert hit.exists(), f"the export was not interrupted mid-write: {failure.value}"
    assert dest.read_text() == "PREVIOUS CONTENT\n", f"previous file damaged ({hit.read_text()})"
    try:
        procs.wait_until(lambda: files_under(out) == {dest}, 10, "temporary files to go")
    except procs.WaitTimeout:
        raise AssertionError(f"left behind: {sorted(files_under(out) - {dest})}") from None
    healthy = session.open(workspace / "healthy.py")
    session.execute("torchMlirLens.exportModule", [{
        "uri": healthy, "module": "Healthy", "target": "linalg", "output": str(dest),
        "overwrite": True}])
    assert is_ir(dest.read_text())
    assert files_under(out) == {dest}
    assert_healthy(session)


def test_failing_write_leaves_nothing(trusted: Trusted) -> None:
    """Destination under a regular file (cannot be created): an error, and no stray files."""
    session, workspace = trusted.session, trusted.ws
    uri = session.open(workspace / "healthy.py")
    blocker = workspace / "not_a_dir"
    blocker.write_text("x")
    before = files_under(workspace)
    with pytest.raises(JsonRpcException):
        session.execute("torchMlirLens.exportModule", [{
            "uri": uri, "module": "Healthy", "target": "linalg",
            "output": str(blocker / "model.mlir")}])
    assert files_under(workspace) == before
    assert_healthy(session)


def test_repro_without_folder_stays_out_of_temp(trusted: Trusted) -> None:
    """exportRepro with no outputDir: the .mlir it writes (all weights, debug locations) must
    not land in the system temp folder either."""
    session, workspace, server_tmp = trusted.session, trusted.ws, trusted.tmp
    uri = session.open(workspace / "unsupported.py")
    reply = session.execute("torchMlirLens.exportRepro", [{
        "uri": uri, "module": "Unsupported", "target": "tosa"}])
    written = Path(reply["mlirPath"])
    try:
        assert written.exists(), reply
        assert server_tmp not in written.parents, f"repro with weights written to {written}"
    finally:
        if server_tmp in written.parents:  # keep the temp folder clean for the next test
            shutil.rmtree(server_tmp / written.relative_to(server_tmp).parts[0])


def test_no_repro_files_in_temp_dir(trusted: Trusted) -> None:
    """Failing lowerings (TOSA cannot lower aten.roll) and a repro export: torch-mlir's own
    error reporting would drop a repro .mlir with all weights into $TMPDIR. It must not (nor
    may anything else the tests before this one made the server do)."""
    session, workspace, server_tmp = trusted.session, trusted.ws, trusted.tmp
    uri = session.open(workspace / "unsupported.py")
    session.wait_diagnostics(
        uri, lambda d: any(str(x.code).startswith("aten.") for x in d), 180,
        "an unsupported-op diagnostic (roll on TOSA)")
    for target in ("tosa", "linalg", "stablehlo", "torch"):
        session.lower(uri, "Unsupported", target)
    reply = session.execute("torchMlirLens.exportRepro", [{
        "uri": uri, "module": "Unsupported", "target": "tosa",
        "outputDir": str(workspace / "repro")}])
    assert Path(reply["mlirPath"]).parent == workspace / "repro", reply
    leftovers = sorted(str(p.relative_to(server_tmp)) for p in files_under(server_tmp))
    assert not [p for p in leftovers if p.endswith(".mlir")], leftovers
    assert not leftovers, f"files left in the temp dir: {leftovers}"
    assert_healthy(session)
    finish(session, marker=str(workspace))


def test_tcp_binds_loopback_only(workspace: Path) -> None:
    """`serve --tcp` (default host) listens on 127.0.0.1 only, speaks LSP there, reads its
    frames as the stdio server does (a lower-case header is understood, invalid JSON answered
    -32700: never a deaf server), and ends on shutdown + exit like the stdio server."""
    cmd = [*server_command(), "--tcp", "--port", "0"]
    proc = subprocess.Popen(cmd, cwd=workspace, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        listening = procs.wait_until(lambda: listen_addresses(proc.pid), 20, "a listening socket")
        assert isinstance(listening, list)
        assert all(ip in ("127.0.0.1", "::1") for ip, _ in listening), listening
        _, port = listening[0]
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            frames = SocketFrames(sock)
            sock.sendall(encode({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "processId": None, "rootUri": None, "capabilities": {},
                "initializationOptions": {"trusted": False}}}))
            reply = frames.next()
            assert reply.get("id") == 1 and "capabilities" in reply.get("result", {}), reply
            sock.sendall(encode({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            sock.sendall(b"Content-Length: 5\r\n\r\n{nope")
            while (reply := frames.next()).get("error", {}).get("code") != -32700:
                assert "id" not in reply or "method" in reply, reply  # notifications only
            body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "torchMlirLens/serverInfo",
                               "params": {}}).encode()
            sock.sendall(b"content-length: %d\n\n" % len(body) + body)
            while frames.next().get("id") != 3:
                pass
            sock.sendall(encode({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
            while frames.next().get("id") != 2:
                pass  # skip the server's notifications (status, log messages)
            sock.sendall(encode({"jsonrpc": "2.0", "method": "exit"}))
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def is_ir(text: str) -> bool:
    """Printed MLIR of a lowered module (attribute aliases may come before `module {`)."""
    return "module" in text and "func.func @main" in text


def listen_addresses(pid: int) -> list[tuple[str, int]]:
    try:
        conns = psutil.Process(pid).net_connections(kind="inet")
    except psutil.Error:
        return []
    return [(c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN]


class SocketFrames:
    """Content-Length framed JSON messages read from a socket, keeping what arrives early."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        assert chunk, "connection closed before a whole message"
        self.buffer += chunk

    def next(self) -> dict[str, Any]:
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        length = int(head.split(b"Content-Length:")[1].split(b"\r\n")[0])
        while len(rest) < length:
            self._fill()
            head, _, rest = self.buffer.partition(b"\r\n\r\n")
        self.buffer = rest[length:]
        return dict(json.loads(rest[:length]))
