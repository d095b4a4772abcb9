"""Whether the server may run the workspace's code, and how it says so.

Untrusted unless the client says otherwise: lowering a module executes the file's imports,
definitions and assignments, so a client that says nothing about trust (a plain Neovim, Emacs
or Helix setup opening a freshly cloned repository) must not get that code run. The client
says it with `initializationOptions.trusted`, the `torchMlirLens/setTrusted` notification or
the `torchMlirLens.setTrusted` command (for clients that can run a command but not send a
custom notification). The VS Code client passes its workspace trust.
"""

from __future__ import annotations

from dataclasses import dataclass

UNTRUSTED = "untrusted"  # status state and LensError kind: no user code may run

HOW_TO_TRUST = (
    'set `initializationOptions: {"trusted": true}` in the client\'s configuration for '
    "this server, send the `torchMlirLens/setTrusted` notification `{\"trusted\": true}`, "
    "or run the command `torchMlirLens.setTrusted` with `{\"trusted\": true}` "
    "(docs/editors.md has each editor's way)"
)


@dataclass
class Trust:
    """The workspace's trust as the client stated it (`said`), untrusted by default."""

    trusted: bool = False
    said: bool = False  # False: the client never mentioned trust

    def state(self, trusted: object) -> None:
        """Take the client's statement; anything but a bool leaves trust unsaid (untrusted)."""
        self.said = isinstance(trusted, bool)
        self.trusted = trusted is True

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
