"""Start-up: the first answers, before the LSP library is loaded.

An editor starts the server and waits for the lenses of the file it opened. Most of what
`serve` does before it can answer is loading pygls and lsprotocol (some 560 classes built at
import). The front answers the first messages without them, from the standard library and
this package's torch-free, lsprotocol-free parts:

- `initialize`, with the answer the full server gave the last time a client with the same
  capabilities started this same build (`InitializeAnswers`; none yet: the full server loads
  at once and answers, and its answer is kept for the next start);
- `initialized`, `didOpen` of Python files, settings pushes, trust statements
  (`torchMlirLens/setTrusted`): taken as they come;
- `textDocument/codeLens` of an opened Python file: the lenses the full server would give
  (`lens_specs.py`; discovery reads the text, nothing runs).

At the first message it cannot answer, or once the client has been quiet for `IDLE_S` after
an answer, it loads the full server and hands it every message it took, in order (pygls's
answer to the `initialize` it answered already is dropped; a lens request it answered is not
handed over). From then on it only passes messages through.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import importlib.util
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from torch_mlir_lens import __version__
from torch_mlir_lens.defaults import MAX_ANALYSED_BYTES
from torch_mlir_lens.lsp.wire import lens_specs, transport
from torch_mlir_lens.protocol.frames import in_installed_package
from torch_mlir_lens.system import cache_key
from torch_mlir_lens.system.atomic_write import write_atomically
from torch_mlir_lens.system.reading import GENERATED_CODE, is_nameable, read_bytes

if TYPE_CHECKING:
    from torch_mlir_lens.engine.worker_client.spawn import EarlyWorker
    from torch_mlir_lens.lsp.server import LensServer
    from torch_mlir_lens.lsp.wire.json_rpc import LensProtocol

log = logging.getLogger(__name__)

# Quiet this long after an answer: load the full server. A client that waits for what only
# the full server sends by itself (diagnostics) waits this much longer; one asking anything
# the front cannot answer loads it at once.
IDLE_S = 0.1
MAX_KEPT_ANSWERS = 16  # initialize answers kept (one per client kind, typically)
_LSP_SOURCES = Path(__file__).resolve().parent
_ANSWERS = "initialize-answers"  # what the kept answers' tag is for


class InitializeAnswers:
    """The full server's answers to `initialize`, by build and client capabilities, in one
    JSON file of the user's cache folder (written atomically; unreadable: no answers)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @staticmethod
    def key(params: Any) -> str:
        """This build (the language server's sources, pygls's and lsprotocol's) and the
        capabilities the client announced: what the answer depends on."""
        digest = hashlib.sha256(f"{__version__} {sys.version}".encode())
        files = sorted(_LSP_SOURCES.rglob("*.py"))
        for name in ("pygls", "lsprotocol"):
            spec = importlib.util.find_spec(name)  # finds, does not import
            for folder in spec.submodule_search_locations or [] if spec else []:
                files.extend(sorted(Path(folder).glob("*.py")))
        for file in files:
            with contextlib.suppress(OSError):
                st = file.stat()
                digest.update(f"{file}:{st.st_mtime_ns}:{st.st_size};".encode())
        capabilities = params.get("capabilities") if isinstance(params, dict) else None
        digest.update(json.dumps(capabilities, sort_keys=True).encode())
        return digest.hexdigest()

    def _load(self) -> dict[str, Any]:
        """The kept answers, when the file is this user's own (its tag verifies)."""
        secret = cache_key.cache_secret()
        if secret is None:
            return {}
        try:
            blob = read_bytes(self.path, GENERATED_CODE)  # bounded, never through a link
            payload = cache_key.unseal(secret, _ANSWERS, self.path.name, blob)
            data = json.loads(payload) if payload is not None else None
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> dict[str, Any] | None:
        answer = self._load().get(key)
        return answer if isinstance(answer, dict) else None

    def put(self, key: str, answer: dict[str, Any]) -> None:
        entries = {k: v for k, v in self._load().items() if k != key}
        entries[key] = answer
        kept = dict(list(entries.items())[-MAX_KEPT_ANSWERS:])
        secret = cache_key.cache_secret()
        if secret is None:
            return
        with contextlib.suppress(OSError):
            write_atomically(self.path, cache_key.seal(secret, _ANSWERS, self.path.name,
                                                       json.dumps(kept).encode()))


def default_answers() -> InitializeAnswers:
    """The answers file beside the generated-code cache (`code_cache.py`)."""
    from torch_mlir_lens.lsp.code_cache import default_path

    return InitializeAnswers(default_path().parent / "initialize-answers.json")


class Front:
    """Takes messages until the full server is loaded (`load`), then passes them to it."""

    def __init__(self, writer: transport.StdoutWriter, answers: InitializeAnswers,
                 load_server: Callable[[], LensServer]) -> None:
        self._writer = writer
        self._answers = answers
        self._load_server = load_server
        self.server: LensServer | None = None
        self._protocol: LensProtocol | None = None  # the full server's, once loaded
        self._taken: list[Any] = []  # messages to hand over, in order
        self._answered_initialize: Any = None  # its id, when the front answered it
        self._initialize_key: str | None = None
        self._texts: dict[str, str] = {}  # opened Python files: uri → text
        self._settings: dict[str, Any] = {}  # initializationOptions.settings
        self._workspace_root: str | None = None
        self._root_trusted = False  # `trusted: true` for every folder (not a list of them)
        self._one_folder = True
        self.answered = False  # the front has answered something: load once the client is quiet

    # -- the transport's sink -------------------------------------------------------------

    def receive(self, value: Any) -> None:
        """One message from the client."""
        if self._protocol is None and self._take(value):
            return
        self.load().receive(value)

    def refuse(self, value: Any, code: int, reason: str) -> None:
        """A frame the transport could not read: the full server answers it."""
        self.load().refuse(value, code, reason)

    # -- what the front answers -----------------------------------------------------------

    def _take(self, value: Any) -> bool:
        """Answer or keep `value`; False when only the full server can handle it."""
        if not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
            return False
        method, params = value.get("method"), value.get("params")
        if method == "initialize":
            return self._initialize(value, params)
        if self._initialize_key is None:  # before initialize: the full server's rules
            return False
        # Taken as they come and handed over in order: none changes the first lenses (trust
        # decides what may run, not what discovery reads), so none needs the full server now.
        if method in ("initialized", "workspace/didChangeConfiguration", "$/setTrace",
                      "$/cancelRequest", "torchMlirLens/setTrusted"):
            self._taken.append(value)
            return True
        if method == "textDocument/didOpen":
            self._opened(params)
            self._taken.append(value)
            return True
        if method == "textDocument/codeLens":
            return self._code_lens(value, params)
        return False

    def _initialize(self, value: dict[str, Any], params: Any) -> bool:
        if self._initialize_key is not None or not isinstance(params, dict):
            return False  # a second one, or a malformed one: the full server refuses it
        self._initialize_key = self._answers.key(params)
        options = params.get("initializationOptions")
        settings = options.get("settings") if isinstance(options, dict) else None
        self._settings = settings if isinstance(settings, dict) else {}
        self._workspace_root = _first_folder(params)
        self._root_trusted = (isinstance(options, dict) and options.get("trusted") is True
                              and options.get("trustedFolders") is None)
        folders = params.get("workspaceFolders")
        self._one_folder = not (isinstance(folders, list) and len(folders) > 1)
        answer = self._answers.get(self._initialize_key)
        if answer is None or not isinstance(value.get("id"), int | str):
            return False  # the full server answers, and its answer is kept for next time
        self._answered_initialize = value["id"]
        self._taken.append(value)
        self._send({"jsonrpc": "2.0", "id": value["id"], "result": answer})
        self.answered = True
        return True

    def _opened(self, params: Any) -> None:
        item = params.get("textDocument") if isinstance(params, dict) else None
        if (isinstance(item, dict) and item.get("languageId") == "python"
                and isinstance(item.get("uri"), str) and item["uri"].startswith("file:")
                and isinstance(item.get("text"), str)):
            self._texts[item["uri"]] = item["text"]

    def _code_lens(self, value: dict[str, Any], params: Any) -> bool:
        item = params.get("textDocument") if isinstance(params, dict) else None
        uri = item.get("uri") if isinstance(item, dict) else None
        if (self._answered_initialize is None or uri not in self._texts
                or not isinstance(value.get("id"), int | str)):
            return False
        lenses = self._lenses(uri, self._texts[uri])
        if lenses is None:
            return False
        self._send({"jsonrpc": "2.0", "id": value["id"], "result": lenses})
        self.answered = True
        return True

    def _lenses(self, uri: str, text: str) -> list[dict[str, Any]] | None:
        """The document's lenses as the full server writes them; None to leave it to it."""
        from torch_mlir_lens import discovery
        from torch_mlir_lens.lsp.state.settings import effective_settings
        from torch_mlir_lens.source.notebook_program import is_notebook

        path = _path_of(uri)
        if path is None or is_notebook(path):
            return None
        if in_installed_package(path) or len(text) > MAX_ANALYSED_BYTES:
            return []
        known, folder = self._project_folder(path)
        if not known:
            return None
        settings, _problems = effective_settings(self._settings, None, folder)
        lines = text.splitlines()
        out = []
        for info in discovery.find_modules(text, path, settings_inputs=dict(
                settings.example_inputs), workspace=self._workspace_root):
            if not lens_specs.shows_lenses(info):
                continue
            line, start, end = lens_specs.name_span(lines, info.line, info.name_col,
                                                    info.name_end_col, info.name)
            rng = {"start": {"line": line, "character": start},
                   "end": {"line": line, "character": end}}
            for title, command, arguments in lens_specs.module_lens_specs(
                    uri, info, settings.lens_targets, settings.default_target):
                out.append({"range": rng, "command": {"title": title, "command": command,
                                                      "arguments": arguments}})
        return out

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message)
        self._writer.write(f"Content-Length: {len(body)}\r\nContent-Type: "
                           f"application/vscode-jsonrpc; charset=utf-8\r\n\r\n{body}".encode())

    # -- the hand-over --------------------------------------------------------------------

    def load(self) -> LensProtocol:
        """Load the full server and hand it the messages taken so far; its protocol (loaded
        once)."""
        if self._protocol is not None:
            return self._protocol
        from torch_mlir_lens.lsp.wire.json_rpc import protocol_of

        server = self._load_server()
        protocol = protocol_of(server)
        protocol.set_writer(self._writer)
        if self._answered_initialize is not None:
            protocol.drop_response_to(self._answered_initialize)
        elif self._initialize_key is not None:
            key = self._initialize_key
            protocol.on_initialize_answer = lambda answer: self._answers.put(key, answer)
        self.server, self._protocol = server, protocol
        taken, self._taken = self._taken, []
        for value in taken:
            protocol.receive(value)
        return protocol


    def _project_folder(self, path: str) -> tuple[bool, str | None]:
        """(whether the front can tell, the folder whose pyproject.toml configures `path`), as
        the full server's `settings_for`: a trusted workspace folder's own, else none."""
        from torch_mlir_lens.lsp.state.trust import holds, real_folder

        root = self._workspace_root
        if root is None:
            return True, None
        if not holds(real_folder(root), real_folder(path)):
            return self._one_folder, None  # another folder's file: the full server knows
        return True, root if self._root_trusted else None


def _first_folder(params: dict[str, Any]) -> str | None:
    folders = params.get("workspaceFolders")
    if isinstance(folders, list) and folders and isinstance(folders[0], dict):
        return _path_of(folders[0].get("uri"))
    root = params.get("rootUri")
    if isinstance(root, str):
        return _path_of(root)
    path = params.get("rootPath")
    return path if isinstance(path, str) else None


def _path_of(uri: Any) -> str | None:
    """The path of a `file:` URI, as the full server reads it (`convert.uri_to_path`)."""
    if not isinstance(uri, str) or not uri.startswith("file:"):
        return None
    from pygls import uris  # a small module: no lsprotocol

    path = uris.to_fs_path(uri)
    return path if path is not None and is_nameable(path) else None


def serve_stdio(early: EarlyWorker | None, stdin: BinaryIO | None = None,
                stdout: BinaryIO | None = None) -> int:
    """Serve LSP over stdio, the front first, until the client says exit; the exit code: 0
    after a `shutdown` request, else 1 (`exit` without `shutdown`, a client that vanished,
    input that cannot be split into messages any more: then one line on stderr)."""
    writer = transport.StdoutWriter(stdout or sys.stdout.buffer)
    source = transport.StdinChunks(stdin or sys.stdin.buffer)
    front = Front(writer, default_answers(), lambda: full_server(early))
    unreadable: str | None = None
    try:
        asyncio.run(_serve(source, front))
    except transport.FramingError as exc:
        unreadable = str(exc)
    except BrokenPipeError:
        log.warning("the connection to the client is lost")
    except (KeyboardInterrupt, SystemExit):  # SystemExit: pygls's `exit` handler
        pass
    finally:
        if front.server is not None:
            front.server.shutdown()
    from torch_mlir_lens.lsp.server import exit_code, stop_worker

    if front.server is None:
        if early is not None:
            early.discard()
        return 1 if unreadable is None else _stop(unreadable)
    stop_worker(front.server)
    return _stop(unreadable) if unreadable is not None else exit_code(front.server)


def _stop(reason: str) -> int:
    sys.stderr.write(f"torch-mlir-lens: the server stops: {reason}\n")
    sys.stderr.flush()
    return 1


async def _serve(source: transport.ByteSource, front: Front) -> None:
    """Read frames into the front until it loads the full server, then as `transport.serve`."""
    reader = transport.FrameReader(source)
    pending = asyncio.ensure_future(reader.next())
    while front.server is None:
        done, _ = await asyncio.wait({pending}, timeout=IDLE_S if front.answered else None)
        if not done:  # quiet after an answer: the client waits for nothing more of the front
            front.load()
            break
        received = pending.result()
        if received is None:
            return
        transport.deliver(front, received)
        pending = asyncio.ensure_future(reader.next())
    received = await pending
    if received is None:
        return
    transport.deliver(front, received)
    await asyncio.sleep(0)
    await transport.serve_reader(reader, front)


def full_server(early: EarlyWorker | None) -> LensServer:
    """Import and make the full server, its engine adopting the worker spawned at start."""
    # lsprotocol builds hundreds of classes as it is imported: collecting garbage meanwhile
    # only costs start-up time (~15 %), and what it builds lives as long as the server.
    gc.disable()
    try:
        from torch_mlir_lens.engine import Engine, EngineConfig
        from torch_mlir_lens.lsp.server import create_server
    finally:
        gc.freeze()
        gc.enable()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    server = create_server()
    engine = Engine(EngineConfig(python=sys.executable))
    if early is not None:
        engine.adopt_prespawned(early)
    server.session.host.hold_prespawned(engine)
    return server
