"""Small readers of AST nodes: name columns, parameters, methods, literal values, `__init__`.

Values are folded only from literals (and integer arithmetic of them), never evaluated, so
what they return can travel in JSON replies.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from typing import Any

# Integer arithmetic folded in layer sizes (`nn.Linear(28 * 28, 64)`, `nn.Linear(2 * d, d)`).
_INT_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}


_NAME_RE = re.compile(r"(?:class|def)\s+(\w+)")


def name_columns(lines: list[str], node: ast.ClassDef | ast.FunctionDef) -> tuple[int, int]:
    """0-based columns of the name after `class`/`def` on the node's line."""
    line = lines[node.lineno - 1] if node.lineno - 1 < len(lines) else ""
    match = _NAME_RE.search(line, node.col_offset)
    if match and match.group(1) == node.name:
        return match.start(1), match.end(1)
    return node.col_offset, node.col_offset + len(node.name)


def params_of(fn: ast.FunctionDef | ast.AsyncFunctionDef, skip_self: bool) -> tuple[list[str], int]:
    """(parameter names, number of positional params without default)."""
    args = fn.args
    positional = list(args.posonlyargs) + list(args.args)
    if skip_self and positional:
        positional = positional[1:]
    names = [a.arg for a in positional] + [a.arg for a in args.kwonlyargs]
    n_defaults = len(args.defaults)
    required = max(len(positional) - n_defaults, 0)
    return names, required


def find_method(node: ast.ClassDef, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
            return stmt
    return None


def _literal(node: ast.AST | None) -> Any:
    """The value of a literal expression that JSON can carry (numbers, strings, booleans, None
    and tuples/lists of those), else None: these values travel in worker and LSP replies."""
    if node is None:
        return None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if _json_safe(value) else None


def _json_safe(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | str):
        return True
    if isinstance(value, float):
        return value == value and abs(value) != float("inf")  # no NaN/inf in strict JSON
    if isinstance(value, list | tuple):
        return len(value) <= 64 and all(_json_safe(v) for v in value)
    return False


def fold_literal(node: ast.expr, names: dict[str, Any]) -> Any:
    """A literal, a name with a known value, or integer arithmetic of those; else None."""
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in _INT_OPS:
        left, right = fold_literal(node.left, names), fold_literal(node.right, names)
        ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right))
        if ints and (right != 0 or not isinstance(node.op, ast.FloorDiv)):
            return _INT_OPS[type(node.op)](left, right)
        return None
    return _literal(node)


def init_signature(cls: ast.ClassDef) -> tuple[list[str], dict[str, Any]]:
    """(required constructor params, literal defaults) from `__init__` (none if not defined)."""
    init = find_method(cls, "__init__")
    if init is None:
        return [], {}
    args = init.args
    positional = (list(args.posonlyargs) + list(args.args))[1:]
    n_req = len(positional) - len(args.defaults)
    required = [a.arg for a in positional[:n_req]]
    defaults = {
        a.arg: fold_literal(d, {})
        for a, d in zip(positional[n_req:], args.defaults, strict=True)
    }
    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if d is None:
            required.append(a.arg)
        else:
            defaults[a.arg] = fold_literal(d, {})
    return required, defaults
