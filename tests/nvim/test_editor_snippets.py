"""The Emacs and Helix snippets of docs/editors.md parse and say the right things.

No Emacs or Helix runs here (`make test` installs neither): the Helix TOML must parse with
tomllib and use the keys Helix reads; the Eglot Lisp must be balanced and name the server's
command, the trust command and the IR request. `tests/nvim/check_eglot.py` runs the Lisp in
a real Emacs where one is installed.
"""

from __future__ import annotations

import tomllib

from .editor_snippets import snippets

# helix-core's LanguageServerConfiguration (kebab-case) and the `[[language]]` keys used here.
HELIX_SERVER_KEYS = {"command", "args", "environment", "config", "timeout",
                     "required-root-patterns"}


def helix_tomls() -> list[dict]:
    return [tomllib.loads(text) for text in snippets("toml")]


def test_helix_language_server() -> None:
    languages = next(t for t in helix_tomls() if "language-server" in t)
    server = languages["language-server"]["torch-mlir-lens"]
    assert set(server) <= HELIX_SERVER_KEYS, set(server) - HELIX_SERVER_KEYS
    assert isinstance(server["command"], str)
    assert server["args"] == ["-P", "-m", "torch_mlir_lens", "serve"]  # nothing from the cwd
    assert isinstance(server["timeout"], int) and server["timeout"] > 20  # Helix's default
    # config becomes initializationOptions: settings only, never trust (see the docs).
    assert set(server["config"]) == {"settings"}
    assert "trusted" not in server["config"]["settings"]
    assert server["config"]["settings"]["defaultTarget"] == "linalg"
    python = next(lang for lang in languages["language"] if lang["name"] == "python")
    assert "torch-mlir-lens" in python["language-servers"]


def test_helix_ir_key() -> None:
    config = next(t for t in helix_tomls() if "keys" in t)
    commands = config["keys"]["normal"]["space"]["i"]
    assert all(isinstance(c, str) and c.startswith(":") for c in commands)
    assert "torch_mlir_lens lower %{buffer_name} --line %{cursor_line}" in commands[0]
    out = commands[0].split(">")[1].split()[0]
    assert commands[1] == f":vsplit {out}"


def _balanced(lisp: str) -> bool:
    """Parentheses and brackets balance outside strings, comments and character literals."""
    depth: list[str] = []
    pairs = {")": "(", "]": "["}
    i = 0
    while i < len(lisp):
        ch = lisp[i]
        if ch == ";":
            i = lisp.find("\n", i)
            if i < 0:
                break
        elif ch == '"':
            i += 1
            while lisp[i] != '"':
                i += 2 if lisp[i] == "\\" else 1
        elif ch == "?":
            i += 2 if lisp[i + 1] == "\\" else 1
        elif ch in "([":
            depth.append(ch)
        elif ch in ")]" and (not depth or depth.pop() != pairs[ch]):
            return False
        i += 1
    return not depth


def test_eglot_snippet() -> None:
    lisp = snippets("elisp")
    assert len(lisp) == 1
    text = lisp[0]
    assert _balanced(text)
    assert '"-P" "-m" "torch_mlir_lens" "serve"' in text  # nothing from the cwd
    assert "eglot-server-programs" in text and ":initializationOptions" in text
    assert '"torchMlirLens.setTrusted"' in text and "eglot-execute-command" in text
    assert ":torchMlirLens/lower" in text and "jsonrpc-request" in text
    assert ":risky t" in text  # the trusted list cannot come from .dir-locals.el


def test_balance_check_catches_a_missing_paren() -> None:
    assert _balanced('(a "x)" ?\\( [b] ; )\n)')
    assert not _balanced("(defun f () (list 1 2)")
    assert not _balanced("(a ])")
