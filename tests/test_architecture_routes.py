"""ARCHITECTURE.md's sentences that can be checked are true, not only its names.

- Each step of the two walks ("1. `path` `symbol`: ...") names a function, class or table that
  is defined in that file, and is named in the file of a step before it (its caller), except
  the step that crosses the worker's pipe: a walk whose steps were shuffled, or whose
  function moved to another file, fails here.
- Every invariant and every package's "Architecture Invariant" names the test that holds it
  (`tests/....py::test_name`), and that test exists.
- Every top-level package of the server has its Architecture Invariant.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "server" / "torch_mlir_lens"
DOC = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")

ACROSS_THE_PIPE = "(across the pipe)"
_STEP = re.compile(r"^\d+\. `([^`]+\.py)` `([^`]+)`(.*)$", re.M)
_TEST = re.compile(r"`(tests/[^`:]+\.py)::(\w+)`")
INVARIANT = "Architecture Invariant:"


def walks(doc: str) -> dict[str, list[tuple[str, str, str]]]:
    """Each walk's title → its steps (file, symbol, the rest of the step's first line)."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for part in doc.split("\n### ")[1:]:
        title, _, body = part.partition("\n")
        body = body.split("\n## ")[0]
        steps = _STEP.findall(body)
        if steps:
            out[title] = steps
    return out


def _tree(path: str) -> ast.Module:
    return ast.parse((PACKAGE / path).read_text(encoding="utf-8"))


def defines(tree: ast.Module, symbol: str) -> bool:
    """Whether the module defines `symbol` ("name", or "Class.method") at its top level."""
    first, _, member = symbol.partition(".")
    for node in tree.body:
        names: list[str] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        if first not in names:
            continue
        if not member:
            return True
        return isinstance(node, ast.ClassDef) and any(
            isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef) and m.name == member
            for m in node.body)
    return False


def names_in(tree: ast.Module) -> set[str]:
    """Every name a module uses: variables, attributes, imported names."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.alias):
            out.add(node.name.rpartition(".")[2])
    return out


def broken_steps(steps: list[tuple[str, str, str]]) -> list[str]:
    """What is untrue of a walk: a file or symbol that is not there, a step no step before it
    calls."""
    wrong = []
    seen: list[ast.Module] = []
    for index, (path, symbol, rest) in enumerate(steps, 1):
        if not (PACKAGE / path).is_file():
            wrong.append(f"step {index}: no file {path}")
            continue
        tree = _tree(path)
        if not defines(tree, symbol):
            wrong.append(f"step {index}: {path} defines no {symbol}")
        called = symbol.rpartition(".")[2]
        if seen and ACROSS_THE_PIPE not in rest and not any(
                called in names_in(t) for t in seen):
            wrong.append(f"step {index}: no step before it calls {symbol}")
        seen.append(tree)
    return wrong


def test_each_walk_is_true_of_the_code() -> None:
    found = walks(DOC)
    assert len(found) == 2, f"the two walks, each a numbered list of steps: {list(found)}"
    wrong = {title: w for title, steps in found.items() if (w := broken_steps(steps))}
    assert wrong == {}, wrong


def test_a_shuffled_walk_is_seen() -> None:
    """The check fails on a walk that is not the code's: its steps in another order, a
    function placed in the wrong file."""
    steps = next(iter(walks(DOC).values()))
    assert broken_steps(steps) == []
    shuffled = [steps[0], steps[-1], *steps[1:-1]]
    assert any("calls" in w for w in broken_steps(shuffled))
    misplaced = [steps[0], (steps[1][0], "no_such_function", "")]
    assert broken_steps(misplaced)[0].endswith("defines no no_such_function")


def _test_exists(path: str, name: str) -> bool:
    file = ROOT / path
    if not file.is_file():
        return False
    tree = ast.parse(file.read_text(encoding="utf-8"))
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name
               for n in tree.body)


def test_every_test_named_as_holding_an_invariant_exists() -> None:
    cited = _TEST.findall(DOC)
    assert len(cited) >= 20, "the invariants name the tests that hold them"
    missing = [f"{p}::{n}" for p, n in cited if not _test_exists(p, n)]
    assert missing == [], f"ARCHITECTURE.md names tests that do not exist: {missing}"


def test_every_package_has_an_architecture_invariant_held_by_a_test() -> None:
    """A package paragraph of the code map ("**N · `pkg/`**: ...") ends with its invariant and
    the test holding it."""
    paragraphs = {m.group(1): m.group(2) for m in re.finditer(
        r"^\*\*\d+ · `([^`]+)`\*\*:(.*?)(?=^\*\*\d+ · |^Nested packages|\Z)", DOC, re.M | re.S)}
    packages = {f"{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert sorted(packages - paragraphs.keys()) == [], "packages without a paragraph"
    without = [name for name, text in paragraphs.items()
               if INVARIANT not in text or not _TEST.search(text.split(INVARIANT, 1)[1])]
    assert without == [], f"no Architecture Invariant held by a test: {without}"
