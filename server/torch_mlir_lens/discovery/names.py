"""Names in a file: dotted names, import aliases, and which qualified names are torch modules.

Aliases cover `import torch.nn as nn`, `from torch import nn`, `from torch.nn import Module`,
relative imports and top-level assignments such as `Base = nn.Module`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

# torch.nn names that are classes but not modules.
_NOT_MODULES = frozenset({"Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"})
_MODULE_QUALNAMES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})


def dotted_name(node: ast.AST) -> str | None:
    """`a.b.c` for Name/Attribute chains, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _walk_no_nested_scopes(nodes: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements under `nodes`, entering if/try/with blocks but not def/class bodies."""
    for node in nodes:
        yield node
        if isinstance(node, ast.If | ast.Try | ast.With):
            inner = list(node.body) + list(getattr(node, "orelse", []))
            inner += list(getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                inner.extend(handler.body)
            yield from _walk_no_nested_scopes(inner)


def import_aliases(body: list[ast.stmt]) -> dict[str, str]:
    """Local name → fully qualified dotted name for the file's imports and simple aliases."""
    aliases: dict[str, str] = {}
    for node in _walk_no_nested_scopes(body):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            for a in node.names:
                if a.name != "*":
                    sep = "" if base.endswith(".") else "."
                    aliases[a.asname or a.name] = f"{base}{sep}{a.name}" if base else a.name
    # `Base = nn.Module` style aliases at top level.
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], dotted_name(stmt.value)
            if isinstance(target, ast.Name) and value:
                aliases[target.id] = qualify(value, aliases)
    return aliases


def qualify(dotted: str, aliases: dict[str, str]) -> str:
    """Replace the first component of `dotted` by what it was imported as."""
    head, _, rest = dotted.partition(".")
    if head in aliases:
        return aliases[head] + ("." + rest if rest else "")
    return dotted


def is_torch_module_qualname(qual: str) -> bool:
    """True for `torch.nn.Module`, torch.nn layer classes and Lightning modules."""
    if qual in _MODULE_QUALNAMES:
        return True
    last = qual.rsplit(".", 1)[-1]
    if last == "LightningModule":
        return True
    return (
        qual.startswith("torch.nn.") and qual.count(".") == 2 and last[:1].isupper()
        and last not in _NOT_MODULES
    )
