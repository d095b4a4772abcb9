"""The worker's state has one owner (worker/process/) and one bounded cache
(system/bounded_cache.py).

A warm worker keeps much between jobs; when each module kept its own globals and its own
hand-rolled LRU, nobody could say what a worker held, bound it, or start one afresh. The
rules, read from the source (ast):

- no `global` statement anywhere in the worker;
- no module-level mutable state in the worker: no name bound at module level to an empty
  container, to a container made by a call (`OrderedDict()`, `WeakKeyDictionary()`, `set()`,
  `itertools.count()`), or, for a lower-case name, to any container display (constant tables
  are UPPER_CASE and filled where written);
- no `OrderedDict()` made anywhere in the product but system/bounded_cache.py: an LRU is a
  `BoundedCache`.

Each rule is also run on a deliberate violation, so that a checker that sees nothing fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.harness.import_graph import PACKAGE_DIR

WORKER_DIR = PACKAGE_DIR / "worker"
BOUNDED_CACHE = PACKAGE_DIR / "system" / "bounded_cache.py"

# Calls that make a container (or a counter) whose contents change as the process runs.
_STATEFUL_CALLS = {"OrderedDict", "WeakKeyDictionary", "WeakValueDictionary", "WeakSet",
                   "defaultdict", "deque", "Counter", "count", "dict", "list", "set"}


def _called(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id
        if isinstance(func, ast.Attribute):
            return func.attr
    return None


def _module_assignments(tree: ast.Module) -> list[tuple[str, ast.AST, int]]:
    """(name, value, line) of each name bound at module level (not `__all__`)."""
    found = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id != "__all__":
                found.append((target.id, value, stmt.lineno))
    return found


def _is_mutable_state(name: str, value: ast.AST) -> bool:
    if _called(value) in _STATEFUL_CALLS:
        return True
    if isinstance(value, ast.Dict | ast.List | ast.Set):
        empty = not (value.keys if isinstance(value, ast.Dict) else value.elts)
        return empty or name.lstrip("_") != name.lstrip("_").upper()
    return False


def state_violations(source: str, where: str) -> list[str]:
    """What in `source` breaks the worker's state rules, each as "where:line: what"."""
    tree = ast.parse(source)
    out = [f"{where}:{node.lineno}: global {', '.join(node.names)}"
           for node in ast.walk(tree) if isinstance(node, ast.Global)]
    out += [f"{where}:{line}: module-level state {name}"
            for name, value, line in _module_assignments(tree) if _is_mutable_state(name, value)]
    return out


def ordered_dicts_made(source: str, where: str) -> list[str]:
    """Each `OrderedDict()` made in `source`, as "where:line"."""
    return [f"{where}:{node.lineno}" for node in ast.walk(ast.parse(source))
            if _called(node) == "OrderedDict"]


def _sources(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_worker_keeps_no_state_of_its_own_outside_its_owner() -> None:
    found = [v for path in _sources(WORKER_DIR)
             for v in state_violations(path.read_text(encoding="utf-8"),
                                       str(path.relative_to(PACKAGE_DIR)))]
    assert found == [], "worker state outside worker/process/ (a part: WORKER.part):\n" + (
        "\n".join(found))


def test_one_bounded_cache_in_the_product() -> None:
    made = [hit for path in _sources(PACKAGE_DIR) if path != BOUNDED_CACHE
            for hit in ordered_dicts_made(path.read_text(encoding="utf-8"),
                                          str(path.relative_to(PACKAGE_DIR)))]
    assert made == [], "an LRU of its own (use system/bounded_cache.BoundedCache):\n" + (
        "\n".join(made))


def test_the_rules_see_a_deliberate_violation() -> None:
    """What the worker once held: a global flag, an LRU per module, a counter table."""
    source = '''
from collections import OrderedDict
import itertools

_guarding = False
_entries: OrderedDict[str, int] = OrderedDict()
_pending: list[int] = []
counters = {"block_traces": 0}
_numbers = itertools.count(1)
_DTYPES = {"float32": "f32"}  # a constant table: allowed


def guarded() -> None:
    global _guarding
    _guarding = True
'''
    found = state_violations(source, "bad.py")
    assert found == ["bad.py:14: global _guarding", "bad.py:6: module-level state _entries",
                     "bad.py:7: module-level state _pending", "bad.py:8: module-level state "
                     "counters", "bad.py:9: module-level state _numbers"]
    assert ordered_dicts_made(source, "bad.py") == ["bad.py:6"]
