"""The language-server tests' side of the LSP harness (tests/harness/lsp_session.py): its
client as a pytest-lsp client, and async helpers over it.

Each test module starts one server (module scope: the worker's torch import is paid once per
module) on its own copy of the examples and of `tests/lsp/workspace/`, so no test touches
`examples/` in place. Waiting is always on a condition with a time-out, never a bare sleep.
The reliability suite drives the same client (`make_client`) from sync code.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import ClientServerConfig
from pytest_lsp import LanguageClient as PytestLspClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES
from tests.harness.lsp_session import (
    HarnessClient,
    Recorder,
    child_env,
    initialize_params,
    plain,
    server_command,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FIXTURES = Path(__file__).parent / "workspace"
NOTEBOOK = ROOT / "tests" / "notebooks" / "spread_model.ipynb"
HELPER_CELL, MODEL_CELL, PAIR_CELL = 2, 4, 5  # 0-based cell indices in NOTEBOOK
LOWER_TIMEOUT = 180.0  # first lowering includes the worker's torch import on a busy machine

class LensTestClient(HarnessClient, PytestLspClient):
    """pytest-lsp's client (its fixtures, `diagnostics`, `set_configuration`, progress and
    log records) with the harness's server start, stderr capture and records."""

    recorder: Recorder

    @property
    def statuses(self) -> list[dict[str, Any]]:
        """Every `torchMlirLens/status` notification so far, as plain JSON (a fresh list)."""
        return self.recorder.statuses

    @property
    def lens_refreshes(self) -> int:
        return self.recorder.lens_refreshes

    @property
    def registrations(self) -> list[types.RegistrationParams]:
        """Capability registrations the server asked for (accepted, as VS Code does)."""
        return self.recorder.registrations


def make_client(*, echo_stderr: bool = True) -> LensTestClient:
    """The test client, with pytest-lsp's default handlers and the harness's recording ones.

    `echo_stderr`: copy the server's stderr to this process's (pytest shows it on failure).
    """
    client = LensTestClient(echo_stderr=echo_stderr)
    client.install_features(DEFAULT_CLIENT_FEATURES)
    return client


CONFIG = ClientServerConfig(server_command=server_command(), client_factory=make_client,
                            server_env=child_env())


def copy_workspace(dest: Path) -> Path:
    """Copies of the examples and of the test fixtures, side by side in `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    for src in (EXAMPLES, FIXTURES):
        if src.is_dir():
            shutil.copytree(src, dest, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def init_params(root: Path, *, trusted: bool | None = True,
                settings: dict[str, Any] | None = None,
                notebooks: bool = False) -> types.InitializeParams:
    """`initialize` as VS Code sends it, with our initializationOptions."""
    return initialize_params(root, trusted=trusted, settings=settings, notebooks=notebooks)


async def request(client: PytestLspClient, method: str, params: Any,
                  timeout: float = LOWER_TIMEOUT) -> Any:
    """A custom request, answered as plain JSON."""
    fut = client.protocol.send_request_async(method, params)
    return plain(await asyncio.wait_for(fut, timeout))


async def server_info(client: PytestLspClient, *, wait: bool = True) -> dict[str, Any]:
    """`torchMlirLens/serverInfo`; `wait`: for the worker's counters if it is busy."""
    return await request(client, "torchMlirLens/serverInfo", {"waitForWorker": wait},
                         timeout=150)


async def execute(client: PytestLspClient, command: str, *arguments: Any,
                  timeout: float = LOWER_TIMEOUT) -> Any:
    params = types.ExecuteCommandParams(command=command, arguments=list(arguments))
    return plain(await asyncio.wait_for(
        client.workspace_execute_command_async(params), timeout))


def _recorder(client: PytestLspClient) -> Recorder:
    assert isinstance(client, HarnessClient), "a client made by make_client"
    return client.recorder


def open_doc(client: PytestLspClient, path: Path, text: str | None = None,
             version: int = 1) -> str:
    """didOpen a file (its disk text unless given); returns its URI."""
    uri = path.as_uri()
    text = path.read_text() if text is None else text
    _recorder(client).track_text(uri, text, version)
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(
            uri=uri, language_id="python", version=version, text=text)))
    return uri


def ensure_open(client: PytestLspClient, path: Path) -> str:
    """The URI of `path`, opened (its disk text) unless this client has it open already: for
    a test that needs the document open whether or not an earlier test opened it."""
    uri = path.as_uri()
    if uri not in _recorder(client).texts:
        open_doc(client, path)
    return uri


def change_doc(client: PytestLspClient, uri: str, text: str, version: int | None = None
               ) -> int:
    """didChange with the whole new text (`version`: the next one unless given); returns it."""
    recorder = _recorder(client)
    if version is None:
        version = recorder.versions.get(uri, 0) + 1
    recorder.track_text(uri, text, version)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
    ))
    return version


def save_doc(client: PytestLspClient, uri: str) -> None:
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))


async def wait_until(client: PytestLspClient, predicate: Callable[[], Any], *,
                     timeout: float = LOWER_TIMEOUT, what: str = "condition") -> Any:
    """Re-check `predicate` (sync or async) on every message the server pushes, and every
    0.5 s, until it holds; return its value."""
    return await _recorder(client).wait_for(predicate, timeout, what)


def diagnostics(client: PytestLspClient, uri: str) -> list[types.Diagnostic]:
    return list(client.diagnostics.get(uri, []))


async def hover(client: PytestLspClient, uri: str, line: int, character: int = 8,
                timeout: float = LOWER_TIMEOUT) -> types.Hover | None:
    """Hover at 1-based `line`."""
    params = types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line - 1, character=character),
    )
    return await asyncio.wait_for(client.text_document_hover_async(params), timeout)


async def code_lenses(client: PytestLspClient, uri: str) -> list[types.CodeLens]:
    params = types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    return list(await asyncio.wait_for(client.text_document_code_lens_async(params), 30) or [])


def write_unreadable_comment_module(path: Path, second_key: str) -> int:
    """Write a module whose inputs comment has `inputs=` and `second_key` without the `;`
    between them (so neither applies); the comment's line."""
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\n"
        f"# torch-mlir-lens: inputs=(torch.randn(4, 16),) {second_key}\n"
        "class Scaled(nn.Module):\n    def forward(self, x):\n        return x * 2\n")
    return line_of(path, "# torch-mlir-lens:")


def line_of(path: Path, needle: str) -> int:
    """The 1-based line of the first line containing `needle`."""
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if needle in text:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


async def settled(client: PytestLspClient, timeout: float = LOWER_TIMEOUT) -> dict[str, Any]:
    """serverInfo once no lowering runs (twice 0.3 s apart: a check's follow-up stage and
    the next module's check start right after the previous lowering)."""
    quiet = 0

    async def quiet_twice() -> dict[str, Any] | None:
        nonlocal quiet
        info = await server_info(client)
        quiet = quiet + 1 if info["status"]["state"] != "lowering" else 0
        if quiet >= 2:
            return info
        await asyncio.sleep(0.3)
        return None

    return await _recorder(client).wait_for(quiet_twice, timeout, "the server to settle",
                                            poll=0)


# ---- notebooks ------------------------------------------------------------------------


def notebook_folder(dest: Path) -> Path:
    """`dest` with a copy of the test notebook (tests/notebooks/spread_model.ipynb)."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(NOTEBOOK, dest / NOTEBOOK.name)
    return dest


async def start_notebook_session(client: PytestLspClient, folder: Path, *, trusted: bool
                                 ) -> types.InitializeResult:
    """`initialize` on `folder` announcing notebook sync, as VS Code does."""
    return await client.initialize_session(init_params(folder, trusted=trusted, notebooks=True))


class Notebook:
    """A notebook as the client holds it: cells with URIs, kinds and texts."""

    def __init__(self, path: Path, cells: list[tuple[str, str]] | None = None) -> None:
        """The notebook at `path`, with its file's cells unless `cells` [(kind, text)]."""
        self.path = path
        self.uri = path.as_uri()
        if cells is None:
            data = json.loads(path.read_text())
            cells = [(raw["cell_type"], "".join(raw["source"])) for raw in data["cells"]]
        self.cells: list[dict[str, Any]] = []
        for kind, text in cells:
            self.add(kind, text)
        self.version = 1

    def add(self, kind: str, text: str) -> dict[str, Any]:
        cell = {"uri": f"vscode-notebook-cell:{self.path}#c{len(self.cells)}",
                "kind": kind, "text": text}
        self.cells.append(cell)
        return cell

    def uri_of(self, index: int) -> str:
        return str(self.cells[index]["uri"])

    @staticmethod
    def lsp_cell(cell: dict[str, Any]) -> types.NotebookCell:
        kind = types.NotebookCellKind.Code if cell["kind"] == "code" else \
            types.NotebookCellKind.Markup
        return types.NotebookCell(kind=kind, document=cell["uri"])

    @staticmethod
    def item(cell: dict[str, Any]) -> types.TextDocumentItem:
        return types.TextDocumentItem(
            uri=cell["uri"], language_id="python" if cell["kind"] == "code" else "markdown",
            version=1, text=cell["text"])

    def did_open(self, client: PytestLspClient) -> None:
        client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=self.uri, notebook_type="jupyter-notebook", version=self.version,
                cells=[self.lsp_cell(c) for c in self.cells]),
            cell_text_documents=[self.item(c) for c in self.cells],
        ))

    def append_cells(self, client: PytestLspClient, *texts: str) -> list[dict[str, Any]]:
        """Add code cells at the end (a structure change, as VS Code sends it)."""
        start = len(self.cells)
        added = [self.add("code", t) for t in texts]
        self.version += 1
        client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(
                uri=self.uri, version=self.version),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
                structure=types.NotebookDocumentCellChangeStructure(
                    array=types.NotebookCellArrayChange(
                        start=start, delete_count=0, cells=[self.lsp_cell(c) for c in added]),
                    did_open=[self.item(c) for c in added],
                ),
            )),
        ))
        return added
