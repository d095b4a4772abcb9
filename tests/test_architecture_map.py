"""ARCHITECTURE.md is the one code map: it must name every package of the server, every file of
the VS Code client and every module of the Neovim plugin (a new one fails here until the map
says what it is for)."""

from __future__ import annotations

import ast
import re
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
    """A class that grows past this does several jobs: split it (one that did four jobs was
    split into the engine host, the check stages and the features)."""
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


# --- names in the docs that must still exist ---------------------------------------------------

CODE_ROOTS = ("server", "client/src", "editors", "bench", "syntaxes")
OUR_TOP_LEVEL = {"server", "client", "editors", "bench", "syntaxes", "tests", "docs", "examples"}
DOCS_WITH_NAMES = ("ARCHITECTURE.md", "docs/contracts.md")
_TICKED = re.compile(r"`([^`\s]+)`")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _code_files() -> list[Path]:
    out: list[Path] = []
    for root in CODE_ROOTS:
        out += [p for p in (ROOT / root).rglob("*") if p.is_file()
                and p.suffix in (".py", ".ts", ".lua", ".vim")
                and "__pycache__" not in p.parts]
    return [*out, ROOT / "package.json", ROOT / "Makefile"]


def _code_words() -> set[str]:
    words: set[str] = set()
    for path in _code_files():
        words |= set(_WORD.findall(path.read_text(encoding="utf-8", errors="replace")))
    return words


def _looks_like_code_name(token: str) -> bool:
    """`LoweringService`, `_print_check`, `run_server()`, `engine.prespawn`: names of code,
    not words, keys or values (`linalg`, `trusted`, `1.5`)."""
    name = token.removesuffix("()")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name) or name.endswith("."):
        return False
    return token.endswith("()") or any(_code_like(part) for part in name.split("."))


def _code_like(part: str) -> bool:
    camel = bool(re.search(r"[a-z][A-Z]", part)) and part[0].isupper()
    return camel or "_" in part.strip("_") or part.startswith("_")


def _doc_texts() -> dict[str, str]:
    """The docs that name code, and every package's docstring (its `__init__.py`)."""
    texts = {name: (ROOT / name).read_text(encoding="utf-8") for name in DOCS_WITH_NAMES}
    for init in sorted(PACKAGE.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        if doc:
            texts[str(init.relative_to(ROOT))] = doc
    return texts


# Files of users' projects and of libraries that the docs quote as examples.
EXAMPLE_FILES = {"layers.py", "modeling_gpt2.py", "modeling_llama.py", "pytorch_utils.py"}


def _ours(token: str) -> bool:
    """A file path of this repository (`lsp/front.py`, `tests/x.py`, `front.py`), not one of
    a library's (`torch/nn/modules/linear.py`) or an example's."""
    first = token.lstrip("./").split("/")[0]
    if "/" in token.strip("/"):
        return first in OUR_TOP_LEVEL or (PACKAGE / first).is_dir()
    return token not in EXAMPLE_FILES


def _gone_names(text: str, words: set[str], files: set[str]) -> list[str]:
    gone = []
    for token in sorted(set(_TICKED.findall(text))):
        if token.endswith((".py", ".ts", ".lua")):
            if _ours(token) and not any(f.endswith(token.lstrip("./")) for f in files):
                gone.append(token)
        elif _looks_like_code_name(token):
            parts = token.removesuffix("()").split(".")
            named = [p for p in parts[:-1] if _code_like(p)] + parts[-1:]
            if any(p not in words for p in named):
                gone.append(token)
    return gone


def test_the_docs_name_no_code_that_is_gone() -> None:
    """ARCHITECTURE.md, docs/contracts.md and each package's docstring: every file and every
    name of code they quote (a class, a function, a module) exists."""
    words = _code_words()
    files = {str(p.relative_to(ROOT)) for root in OUR_TOP_LEVEL
             for p in (ROOT / root).rglob("*") if p.is_file()}
    gone = {name: found for name, text in _doc_texts().items()
            if (found := _gone_names(text, words, files))}
    assert gone == {}, f"names that no longer exist: {gone}"


_MODULE_BULLET = re.compile(r"^\s*- ((?:`[^`]+`(?:, | and )?)+)\s*(?::|→|\()", re.M)


def _missing_modules(doc: str, package: Path) -> list[str]:
    """The modules a package's docstring lists (bullets that start with backticked names and a
    colon) that are not modules or subpackages of it."""
    named = [t.removesuffix(".py").rstrip("/") for m in _MODULE_BULLET.finditer(doc)
             for t in re.findall(r"`([^`]+)`", m.group(1))]
    return [n for n in named if re.fullmatch(r"[a-z_][a-z0-9_]*", n)
            and not (package / f"{n}.py").exists() and not (package / n).is_dir()]


def test_package_docstrings_list_only_their_modules() -> None:
    missing = {}
    for init in sorted(PACKAGE.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        if found := _missing_modules(doc, init.parent):
            missing[str(init.relative_to(PACKAGE))] = found
    assert missing == {}, f"package docstrings list modules that do not exist: {missing}"


def test_the_drift_check_sees_a_name_that_is_gone() -> None:
    words = {"Engine", "prespawn", "lower_module"}
    text = ("`Engine.prespawn()` calls `lower_module`; `LoweringService.check` and "
            "`_print_check` went, and so did `lsp/gone.py`")
    assert _gone_names(text, words, {"server/torch_mlir_lens/lsp/front.py"}) == [
        "LoweringService.check", "_print_check", "lsp/gone.py"]
