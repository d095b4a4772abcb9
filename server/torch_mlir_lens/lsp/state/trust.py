"""Which folders the server may run code of, and how it says so.

Untrusted unless the client says otherwise: lowering a module executes the file's imports,
definitions and assignments, so a client that says nothing about trust (a plain Neovim, Emacs
or Helix setup opening a freshly cloned repository) must not get that code run.

Trust is given to folders, never to "the server": a file may be lowered only when it lies in a
folder the client trusted. The client says which:

- `initializationOptions.trusted: true` trusts the workspace folders known at `initialize`
  (`workspaceFolders`, else `rootUri` / `rootPath`); `trustedFolders: [uri, …]` names them
  instead. A client with no workspace folder at all (a single-file window), or one that sets
  `trustOpenedDocuments: true` (VS Code's server for files outside every folder, which VS Code
  itself asks about as they are opened), trusts the folder of each document it opens
  (`didOpen`), never a file it did not open.
- `torchMlirLens/setTrusted {"trusted": bool, "folders"?: [uri, …]}` (notification) or the
  `torchMlirLens.setTrusted` command: the named folders, or without `folders` every folder
  known now, become trusted or untrusted.
- A folder added later (`workspace/didChangeWorkspaceFolders`) is untrusted until the client
  trusts it; a removed folder loses its trust. A request for a file outside every trusted
  folder is refused, and the user is told once per folder.

Folders are compared by real path, so a symlink cannot carry trust elsewhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

UNTRUSTED = "untrusted"  # status state and LensError kind: no user code may run

HOW_TO_TRUST = (
    'set `initializationOptions: {"trusted": true}` in the client\'s configuration for '
    "this server, send the `torchMlirLens/setTrusted` notification `{\"trusted\": true}`, "
    "or run the command `torchMlirLens.setTrusted` with `{\"trusted\": true}` "
    "(docs/editors.md has each editor's way)"
)


def real_folder(path: str) -> str:
    """`path` as trust compares it: absolute, symlinks resolved, no trailing separator."""
    return os.path.realpath(os.path.abspath(path)).rstrip(os.sep) or os.sep


def holds(folder: str, path: str) -> bool:
    """Does `folder` hold `path` (both as `real_folder` gives them)?"""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


@dataclass
class Trust:
    """The folders the client trusted (`roots`), and the folders it told us about (`known`)."""

    said: bool = False  # False: the client never mentioned trust
    roots: set[str] = field(default_factory=set)  # trusted folders (real paths)
    known: set[str] = field(default_factory=set)  # the workspace's folders (real paths)
    # The client vouches for the documents it opens (their folders are trusted while trust is
    # given): a client without workspace folders, or one that asked for it.
    opened_mode: bool = False
    opened_trusted: bool = False
    told: set[str] = field(default_factory=set)  # folders the user was told are untrusted

    # -- what the client says ---------------------------------------------------------------

    def initialize(self, trusted: object, folders: list[str], trusted_folders: object = None,
                   trust_opened: object = None) -> None:
        """Take `initialize`: the workspace's folders and the client's statement of trust.

        Anything but a bool for `trusted` leaves trust unsaid (untrusted). `trusted_folders`,
        a list of paths, names the trusted folders instead of "every known folder";
        `trust_opened` (or no folder at all) makes opened documents' folders trusted.
        """
        self.known = {real_folder(f) for f in folders}
        self.said = isinstance(trusted, bool)
        self.opened_mode = trust_opened is True or (not folders and trusted_folders is None)
        self.roots = set()
        self.opened_trusted = False
        if trusted is not True:
            return
        self.opened_trusted = self.opened_mode
        if isinstance(trusted_folders, list):
            self.roots = {real_folder(f) for f in trusted_folders if isinstance(f, str) and f}
        else:
            self.roots = set(self.known)

    def state(self, trusted: bool, folders: list[str] | None = None) -> None:
        """Trust (or stop trusting) `folders`, or every known folder when None; opened
        documents follow the statement (when the client vouches for them)."""
        self.said = True
        self.opened_trusted = trusted and self.opened_mode
        if folders is None:
            self.roots = self.roots | self.known if trusted else set()
            return
        named = {real_folder(f) for f in folders}
        if trusted:
            self.roots |= named
            self.told -= named
        else:
            self.roots = {r for r in self.roots if not any(holds(n, r) for n in named)}

    def folders_changed(self, added: list[str], removed: list[str]) -> None:
        """`workspace/didChangeWorkspaceFolders`: added folders start untrusted."""
        gone = {real_folder(f) for f in removed}
        self.known = (self.known - gone) | {real_folder(f) for f in added}
        self.roots -= gone

    def document_opened(self, path: str | None) -> None:
        """The client opened `path`: its folder is trusted if the client vouches for what it
        opens (and trust is given)."""
        if self.opened_trusted and path:
            self.roots.add(real_folder(os.path.dirname(path)))

    # -- what it allows ---------------------------------------------------------------------

    @property
    def trusted(self) -> bool:
        """May any user code run here (is some folder, or are opened documents, trusted)?"""
        return bool(self.roots) or self.opened_trusted

    def root_of(self, path: str | None) -> str | None:
        """The innermost trusted folder holding `path`, or None (then nothing of it runs)."""
        if not path:
            return None
        real = real_folder(path)
        holding = [r for r in self.roots if holds(r, real)]
        return max(holding, key=len) if holding else None

    def covers(self, path: str | None) -> bool:
        """May the file at `path` be lowered (it lies in a trusted folder)?"""
        return self.root_of(path) is not None

    def folder_of(self, path: str) -> str:
        """The folder to name when `path` is refused: its workspace folder, else its own."""
        real = real_folder(path)
        holding = [k for k in self.known if holds(k, real)]
        return max(holding, key=len) if holding else real_folder(os.path.dirname(path))

    def first_refusal(self, path: str) -> bool:
        """True the first time a file of this folder is refused (tell the user once)."""
        folder = self.folder_of(path)
        if folder in self.told:
            return False
        self.told.add(folder)
        return True

    # -- wording ----------------------------------------------------------------------------

    @property
    def detail(self) -> str:
        """The status line of an untrusted server."""
        if self.said:
            return "workspace not trusted: no user code is run"
        return "workspace trust unknown (the client did not say): no user code is run"

    @property
    def announcement(self) -> str:
        """What the user is told once: why nothing is lowered and how to change it."""
        if self.said:
            return (
                "Torch-MLIR Lens: this workspace is not trusted, so no user code is run: "
                "module list and lenses only, no IR, hovers or diagnostics. Trust the "
                "workspace to enable lowering."
            )
        return (
            "Torch-MLIR Lens: your editor did not say whether this workspace is trusted, so "
            "no code of it is run (lowering a module runs the file's imports and "
            "definitions): module list and lenses only, no IR, hovers or diagnostics. "
            f"To trust it, {HOW_TO_TRUST}."
        )

    @property
    def refusal(self) -> str:
        """The error of a request that would run user code."""
        if self.said:
            return "The workspace is not trusted: Torch-MLIR Lens runs no user code."
        return (
            "The workspace is not trusted (the client did not say it is): Torch-MLIR Lens "
            f"runs no user code. To trust it, {HOW_TO_TRUST}."
        )

    def folder_refusal(self, path: str) -> str:
        """The error (and the one-time message) for a file outside every trusted folder."""
        folder = self.folder_of(path)
        return (
            f"Torch-MLIR Lens: {folder} is not a trusted folder, so no code of it is run "
            f"(the client trusted {self._trusted_names()}). Trust that folder to lower "
            f"{os.path.basename(path)}: send `torchMlirLens/setTrusted` with "
            '`{"trusted": true, "folders": [its URI]}`, or trust it in your editor.'
        )

    def _trusted_names(self) -> str:
        if not self.roots:
            return "no folder"
        return ", ".join(sorted(self.roots))
