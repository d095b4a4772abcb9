"""ARCHITECTURE.md is the one code map: it must name every package of the server, every file of
the VS Code client and every module of the Neovim plugin (a new one fails here until the map
says what it is for)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAP = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
PACKAGE = ROOT / "server" / "torch_mlir_lens"


def _packages() -> list[str]:
    """Every package of the server, as `a/b/` relative to the package root."""
    return sorted(str(init.parent.relative_to(PACKAGE)) + "/"
                  for init in PACKAGE.rglob("__init__.py") if init.parent != PACKAGE)


def test_every_server_package_is_on_the_map() -> None:
    missing = [p for p in _packages() if f"`{p}`" not in MAP]
    assert missing == [], f"ARCHITECTURE.md does not name: {missing}"


def test_every_client_file_is_on_the_map() -> None:
    files = sorted(p.name for p in (ROOT / "client" / "src").glob("*.ts"))
    missing = [f for f in files if f"`{f}`" not in MAP]
    assert missing == [], f"ARCHITECTURE.md does not name: {missing}"


def test_every_neovim_module_is_on_the_map() -> None:
    lua = ROOT / "editors" / "nvim" / "lua" / "torch_mlir_lens"
    missing = [p.name for p in sorted(lua.glob("*.lua")) if f"`{p.name}`" not in MAP]
    assert missing == [], f"ARCHITECTURE.md does not name: {missing}"


def test_the_map_names_no_file_that_is_gone() -> None:
    """A `client/src` file or a server package named in the map exists."""
    named = {w.strip("`") for w in MAP.split() if w.startswith("`") and w.endswith(".ts`")}
    gone = [n for n in named if not (ROOT / "client" / "src" / n).exists()]
    assert gone == [], f"ARCHITECTURE.md names files that do not exist: {gone}"


MAX_CLASS_LINES = 300


def test_no_class_over_300_lines() -> None:
    """A class that grows past this does several jobs: split it (LoweringService did four)."""
    import ast

    import torch_mlir_lens

    package = Path(torch_mlir_lens.__file__).parent
    too_long = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_CLASS_LINES:
                    too_long.append(f"{path.relative_to(package)}: {node.name} ({lines} lines)")
    assert not too_long, too_long
