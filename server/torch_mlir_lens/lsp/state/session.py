"""The session's state: what every layer above shares, with one writer each.

Settings, the workspace root, trust and the open documents live here; features and checks
read them and change them only through these methods (`apply_settings`, `start`, ...). A plain
object: it talks to the editor only through its `Client` (`wire/client.py`), never through the
transport. The engine host and the pending checks are added one layer up
(`checks/session.py`), the table of handlers at the top (`server.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Mapping
from typing import Any

from lsprotocol import types

from torch_mlir_lens import discovery
from torch_mlir_lens.lsp.document import Document, DocumentStore
from torch_mlir_lens.lsp.state.settings import Settings, effective_settings, parse_settings
from torch_mlir_lens.lsp.state.trust import Trust, real_folder
from torch_mlir_lens.lsp.wire.client import Client


class SessionState:
    """The state the features share: settings, workspace, trust, documents; the client."""

    def __init__(self, client: Client, name: str, version: str) -> None:
        self.client = client
        self.name = name
        self.version = version
        self._settings = Settings()
        # Editor settings alone, and each trusted folder's with its own project layer: a
        # module's settings come from its own folder's pyproject.toml, never another's.
        self._editor_settings = Settings()
        self._folder_settings: dict[str, Settings] = {}
        self._init_settings: dict[str, Any] = {}  # initializationOptions.settings
        self._client_settings: dict[str, Any] | None = None  # the last applied
        # The last settings pushed in workspace/didChangeConfiguration (clients that cannot
        # answer workspace/configuration).
        self._pushed_settings: dict[str, Any] | None = None
        self._workspace_root: str | None = None
        self._folders: list[str] = []  # the workspace folders, as paths, in the client's order
        self._initialized = False
        self._untrusted_announced = False
        self.trust = Trust()  # untrusted until the client says otherwise
        self.store = DocumentStore()
        self._background: set[asyncio.Task[Any]] = set()
        self._lens_refresh: asyncio.TimerHandle | None = None

    # -- state, read ----------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        """The server-wide settings (engine limits, what `serverInfo` reports): the editor's,
        with the project layer of the first workspace folder when it is trusted
        (`settings.py` has the layers). A module's are `settings_for` its file."""
        return self._settings

    def settings_for(self, path: str | None) -> Settings:
        """The settings of a file: the editor's with the project layer of the trusted
        workspace folder holding it (its own pyproject.toml, never another folder's); the
        editor's alone for a file of no trusted workspace folder."""
        root = self.trust.root_of(path)
        return self._folder_settings.get(root, self._editor_settings) if root else \
            self._editor_settings

    def all_settings(self) -> dict[str | None, Settings]:
        """Every settings layer in effect: server-wide (None) and per trusted folder."""
        layers: dict[str | None, Settings] = {None: self._settings}
        layers.update(self._folder_settings)
        return layers

    @property
    def client_settings(self) -> dict[str, Any] | None:
        """The client's settings applied last (applied again when trust changes)."""
        return self._client_settings

    @property
    def pushed_settings(self) -> dict[str, Any] | None:
        """The settings the client pushed last, when it pushed some."""
        return self._pushed_settings

    @property
    def workspace_folders(self) -> tuple[str, ...]:
        """The workspace folders as paths, the root first (the root alone when only
        `rootUri` was sent)."""
        return tuple(self._folders)

    @property
    def workspace_root(self) -> str | None:
        """The first workspace folder: what relative settings and imports start from."""
        return self._workspace_root

    @property
    def initialized(self) -> bool:
        """Has the client said `initialized` (it takes log messages from then on)?"""
        return self._initialized

    @property
    def trusted(self) -> bool:
        """May user code run (the client said the workspace is trusted)?"""
        return self.trust.trusted

    def modules_of(self, doc: Document) -> list[discovery.ModuleInfo]:
        """The document's modules (static discovery with its settings and root)."""
        return doc.modules(dict(self.settings_for(doc.path).example_inputs),
                           self._workspace_root)

    # -- state, written -------------------------------------------------------------------

    def start(self, init_settings: Mapping[str, Any], folders: list[str]) -> None:
        """Take what `initialize` said: the client's initial settings and the workspace folders
        (the first is the root relative settings use)."""
        self._init_settings = dict(init_settings)
        self._folders = list(folders)
        self._workspace_root = folders[0] if folders else None

    def folders_changed(self, added: list[str], removed: list[str]) -> None:
        """`workspace/didChangeWorkspaceFolders` (the root stays the first folder named)."""
        gone = set(removed)
        self._folders = [f for f in self._folders if f not in gone] + [
            f for f in added if f not in self._folders]

    def mark_initialized(self) -> None:
        """The client said `initialized`."""
        self._initialized = True

    def remember_pushed(self, pushed: Mapping[str, Any]) -> None:
        """Keep settings the client pushed: a client that cannot be asked sends no more."""
        self._pushed_settings = dict(pushed)

    def apply_settings(self, client_settings: Mapping[str, Any] | None
                       ) -> tuple[Settings, Settings, list[str]]:
        """Make the settings of every layer over `client_settings` effective:
        (old, new, problems with the values)."""
        self._client_settings = dict(client_settings) if client_settings is not None else None
        editor, problems = parse_settings(self._init_settings, client_settings)
        folders: dict[str, Settings] = {}
        for folder in sorted(self.trust.known):
            if not self.trust.covers(folder):
                continue  # an untrusted folder's pyproject.toml configures nothing
            folders[folder], more = effective_settings(self._init_settings, client_settings,
                                                       folder)
            problems += [p for p in more if p not in problems]
        root = real_folder(self._workspace_root) if self._workspace_root else None
        new = folders.get(root, editor) if root else editor
        old, self._settings = self._settings, new
        self._editor_settings, self._folder_settings = editor, folders
        return old, new, problems

    def first_untrusted_announcement(self) -> bool:
        """True once: the first time the server tells the user it is untrusted."""
        first, self._untrusted_announced = not self._untrusted_announced, True
        return first

    # -- services -------------------------------------------------------------------------

    def background(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run a coroutine in the background, keeping a reference until it is done."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def refresh_lenses(self) -> None:
        """Ask the client to re-request code lenses soon (coalesced: one per burst)."""
        if self._lens_refresh is not None or not self.client.supports(
                "workspace.code_lens.refresh_support"):
            return

        def send() -> None:
            self._lens_refresh = None
            with contextlib.suppress(Exception):  # the client may be gone; lenses are a nicety
                self.client.refresh_code_lenses()

        self._lens_refresh = asyncio.get_running_loop().call_later(0.2, send)

    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        """A `window/showMessage` to the user."""
        self.client.show(message, kind)
