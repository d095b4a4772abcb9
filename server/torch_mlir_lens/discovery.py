"""Find the `nn.Module` classes and lowerable functions of a Python file, statically.

No torch import and no execution: only the AST (and the `# torch-mlir-lens:` comments), so the
language server can list modules, draw code lenses and find "the module under the cursor" on every
keystroke. A file with syntax errors still yields what can be found, and nothing here raises.

What counts as a module class: a class deriving from `torch.nn.Module` (spelled through any import
alias: `import torch.nn as nn`, `from torch import nn`, `from torch.nn import Module`,
`torch.nn.Module`, or a top-level `Base = nn.Module`), from another `torch.nn` layer class
(`nn.Sequential`, ...), from a Lightning `LightningModule`, from another module class of the same
file (transitively), or from a module class imported from a sibling file (`from layers import
Block` / `from .layers import Block`, looked up next to `path`). Classes nested in classes are
found too, named by their dotted qualified name (`Outer.Inner`); classes defined inside functions
are not (nothing can reach them from outside).

Top-level functions are listed (kind "function") only when they take parameters and have an
inputs comment or a settings entry: nothing else says which functions are meant to be lowered.

`ModuleInfo.inputs` tells where the worker will find example inputs, in the precedence order of
`worker/inputs.py` (minus the CLI, which discovery does not know): "comment", "convention",
"settings", "derived", "inferred", else "missing". "derived" means a module class with inputs
uses this one: in this file (`parent_candidates`, transitively) or in a sibling file of the same
folder that imports it (`sibling_parents`, "model.py::Net").

Speed: the file is parsed per top-level statement through a cache keyed by (line, text), and
per-class facts are cached with their nodes, so an edit re-analyses only the class it touches;
an unchanged text is answered from a small result cache. Results are shared with that cache:
treat the returned objects as read-only.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import operator
import os
import re
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any

from torch_mlir_lens.annotations import InputAnnotation, parse_annotation_block

# torch.nn names that are classes but not modules.
_NOT_MODULES = frozenset({"Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"})
_MODULE_QUALNAMES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})

# First layers whose input shape can be inferred (see `layer_inputs_expr`).
INFERABLE_LAYERS = frozenset({
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "Embedding", "EmbeddingBag", "LSTM", "GRU", "RNN",
    "LayerNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
})
# Constructor parameter names of those layers, in order (to read positional literal arguments).
_LAYER_PARAMS: dict[str, tuple[str, ...]] = {
    "Linear": ("in_features", "out_features"),
    "LazyLinear": ("out_features",),
    "Conv1d": ("in_channels", "out_channels", "kernel_size"),
    "Conv2d": ("in_channels", "out_channels", "kernel_size"),
    "Conv3d": ("in_channels", "out_channels", "kernel_size"),
    "ConvTranspose1d": ("in_channels", "out_channels", "kernel_size"),
    "ConvTranspose2d": ("in_channels", "out_channels", "kernel_size"),
    "ConvTranspose3d": ("in_channels", "out_channels", "kernel_size"),
    "Embedding": ("num_embeddings", "embedding_dim"),
    "EmbeddingBag": ("num_embeddings", "embedding_dim"),
    "LSTM": ("input_size", "hidden_size"),
    "GRU": ("input_size", "hidden_size"),
    "RNN": ("input_size", "hidden_size"),
    "LayerNorm": ("normalized_shape",),
    "BatchNorm1d": ("num_features",),
    "BatchNorm2d": ("num_features",),
    "BatchNorm3d": ("num_features",),
}
_CONTAINERS = frozenset({"Sequential", "ModuleList"})
# Integer arithmetic folded in layer sizes (`nn.Linear(28 * 28, 64)`, `nn.Linear(2 * d, d)`).
_INT_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}
_DEFAULT_DIM = 16  # placeholder feature size when a layer's size is not a literal


@dataclass
class FirstLayer:
    """The statically found first layer of a module: its torch.nn class name and literal args."""

    kind: str  # "Linear", "Conv2d", ...
    params: dict[str, Any] = field(default_factory=dict)  # literal constructor args by name
    attr: str | None = None  # the `self.<attr>` of the outermost module that leads to it


@dataclass
class ModuleInfo:
    """One lowerable thing in a file.

    Lines are 1-based. `line` is the `class`/`def` line itself (decorators excluded; their first
    line is `decorator_line`); `end_line` is the last line of the body. `name_col`/`name_end_col`
    are 0-based columns of the name on `line`. For nested classes `name` is the dotted qualified
    name (`Outer.Inner`). `parent_candidates` are the module classes of this file whose bodies
    use this class (by name), i.e. where derived inputs can be recorded.
    """

    name: str
    kind: str  # "class" | "function"
    line: int
    end_line: int
    name_col: int
    name_end_col: int
    forward_line: int | None
    forward_end_line: int | None
    bases: list[str]
    inputs: str  # "comment" | "convention" | "settings" | "derived" | "inferred" | "missing"
    annotation: InputAnnotation | None
    parent_candidates: list[str] = field(default_factory=list)
    decorator_line: int = 0
    forward_params: list[str] = field(default_factory=list)  # without self
    forward_required: int = 0  # positional parameters of forward without default
    init_required: list[str] = field(default_factory=list)  # constructor params without default
    init_defaults: dict[str, Any] = field(default_factory=dict)  # literal constructor defaults
    convention: str | None = None  # which convention applies (e.g. "example_input_array")
    settings_key: str | None = None  # the settings key that matched
    first_layer: FirstLayer | None = None
    annotate_args: str | None = None  # source of the `@annotate_args(...)` argument on forward
    # Module classes of sibling files (same folder) that import and use this class and have
    # inputs themselves, as "file.py::Class": derived inputs across files.
    sibling_parents: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict of every field (the annotation and first layer as nested dicts)."""
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# Parsing that survives syntax errors


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _blank_bad_lines(lines: list[str], err: SyntaxError) -> bool:
    """Neutralise the lines a syntax error points at (in place); False if nothing changed.

    The bad statement becomes `pass` at its own indentation (so an enclosing block keeps a
    body); a header without a body gets ` pass` appended; an unexpected indent is blanked with
    every line indented under it.
    """
    lineno = (err.lineno or 0) - 1
    if not 0 <= lineno < len(lines):
        return False
    msg = err.msg or ""
    if "expected an indented block" in msg:
        prev = lineno - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        if prev >= 0 and lines[prev].rstrip().endswith(":"):
            lines[prev] = lines[prev].rstrip() + " pass"
            return True
        lineno = max(prev, 0)
    line = lines[lineno]
    if not line.strip():
        return False
    level = _indent(line)
    replacement = "" if "unexpected indent" in msg else line[:level] + "pass"
    if line == replacement:
        return False
    lines[lineno] = replacement
    if replacement == "":
        # Lines indented under the removed one would now be an unexpected indent too.
        nxt = lineno + 1
        while nxt < len(lines) and (not lines[nxt].strip() or _indent(lines[nxt]) > level):
            lines[nxt] = ""
            nxt += 1
    return True


def _repair_parse(lines: list[str], tries: int) -> ast.Module | None:
    """Parse, blanking the lines of each syntax error, at most `tries` times."""
    work = list(lines)
    for _ in range(tries):
        try:
            return ast.parse("\n".join(work))
        except SyntaxError as err:
            if not _blank_bad_lines(work, err):
                return None
        except (ValueError, RecursionError):
            return None
    return None


_CONTINUATION_KEYWORDS = ("else", "elif", "except", "finally", "case")


def _top_level_chunks(
    lines: list[str], blocked: set[int] | None = None,
) -> Iterator[tuple[int, int]]:
    """(start, end) 0-based line ranges of top-level statements, decorators kept with their def.

    `blocked` holds the indexes of lines that begin inside a string, brackets or a backslash
    continuation (never a statement start); without it, a rough guess from the text is used.
    """
    start = 0
    has_statement = False
    for i, line in enumerate(lines):
        if not line or line[0] in " \t#)]}'\"" or not line.strip():
            continue
        if blocked is not None and i in blocked:
            continue
        word = re.match(r"\w+", line)
        if word and word.group(0) in _CONTINUATION_KEYWORDS:
            continue
        is_decorator = line.startswith("@")
        if has_statement:
            yield start, i
            start, has_statement = i, not is_decorator
        elif not is_decorator:
            has_statement = True
    yield start, len(lines)


# Strings and comments; only triple-quoted strings (group "t") can span lines.
_LEX_RE = re.compile(
    r"""(?P<t>'''(?:[^'\\]|\\.|'(?!''))*(?:'''|$)|\"\"\"(?:[^"\\]|\\.|"(?!""))*(?:\"\"\"|$))"""
    r"""|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|\#[^\n]*""",
    re.DOTALL,
)


def _blocked_lines(text: str) -> set[int]:
    """0-based indexes of the lines that start inside a triple-quoted string.

    Lines inside brackets or after a backslash are not tracked: splitting there leaves an
    unfinished first part that fails to parse, and the caller then parses the whole file.
    """
    blocked: set[int] = set()
    pos = line = 0
    for m in _LEX_RE.finditer(text):
        if m.lastgroup == "t":
            newlines = m.group().count("\n")
            if newlines:
                line += text.count("\n", pos, m.start())
                pos = m.start()
                blocked.update(range(line + 1, line + newlines + 1))
    return blocked


# Parsed top-level chunks keyed by (first line, chunk text): an edit re-parses only its chunk.
_CHUNK_CACHE: OrderedDict[tuple[int, str], list[ast.stmt]] = OrderedDict()
_CHUNK_CACHE_SIZE = 4096


def _parse_chunked(text: str) -> list[ast.stmt] | None:
    """Parse the file chunk by chunk through the chunk cache; None if any chunk fails."""
    if "\r" in text or "\x0c" in text:
        return None  # line-break conventions the simple splitter does not model
    lines = text.split("\n")
    blocked = _blocked_lines(text)
    body: list[ast.stmt] = []
    for start, end in _top_level_chunks(lines, blocked):
        chunk = "\n".join(lines[start:end])
        key = (start, chunk)
        stmts = _CHUNK_CACHE.get(key)
        if stmts is None:
            try:
                tree = ast.parse(chunk)
            except (SyntaxError, ValueError, RecursionError):
                return None
            # Shift to the chunk's real lines (padding with newlines instead made parsing a
            # big file quadratic).
            stmts = ast.increment_lineno(tree, start).body
            _CHUNK_CACHE[key] = stmts
            if len(_CHUNK_CACHE) > _CHUNK_CACHE_SIZE:
                _CHUNK_CACHE.popitem(last=False)
        else:
            _CHUNK_CACHE.move_to_end(key)
        body.extend(stmts)
    return body


def parse_tolerant(text: str) -> list[ast.stmt]:
    """The file's top-level statements; parts with syntax errors are left out, never raised.

    Parsed chunk by chunk through a cache (an edit in one class re-parses only that class); when
    a chunk does not parse on its own the whole file is parsed, and when that fails too, each
    top-level chunk is repaired (bad lines neutralised) or dropped.
    """
    text = text.removeprefix("\ufeff")  # a byte-order mark is not source
    with warnings.catch_warnings():
        # Half-typed code makes the compiler warn (invalid escapes, ...): not ours to report.
        warnings.simplefilter("ignore")
        return _parse_tolerant(text)


def parses_cleanly(text: str) -> bool:
    """Whether the whole file parses as it is (through the chunk cache when it can)."""
    text = text.removeprefix("\ufeff")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _parse_chunked(text) is not None or _parse(text) is not None


def _parse_tolerant(text: str) -> list[ast.stmt]:
    chunked = _parse_chunked(text)
    if chunked is not None:
        return chunked
    tree = _parse(text)
    if tree is not None:
        return tree.body
    lines = text.splitlines()
    body: list[ast.stmt] = []
    for start, end in _top_level_chunks(lines):
        chunk = _repair_parse(lines[start:end], tries=8)
        if chunk is None:
            continue
        ast.increment_lineno(chunk, start)
        body.extend(chunk.body)
    return body


# ---------------------------------------------------------------------------------------------
# Names


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


# ---------------------------------------------------------------------------------------------
# Sibling files (module classes imported from next to the file)

_SIBLING_CACHE: dict[tuple[str, int, int], frozenset[str]] = {}


def _sibling_path(qual: str, folder: str) -> tuple[str, str] | None:
    """(file, class) for `layers.Block` / `.layers.Block` / `pkg.layers.Block` next to `folder`."""
    stripped = qual.lstrip(".")
    if "." not in stripped:
        return None
    mod, _, cls = stripped.rpartition(".")
    rel = os.path.join(*mod.split("."))
    for candidate in (rel + ".py", os.path.join(rel, "__init__.py")):
        full = os.path.join(folder, candidate)
        if os.path.isfile(full):
            return full, cls
    return None


def _module_classes_of_file(path: str, depth: int) -> frozenset[str]:
    """Names of the module classes defined in another file (cached by mtime and size)."""
    try:
        st = os.stat(path)
        key = (path, st.st_mtime_ns, st.st_size)
        consulted = _CONSULTED.get()
        if consulted is not None:
            consulted[path] = (st.st_mtime_ns, st.st_size)
        if key in _SIBLING_CACHE:
            return _SIBLING_CACHE[key]
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return frozenset()
    body = parse_tolerant(text)
    names = frozenset(_module_class_names(body, import_aliases(body), path, depth + 1))
    _SIBLING_CACHE[key] = names
    return names


# ---------------------------------------------------------------------------------------------
# Classes


@dataclass
class _Class:
    node: ast.ClassDef
    qualname: str


def _collect_classes(body: list[ast.stmt], prefix: str = "") -> list[_Class]:
    """Classes at top level and nested in classes (in source order)."""
    found: list[_Class] = []
    for stmt in body:
        if isinstance(stmt, ast.ClassDef):
            qual = prefix + stmt.name
            found.append(_Class(stmt, qual))
            found.extend(_collect_classes(stmt.body, qual + "."))
        elif isinstance(stmt, ast.If | ast.Try):
            # Classes defined conditionally (e.g. under `if HAVE_X:`) are still reachable.
            inner = list(stmt.body) + list(getattr(stmt, "orelse", []))
            for handler in getattr(stmt, "handlers", []):
                inner.extend(handler.body)
            found.extend(_collect_classes(inner, prefix))
    return found


def _module_class_names(
    body: list[ast.stmt], aliases: dict[str, str], path: str | None, depth: int = 0,
) -> set[str]:
    """Simple names of the module classes among `body`'s classes (fixed point over bases)."""
    classes = _collect_classes(body)
    modules: set[str] = set()
    folder = os.path.dirname(os.path.abspath(path)) if path else None
    changed = True
    while changed:
        changed = False
        for c in classes:
            if c.node.name in modules:
                continue
            if any(_base_is_module(b, aliases, modules, folder, depth) for b in c.node.bases):
                modules.add(c.node.name)
                changed = True
    return modules


def _base_is_module(
    base: ast.expr, aliases: dict[str, str], local: set[str], folder: str | None, depth: int,
) -> bool:
    dotted = dotted_name(base)
    if dotted is None:
        return False
    if dotted in local:
        return True  # a module class of this file
    head, _, _ = dotted.partition(".")
    if "." in dotted and head not in aliases and dotted.rsplit(".", 1)[-1] in local:
        return True  # `Outer.Inner` nested in this file
    qual = qualify(dotted, aliases)
    if is_torch_module_qualname(qual):
        return True
    if folder and depth < 3 and head in aliases:
        found = _sibling_path(qual, folder)
        if found:
            return found[1] in _module_classes_of_file(found[0], depth)
    return False


_NAME_RE = re.compile(r"(?:class|def)\s+(\w+)")
_IDENT_RE = re.compile(r"[A-Za-z_]\w*")
_EXAMPLE_STORE_RE = re.compile(r"\bself\.example_input_array\s*(?::[^=\n]*)?=(?!=)")


def _name_columns(lines: list[str], node: ast.ClassDef | ast.FunctionDef) -> tuple[int, int]:
    """0-based columns of the name after `class`/`def` on the node's line."""
    line = lines[node.lineno - 1] if node.lineno - 1 < len(lines) else ""
    match = _NAME_RE.search(line, node.col_offset)
    if match and match.group(1) == node.name:
        return match.start(1), match.end(1)
    return node.col_offset, node.col_offset + len(node.name)


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef, skip_self: bool) -> tuple[list[str], int]:
    """(parameter names, number of positional params without default)."""
    args = fn.args
    positional = list(args.posonlyargs) + list(args.args)
    if skip_self and positional:
        positional = positional[1:]
    names = [a.arg for a in positional] + [a.arg for a in args.kwonlyargs]
    n_defaults = len(args.defaults)
    required = max(len(positional) - n_defaults, 0)
    return names, required


def _method(node: ast.ClassDef, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
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


def _fold(node: ast.expr, names: dict[str, Any]) -> Any:
    """A literal, a name with a known value, or integer arithmetic of those; else None."""
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in _INT_OPS:
        left, right = _fold(node.left, names), _fold(node.right, names)
        ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right))
        if ints and (right != 0 or not isinstance(node.op, ast.FloorDiv)):
            return _INT_OPS[type(node.op)](left, right)
        return None
    return _literal(node)


def _init_signature(cls: ast.ClassDef) -> tuple[list[str], dict[str, Any]]:
    """(required constructor params, literal defaults) from `__init__` (none if not defined)."""
    init = _method(cls, "__init__")
    if init is None:
        return [], {}
    args = init.args
    positional = (list(args.posonlyargs) + list(args.args))[1:]
    n_req = len(positional) - len(args.defaults)
    required = [a.arg for a in positional[:n_req]]
    defaults = {a.arg: _fold(d, {}) for a, d in zip(positional[n_req:], args.defaults, strict=True)}
    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if d is None:
            required.append(a.arg)
        else:
            defaults[a.arg] = _fold(d, {})
    return required, defaults


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a body, entering compound statements but not nested def/class."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for name in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(stmt, name, []))
        for handler in getattr(stmt, "handlers", []):
            yield from _statements(handler.body)


def _self_assignments(cls: ast.ClassDef) -> dict[str, ast.expr]:
    """`self.<attr> = <value>` in `__init__`, in order."""
    init = _method(cls, "__init__")
    found: dict[str, ast.expr] = {}
    if init is None:
        return found
    for node in _statements(init.body):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                        and t.value.id == "self" and node.value is not None):
                    found.setdefault(t.attr, node.value)
    return found


def _calls_in_evaluation_order(node: ast.AST) -> Iterator[ast.Call]:
    """Calls under `node` in the order they complete (arguments before the call itself)."""
    if isinstance(node, ast.Call):
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            yield from _calls_in_evaluation_order(arg)
        yield from _calls_in_evaluation_order(node.func)
        yield node
        return
    for child in ast.iter_child_nodes(node):
        yield from _calls_in_evaluation_order(child)


def _first_used_attr(cls: ast.ClassDef, attrs: dict[str, ast.expr]) -> str | None:
    """The first registered layer `forward` calls (`self.<attr>(...)`), else the first it uses."""
    fwd = _method(cls, "forward")
    if fwd is None:
        return None
    for call in _calls_in_evaluation_order(fwd):
        func = call.func
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id == "self" and func.attr in attrs):
            return func.attr
    uses = [
        n for n in ast.walk(fwd)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
        and n.value.id == "self" and n.attr in attrs
    ]
    uses.sort(key=lambda n: (n.lineno, n.col_offset))
    return uses[0].attr if uses else None


class _Analyzer:
    """Per-file state shared by the module analyses."""

    def __init__(self, text: str, path: str | None, body: list[ast.stmt]) -> None:
        self.text = text
        self.lines = text.splitlines()
        self.path = path
        self.body = body
        self.aliases = import_aliases(body)
        self.classes = _collect_classes(body)
        self.by_name = {c.node.name: c for c in self.classes}
        self.module_names = _module_class_names(body, self.aliases, path)
        self._scans: dict[int, tuple[set[str], bool]] = {}
        self.context = (tuple(sorted(self.aliases.items())), frozenset(self.module_names))
        self._deps: list[tuple[str, ast.ClassDef]] = []

    def first_layer(self, cls: ast.ClassDef, depth: int = 0) -> FirstLayer | None:
        """The first layer `forward` uses (else the first registered), followed into containers
        and same-file submodules. Cached per class node while the imports, the set of module
        classes and the classes it was followed into stay the same."""
        if depth > 0:
            return self._first_layer(cls, depth)
        hit = _node_cache_get(cls, "first_layer")
        if hit is not None:
            context, result, deps = hit
            if context == self.context and all(
                name in self.by_name and self.by_name[name].node is node for name, node in deps
            ):
                return copy.copy(result)
        self._deps = []
        result = self._first_layer(cls, 0)
        _node_cache_put(cls, "first_layer", (self.context, result, tuple(self._deps)))
        return copy.copy(result)

    def _first_layer(self, cls: ast.ClassDef, depth: int) -> FirstLayer | None:
        attrs = self._layer_attrs(cls)
        if not attrs or depth > 4:
            return None
        attr = _first_used_attr(cls, attrs) or next(iter(attrs))
        layer = self._layer_of_expr(attrs[attr], depth, self._init_defaults(cls))
        if layer is not None:
            layer.attr = attr
        return layer

    def _init_defaults(self, cls: ast.ClassDef) -> dict[str, Any]:
        return _init_signature(cls)[1]

    def _layer_attrs(self, cls: ast.ClassDef) -> dict[str, ast.expr]:
        return {k: v for k, v in _self_assignments(cls).items() if self._is_layer_expr(v)}

    def _is_layer_expr(self, value: ast.expr) -> bool:
        if isinstance(value, ast.Call):
            callee = dotted_name(value.func)
            if callee is None:
                return False
            return callee in self.module_names or is_torch_module_qualname(
                qualify(callee, self.aliases)
            )
        return False

    def _layer_of_expr(
        self, value: ast.expr, depth: int, defaults: dict[str, Any],
    ) -> FirstLayer | None:
        if not isinstance(value, ast.Call):
            return None
        callee = dotted_name(value.func) or ""
        if callee in self.by_name and callee in self.module_names:
            self._deps.append((callee, self.by_name[callee].node))
            return self.first_layer(self.by_name[callee].node, depth + 1)
        kind = qualify(callee, self.aliases).rsplit(".", 1)[-1]
        if kind in _CONTAINERS:
            items = value.args
            if items and isinstance(items[0], ast.List | ast.Tuple | ast.ListComp):
                first = items[0]
                items = first.elts if not isinstance(first, ast.ListComp) else [first.elt]
            if items and isinstance(items[0], ast.Starred):
                inner = items[0].value
                items = inner.elts if isinstance(inner, ast.List | ast.Tuple) else []
            return self._layer_of_expr(items[0], depth + 1, defaults) if items else None
        if kind not in INFERABLE_LAYERS:
            return FirstLayer(kind=kind)
        return FirstLayer(kind=kind, params=self._layer_params(kind, value, defaults))

    @staticmethod
    def _layer_params(kind: str, call: ast.Call, defaults: dict[str, Any]) -> dict[str, Any]:
        """Literal constructor arguments; names that are `__init__` params use their default."""

        def value(node: ast.expr) -> Any:
            return _fold(node, defaults)

        params: dict[str, Any] = {}
        for name, arg in zip(_LAYER_PARAMS.get(kind, ()), call.args, strict=False):
            params[name] = value(arg)
        for kw in call.keywords:
            if kw.arg:
                params[kw.arg] = value(kw.value)
        return params

    def scan(self, cls: ast.ClassDef) -> tuple[set[str], bool]:
        """(identifiers in the class's text, whether it assigns `self.example_input_array`).

        Read from the source text with regexes rather than by walking the AST: several times
        faster on big files, and a stray match in a comment only adds a harmless candidate.
        """
        cached = self._scans.get(id(cls)) or _node_cache_get(cls, "scan")
        if cached is None:
            start = min([d.lineno for d in cls.decorator_list] + [cls.lineno]) - 1
            segment = "\n".join(self.lines[start : cls.end_lineno or cls.lineno])
            names = set(_IDENT_RE.findall(segment))
            cached = (names, bool(_EXAMPLE_STORE_RE.search(segment)))
            _node_cache_put(cls, "scan", cached)
        self._scans[id(cls)] = cached
        return cached

    def uses(self, cls: ast.ClassDef) -> set[str]:
        """Names of this file's module classes that `cls`'s body refers to."""
        return {n for n in self.scan(cls)[0] if n in self.module_names and n != cls.name}

    def annotate_args_source(
        self, fwd: ast.FunctionDef | ast.AsyncFunctionDef | None,
    ) -> str | None:
        """The argument source of an `@annotate_args(...)` decorator on forward."""
        if fwd is None:
            return None
        for dec in fwd.decorator_list:
            if isinstance(dec, ast.Call):
                callee = dotted_name(dec.func) or ""
                if callee.rsplit(".", 1)[-1] == "annotate_args" and dec.args:
                    return ast.get_source_segment(self.text, dec.args[0])
        return None


def _settings_key(
    name: str, path: str | None, settings: dict[str, str] | None, workspace: str | None,
) -> str | None:
    """The settings key for this module: `rel/path.py::Name` first, then `Name`."""
    if not settings:
        return None
    if path:
        abspath = os.path.abspath(path)
        rels = [os.path.basename(abspath)]
        if workspace:
            rels.insert(0, os.path.relpath(abspath, os.path.abspath(workspace)))
        for rel in rels:
            key = rel.replace(os.sep, "/") + "::" + name
            if key in settings:
                return key
    return name if name in settings else None


def settings_key_for(
    name: str, path: str | None, settings: dict[str, str] | None, workspace: str | None,
) -> str | None:
    """Public form of the settings lookup (the worker uses the same rule)."""
    return _settings_key(name, path, settings, workspace)


def _convention(cls: ast.ClassDef, stores_example: bool) -> str | None:
    """Which per-class convention the class itself provides, if any."""
    if _method(cls, "example_inputs") is not None:
        return "example_inputs"
    for stmt in cls.body:
        targets: list[ast.expr] = []
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, ast.AnnAssign):
            targets = [stmt.target]
        if any(isinstance(t, ast.Name) and t.id == "example_input_array" for t in targets):
            return "example_input_array"
    return "example_input_array" if stores_example else None


def _has_module_example_inputs(body: list[ast.stmt]) -> bool:
    return any(isinstance(s, ast.FunctionDef) and s.name == "example_inputs" for s in body)


def find_modules(
    text: str,
    path: str | None = None,
    *,
    settings_inputs: dict[str, str] | None = None,
    workspace: str | None = None,
) -> list[ModuleInfo]:
    """All module classes (and annotated top-level functions) of a file, in source order.

    Never raises: a file with syntax errors yields the modules of the parts that parse.
    """
    key = (
        hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), path, workspace,
        tuple(sorted((settings_inputs or {}).items())),
    )
    cached = _RESULT_CACHE.get(key)
    if cached is not None and _siblings_unchanged(cached[1]):
        _RESULT_CACHE.move_to_end(key)
        return [copy.copy(m) for m in cached[0]]
    consulted: dict[str, tuple[int, int]] = {}
    token = _CONSULTED.set(consulted)
    try:
        infos = _find_modules(text, path, settings_inputs, workspace)
    except Exception:  # a bug here must not take the language server down
        return []
    finally:
        _CONSULTED.reset(token)
    _RESULT_CACHE[key] = ([copy.copy(m) for m in infos], consulted)
    if len(_RESULT_CACHE) > _RESULT_CACHE_SIZE:
        _RESULT_CACHE.popitem(last=False)
    return infos


# The language server asks again for an unchanged document (lenses, hover, diagnostics): a small
# LRU of results, invalidated when a sibling file that was consulted changed on disk.
_RESULT_CACHE: OrderedDict[tuple[Any, ...], tuple[list[ModuleInfo], dict[str, tuple[int, int]]]]
_RESULT_CACHE = OrderedDict()
_RESULT_CACHE_SIZE = 32
_CONSULTED: ContextVar[dict[str, tuple[int, int]] | None] = ContextVar("consulted", default=None)


def _siblings_unchanged(consulted: dict[str, tuple[int, int]]) -> bool:
    for sibling, stamp in consulted.items():
        try:
            st = os.stat(sibling)
        except OSError:
            return False
        if (st.st_mtime_ns, st.st_size) != stamp:
            return False
    return True


def _find_modules(
    text: str, path: str | None, settings: dict[str, str] | None, workspace: str | None,
) -> list[ModuleInfo]:
    return _analyze(text, path, settings, workspace, siblings=True)[0]


def _analyze(
    text: str, path: str | None, settings: dict[str, str] | None, workspace: str | None,
    *, siblings: bool,
) -> tuple[list[ModuleInfo], _Analyzer]:
    body = parse_tolerant(text)
    an = _Analyzer(text, path, body)
    infos: list[ModuleInfo] = []
    for c in an.classes:
        if c.node.name in an.module_names:
            infos.append(_class_info(an, c, settings, path, workspace))
    _link_parents(an, infos)
    _resolve_statuses(an, infos, path if siblings else None)
    infos.extend(_function_infos(an, body, settings, path, workspace))
    infos.sort(key=lambda m: m.line)
    return infos, an


def _class_info(
    an: _Analyzer, c: _Class, settings: dict[str, str] | None, path: str | None,
    workspace: str | None,
) -> ModuleInfo:
    node = c.node
    facts = _node_cache_get(node, "facts")
    if facts is None:
        facts = _class_facts(an, node)
        _node_cache_put(node, "facts", facts)
    # Fresh containers: callers may change an info without touching the cached facts.
    fields: dict[str, Any] = {
        k: v.copy() if isinstance(v, list | dict) else v for k, v in facts.items()
    }
    return ModuleInfo(
        name=c.qualname, kind="class", inputs="missing",
        annotation=parse_annotation_block(an.lines, facts["decorator_line"]),
        settings_key=_settings_key(c.qualname, path, settings, workspace),
        first_layer=an.first_layer(node),
        **fields,
    )


def _class_facts(an: _Analyzer, node: ast.ClassDef) -> dict[str, Any]:
    """What depends on the class's own text only (cached with its parsed chunk)."""
    fwd = _method(node, "forward")
    params, required = _params(fwd, skip_self=True) if fwd else ([], 0)
    init_required, init_defaults = _init_signature(node)
    col, end_col = _name_columns(an.lines, node)
    return {
        "line": node.lineno, "end_line": node.end_lineno or node.lineno,
        "name_col": col, "name_end_col": end_col,
        "forward_line": fwd.lineno if fwd else None,
        "forward_end_line": (fwd.end_lineno or fwd.lineno) if fwd else None,
        "bases": [dotted_name(b) or ast.unparse(b) for b in node.bases],
        "decorator_line": min([d.lineno for d in node.decorator_list] + [node.lineno]),
        "forward_params": params, "forward_required": required,
        "init_required": init_required, "init_defaults": init_defaults,
        "convention": _convention(node, an.scan(node)[1]),
        "annotate_args": an.annotate_args_source(fwd),
    }


# Per-node results, valid as long as the node object is alive in the chunk cache: the entry
# holds the node, so its id cannot be reused while the entry exists.
_NODE_CACHE: dict[tuple[int, str], tuple[ast.AST, Any]] = {}
_NODE_CACHE_SIZE = 20000


def _node_cache_get(node: ast.AST, what: str) -> Any:
    hit = _NODE_CACHE.get((id(node), what))
    return hit[1] if hit is not None and hit[0] is node else None


def _node_cache_put(node: ast.AST, what: str, value: Any) -> None:
    if len(_NODE_CACHE) >= _NODE_CACHE_SIZE:
        _NODE_CACHE.clear()
    _NODE_CACHE[(id(node), what)] = (node, value)


def _link_parents(an: _Analyzer, infos: list[ModuleInfo]) -> None:
    """Fill `parent_candidates`: the module classes whose bodies use each class."""
    simple = {i.name.rsplit(".", 1)[-1]: i for i in infos}
    for c in an.classes:
        if c.node.name not in an.module_names:
            continue
        for used in sorted(an.uses(c.node)):
            child = simple.get(used)
            if child is not None and c.qualname not in child.parent_candidates:
                child.parent_candidates.append(c.qualname)


def _resolve_statuses(an: _Analyzer, infos: list[ModuleInfo], path: str | None) -> None:
    """Set `inputs` for each class, in precedence order; derived needs a fixed point.

    With a `path`, classes still without inputs look for parents in sibling files too.
    """
    module_fn = _has_module_example_inputs(an.body)
    by_name = {i.name: i for i in infos}
    for info in infos:
        if info.annotation is not None and info.annotation.inputs:
            info.inputs = "comment"
        elif info.convention is None and info.annotate_args:
            info.convention = "annotate_args"
            info.inputs = "convention"
        elif info.convention is None and module_fn and not info.parent_candidates:
            # A module-level example_inputs() serves the top-level models (see worker/inputs.py).
            info.convention = "module_example_inputs"
            info.inputs = "convention"
        elif info.convention is not None:
            info.inputs = "convention"
        elif info.settings_key is not None:
            info.inputs = "settings"
    _inherit_conventions(infos, by_name)
    if path:
        _link_sibling_parents(path, [i for i in infos if i.inputs == "missing"])
    for info in infos:
        if info.inputs == "missing" and info.sibling_parents:
            info.inputs = "derived"
    changed = True
    while changed:
        changed = False
        for info in infos:
            if info.inputs in ("missing", "inferred") and any(
                by_name[p].inputs not in ("missing",) for p in info.parent_candidates
                if p in by_name
            ):
                if info.inputs != "derived":
                    info.inputs, changed = "derived", True
            elif info.inputs == "missing" and _inferable(info):
                info.inputs, changed = "inferred", True


def _stamp_and_read(path: str) -> str | None:
    """A sibling's text (cached by mtime and size), noting it for the result cache."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    consulted = _CONSULTED.get()
    if consulted is not None:
        consulted[path] = (st.st_mtime_ns, st.st_size)
    key = (path, st.st_mtime_ns, st.st_size)
    text = _TEXT_CACHE.get(key)
    if text is None:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return None
        if len(_TEXT_CACHE) > 256:
            _TEXT_CACHE.clear()
        _TEXT_CACHE[key] = text
    return text


_TEXT_CACHE: dict[tuple[str, int, int], str] = {}
_MAX_SIBLING_FILES = 200  # a huge folder is not worth a slower keystroke


def _link_sibling_parents(path: str, missing: list[ModuleInfo]) -> None:
    """Fill `sibling_parents` of `missing` classes from the .py files next to `path`."""
    wanted = {i.name: i for i in missing if i.kind == "class" and "." not in i.name}
    if not wanted:
        return
    path = os.path.abspath(path)
    folder, base = os.path.split(path)
    stem = os.path.splitext(base)[0]
    try:
        st = os.stat(folder)  # its mtime changes when files are added or removed
        consulted = _CONSULTED.get()
        if consulted is not None:
            consulted[folder] = (st.st_mtime_ns, st.st_size)
        files = sorted(f for f in os.listdir(folder) if f.endswith(".py") and f != base)
    except OSError:
        return
    for fname in files[:_MAX_SIBLING_FILES]:
        text = _stamp_and_read(os.path.join(folder, fname))
        if text is None or stem not in text:
            continue
        for cls, parent in _sibling_users(os.path.join(folder, fname), text, stem, set(wanted)):
            wanted[cls].sibling_parents.append(f"{fname}::{parent}")


def _sibling_users(
    file: str, text: str, stem: str, names: set[str],
) -> Iterator[tuple[str, str]]:
    """(our class, their class) for each module class of `file` with inputs that uses ours."""
    infos, an = _analyze(text, file, None, None, siblings=False)
    local: dict[str, str] = {}  # their name → our class
    for alias, qual in an.aliases.items():
        module, _, cls = qual.lstrip(".").rpartition(".")
        if module.rsplit(".", 1)[-1] == stem and cls in names:
            local[alias] = cls
        elif qual.lstrip(".").rsplit(".", 1)[-1] == stem:  # `import layers`: layers.Block
            local.update({n: n for n in names})
    if not local:
        return
    by_name = {c.qualname: c for c in an.classes}
    for info in infos:
        known = info.inputs not in ("missing", "derived")  # the worker records from these
        if info.kind != "class" or not known or info.name not in by_name:
            continue
        used = an.scan(by_name[info.name].node)[0]
        for their, ours in sorted(local.items()):
            if their in used:
                yield ours, info.name


def _inherit_conventions(infos: list[ModuleInfo], by_name: dict[str, ModuleInfo]) -> None:
    """A subclass of a same-file class that provides a convention gets it too."""
    for info in infos:
        if info.inputs != "missing":
            continue
        for base in info.bases:
            parent = by_name.get(base)
            if parent is not None and parent.convention in ("example_inputs",
                                                            "example_input_array"):
                info.convention, info.inputs = parent.convention, "convention"
                break


def _inferable(info: ModuleInfo) -> bool:
    """Forward takes one tensor, the constructor needs nothing, the first layer is known."""
    needs_init = bool(info.init_required) and not (info.annotation and info.annotation.init)
    return (
        info.forward_required == 1 and not needs_init and info.first_layer is not None
        and info.first_layer.kind in INFERABLE_LAYERS
    )


def _function_infos(
    an: _Analyzer, body: list[ast.stmt], settings: dict[str, str] | None, path: str | None,
    workspace: str | None,
) -> list[ModuleInfo]:
    """Top-level functions with parameters and an inputs comment or settings entry."""
    infos: list[ModuleInfo] = []
    for stmt in body:
        if not isinstance(stmt, ast.FunctionDef) or stmt.name == "example_inputs":
            continue
        params, required = _params(stmt, skip_self=False)
        if not params:
            continue
        deco_line = min([d.lineno for d in stmt.decorator_list] + [stmt.lineno])
        ann = parse_annotation_block(an.lines, deco_line)
        key = _settings_key(stmt.name, path, settings, workspace)
        status = "comment" if ann is not None and ann.inputs else "settings" if key else None
        if status is None:
            continue
        col, end_col = _name_columns(an.lines, stmt)
        end = stmt.end_lineno or stmt.lineno
        infos.append(ModuleInfo(
            name=stmt.name, kind="function", line=stmt.lineno, end_line=end,
            name_col=col, name_end_col=end_col, forward_line=stmt.lineno, forward_end_line=end,
            bases=[], inputs=status, annotation=ann, decorator_line=deco_line,
            forward_params=params, forward_required=required, settings_key=key,
        ))
    return infos


def module_at_line(modules: list[ModuleInfo], line: int) -> ModuleInfo | None:
    """The innermost module whose range (decorators included) holds the 1-based `line`."""
    best: ModuleInfo | None = None
    best_start = 0
    for m in modules:
        start = min(m.decorator_line or m.line, m.line)
        if start <= line <= m.end_line and (best is None or start >= best_start):
            best, best_start = m, start
    return best


# ---------------------------------------------------------------------------------------------
# Input templates


def _dim(params: dict[str, Any], name: str) -> int:
    value = params.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else (
        _DEFAULT_DIM
    )


def layer_inputs_expr(kind: str, params: dict[str, Any]) -> str | None:
    """A Python expression (using `torch`) for a small input that fits a first layer of `kind`.

    `params` holds the layer's constructor values (`in_features`, `in_channels`, ...); missing
    ones fall back to a placeholder size. Shared by the quick-fix template and the worker's
    inference, so both suggest the same thing. None when the layer kind is not known.
    """
    if kind in ("Linear", "Bilinear"):
        return f"torch.randn(2, {_dim(params, 'in_features')})"
    if kind == "LazyLinear":
        return f"torch.randn(2, {_DEFAULT_DIM})"
    spatial = {"1d": "32", "2d": "32, 32", "3d": "8, 16, 16"}
    if kind.startswith(("Conv", "ConvTranspose")) and kind[-2:] in spatial:
        return f"torch.randn(1, {_dim(params, 'in_channels')}, {spatial[kind[-2:]]})"
    if kind in ("Embedding", "EmbeddingBag"):
        return f"torch.randint(0, {_dim(params, 'num_embeddings')}, (2, 8))"
    if kind in ("LSTM", "GRU", "RNN"):
        size = _dim(params, "input_size")
        shape = f"2, 8, {size}" if params.get("batch_first") else f"8, 2, {size}"
        return f"torch.randn({shape})"
    if kind == "LayerNorm":
        normalized = params.get("normalized_shape")
        if isinstance(normalized, list | tuple):
            dims = list(normalized)
        else:
            dims = [_dim(params, "normalized_shape")]
        return f"torch.randn(2, 8, {', '.join(str(d) for d in dims)})"
    if kind.startswith("BatchNorm") and kind[-2:] in spatial:
        n = _dim(params, "num_features")
        extra = {"1d": "", "2d": ", 16, 16", "3d": ", 4, 8, 8"}[kind[-2:]]
        return f"torch.randn(2, {n}{extra})"
    return None


def input_template(info: ModuleInfo, text: str) -> str:
    """The `# torch-mlir-lens: inputs=(...)` comment to insert above a module without inputs.

    Indented like the class/def line, without a trailing newline; one line. When the constructor
    has required parameters and no `init=` comment exists, `; init=(...)` with placeholder values
    follows on the same line. Tensors are placeholders shaped after the first layer when known.
    """
    lines = text.splitlines()
    start = (info.decorator_line or info.line) - 1
    indent = ""
    if 0 <= start < len(lines):
        src = lines[start]
        indent = src[: len(src) - len(src.lstrip())]
    n_inputs = max(info.forward_required, 1)
    first = None
    if info.first_layer is not None:
        first = layer_inputs_expr(info.first_layer.kind, info.first_layer.params)
    exprs = [first or f"torch.randn(2, {_DEFAULT_DIM})"] + [
        f"torch.randn(2, {_DEFAULT_DIM})" for _ in range(n_inputs - 1)
    ]
    comment = f"{indent}# torch-mlir-lens: inputs={_tuple_source(exprs)}"
    if info.init_required and not (info.annotation and info.annotation.init):
        comment += f"; init={_tuple_source([str(_DEFAULT_DIM)] * len(info.init_required))}"
    return comment


def _tuple_source(items: list[str]) -> str:
    """`(a,)` for one item, `(a, b)` for more."""
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
