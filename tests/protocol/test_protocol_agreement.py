"""The client's protocol.ts and the server's protocol/lsp.py declare the same protocol.

protocol.ts is read with a small parser of its own declarations (`export interface`,
`new RequestType<P, R, void>('method')`, `new NotificationType<P>('method')`, SERVER_COMMANDS):
every interface has an attrs class of the same name with the same fields (camelCase) of the
same types, a field is optional there exactly when it has a default here, and both sides name
the same methods with the same param and result types.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path

import attrs
import pytest
from lsprotocol import types as lsp_types

from torch_mlir_lens.protocol import lsp as lens_types

PROTOCOL_TS = Path(__file__).resolve().parents[2] / "client" / "src" / "protocol.ts"

_INTERFACE = re.compile(r"export interface (\w+) \{(.*?)\n\}", re.S)
_FIELD = re.compile(r"^\s+(\w+)(\??):", re.M)
_FIELD_TYPE = re.compile(r"^\s+(\w+)\??: ([^;]+);", re.M)
_ALIAS = re.compile(r"export type (\w+) = ([^;]+);")
_PY_SCALARS = {"None": "null", "str": "string", "int": "number", "float": "number",
               "bool": "boolean", "Any": "unknown"}
_REQUEST = re.compile(r"new RequestType<(\w+), (\w+), void>\('([^']+)'\)")
_NOTIFICATION = re.compile(r"new NotificationType<(\w+)>\('([^']+)'\)")
_COMMANDS = re.compile(r"SERVER_COMMANDS = \{(.*?)\}", re.S)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def ts_interfaces(text: str) -> dict[str, dict[str, bool]]:
    """{interface: {field: optional}} of protocol.ts."""
    return {name: {f: bool(q) for f, q in _FIELD.findall(body)}
            for name, body in _INTERFACE.findall(text)}


def py_classes() -> dict[str, dict[str, bool]]:
    """{class: {camelCase field: has a default}} of protocol/lsp.py (+ lsprotocol's Range)."""
    classes = [v for v in vars(lens_types).values()
               if attrs.has(v) and v.__module__ == lens_types.__name__]
    classes += [lsp_types.Position, lsp_types.Range]
    return {cls.__name__: {_camel(f.name): f.default is not attrs.NOTHING
                           for f in attrs.fields(cls)} for cls in classes}


def _split_union(text: str, sep: str = "|") -> list[str]:
    """The members of a union (or with `sep=","`, of a tuple) at the top level."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "[<({"
        depth -= ch in "]>)}"
        if ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def py_type(annotation: str) -> frozenset[str]:
    """A Python annotation as the set of TypeScript union members it corresponds to."""
    out: set[str] = set()
    for part in _split_union(annotation):
        if part.startswith("Literal["):
            out |= {"'" + v.strip().strip("\"'") + "'" for v in part[8:-1].split(",")}
        elif part.startswith("list["):
            inner = sorted(py_type(part[5:-1]))
            out.add((inner[0] if len(inner) == 1 else "(" + " | ".join(inner) + ")") + "[]")
        elif part.startswith("tuple["):  # a fixed-size tuple: a TypeScript tuple type
            items = [" | ".join(sorted(py_type(item))) for item in _split_union(part[6:-1], ",")]
            out.add("[" + ", ".join(items) + "]")
        elif part.startswith("dict[str, "):
            out.add("Record<string, " + " | ".join(sorted(py_type(part[10:-1]))) + ">")
        else:
            out.add(_PY_SCALARS.get(part, part))
    return frozenset(out)


def ts_type(text: str, aliases: dict[str, str]) -> frozenset[str]:
    """A TypeScript field type as its set of union members (aliases of literals expanded)."""
    out: set[str] = set()
    for part in _split_union(text):
        if part in aliases:
            out |= ts_type(aliases[part], {})
        elif part.endswith("[]") and part[:-2].startswith("(") and part[:-2].endswith(")"):
            inner = sorted(ts_type(part[1:-3], aliases))
            out.add("(" + " | ".join(inner) + ")[]")
        else:
            out.add(part)
    return frozenset(out)


def _annotation(cls: type, name: str) -> str:
    """A field's annotation as written. Not `attrs.fields(cls).type`: once the LSP converter
    has resolved the classes' forward references (any earlier test that starts it in this
    process), that holds the resolved type (`<class 'str'>`), no longer the text."""
    for klass in cls.__mro__:
        written = vars(klass).get("__annotations__", {}).get(name)
        if written is not None:
            if isinstance(written, str):
                return written
            return getattr(written, "__name__", str(written))
    raise KeyError(f"{cls.__name__}.{name} has no annotation")


def type_mismatches(text: str) -> list[str]:
    """Fields whose types differ (Python literal aliases may be TS aliases of the same name)."""
    aliases = dict(_ALIAS.findall(text))
    py_aliases = {name: value for name, value in vars(lens_types).items()
                  if typing.get_origin(value) is typing.Literal}
    problems = []
    for name, body in _INTERFACE.findall(text):
        cls = getattr(lens_types, name, None)
        if cls is None or not attrs.has(cls) or cls.__module__ != lens_types.__name__:
            continue
        declared = {_camel(f.name): _annotation(cls, f.name) for f in attrs.fields(cls)}
        for field, ts in _FIELD_TYPE.findall(body):
            if field not in declared:
                continue
            annotation = str(declared[field])
            for alias in py_aliases:  # an alias in Python is spelled out in the comparison
                annotation = re.sub(rf"\b{alias}\b", " | ".join(
                    f'Literal["{v}"]' for v in typing.get_args(py_aliases[alias])), annotation)
            if py_type(annotation) != ts_type(ts.split("//")[0].strip(), aliases):
                problems.append(f"{name}.{field}: {declared[field]} vs {ts}")
    return problems


def mismatches(text: str) -> list[str]:
    """Every disagreement between protocol.ts's text and protocol/lsp.py."""
    problems = []
    ts, py = ts_interfaces(text), py_classes()
    for name in sorted(set(ts) | set(py)):
        if name not in ts or name not in py:
            problems.append(f"{name}: only in {'protocol.ts' if name in ts else 'protocol/lsp.py'}")
            continue
        for field in sorted(set(ts[name]) | set(py[name])):
            if field not in ts[name] or field not in py[name]:
                where = "protocol.ts" if field in ts[name] else "protocol/lsp.py"
                problems.append(f"{name}.{field}: only in {where}")
            elif ts[name][field] != py[name][field]:
                problems.append(f"{name}.{field}: optional in "
                                f"{'protocol.ts' if ts[name][field] else 'protocol/lsp.py'} only")
    ts_requests = {method: (p, r) for p, r, method in _REQUEST.findall(text)}
    py_requests = {method: (p.__name__, r.__name__)
                   for method, (p, r) in lens_types.REQUESTS.items()}
    if ts_requests != py_requests:
        problems.append(f"requests differ: {ts_requests} != {py_requests}")
    ts_notes = {method: p for p, method in _NOTIFICATION.findall(text)}
    py_notes = {method: p.__name__ for method, p in lens_types.NOTIFICATIONS.items()}
    if ts_notes != py_notes:
        problems.append(f"notifications differ: {ts_notes} != {py_notes}")
    problems += type_mismatches(text)
    block = _COMMANDS.search(text)
    ts_commands = set(re.findall(r"'(torchMlirLens\.\w+)'", block[1])) if block else set()
    if ts_commands != set(lens_types.COMMANDS):
        problems.append(f"commands differ: {sorted(ts_commands)} != {sorted(lens_types.COMMANDS)}")
    return problems


def test_protocol_ts_matches_the_python_protocol() -> None:
    text = PROTOCOL_TS.read_text(encoding="utf-8")
    assert len(ts_interfaces(text)) >= 20  # the parser found the declarations
    assert mismatches(text) == []


def _referenced(cls: type) -> set[str]:
    """The protocol classes `cls`'s fields name (as written), transitively, `cls` included."""
    seen: set[str] = set()
    todo = [cls.__name__]
    while todo:
        name = todo.pop()
        found = getattr(lens_types, name, None)
        if name in seen or found is None or not attrs.has(found):
            continue
        seen.add(name)
        for field in attrs.fields(found):
            todo += re.findall(r"\b[A-Z]\w+", _annotation(found, field.name))
    return seen


def test_every_answer_is_typed_down_to_its_leaves() -> None:
    # The answers of requests and commands are attrs classes all the way down, declared in
    # protocol.ts; the untyped parts are the engine's open map of counters (`stats`)
    text = PROTOCOL_TS.read_text(encoding="utf-8")
    declared = set(ts_interfaces(text))
    answers = [r for _p, r in lens_types.REQUESTS.values()] + [
        r for _a, r in lens_types.COMMANDS.values()]
    for answer in answers:
        classes = _referenced(answer)
        assert classes <= declared, f"{answer.__name__}: {sorted(classes - declared)}"
        untyped = [f"{name}.{field.name}" for name in classes
                   for field in attrs.fields(getattr(lens_types, name))
                   if "Any" in _annotation(getattr(lens_types, name), field.name)]
        # and the graph view's graph, the JSON `torch-mlir-lens graph --format json` writes
        # (protocol/graph.py), typed for the page in client/graphPage/model.ts.
        assert set(untyped) <= {"LowerResponse.stats", "GraphResponse.graph"}, untyped


@pytest.mark.parametrize("edit, expected", [
    # A field the client lacks, an optionality flip, a renamed method, a lost command.
    (("  selectionRange: Range;\n", ""), "ModuleInfo.selectionRange: only in protocol/lsp.py"),
    (("  forwardRange: Range | null;", "  forwardRange?: Range | null;"),
     "ModuleInfo.forwardRange: optional in protocol.ts only"),
    (("'torchMlirLens/verify'", "'torchMlirLens/verifyModule'"), "requests differ"),
    (("  verify: 'torchMlirLens.verify',", ""), "commands differ"),
    (("  line: number; // 1-based source line", "  line: string; // 1-based source line"),
     "IrLineMapping.line: int vs string"),
    (("  parents: string[];", "  parents: string;"), "ModuleInfo.parents"),
    # The answers of lower, verify and serverInfo, and the types inside them.
    (("  partial: boolean;", "  partial?: boolean;"),
     "LowerResponse.partial: optional in protocol.ts only"),
    (("  divergence: Divergence | null;", "  divergence: Record<string, unknown> | null;"),
     "VerifyResponse.divergence"),
    (("  knockOn: FileKnockOn[] | null;", "  knockOn: KnockOn[] | null;"),
     "FileDiagnostic.knockOn"),
    (("  maxAbsErr: number | string; // \"inf\"", "  maxAbsErr: number; // \"inf\""),
     "OutputComparison.maxAbsErr"),
    (("  pipelines: Record<string, string>;", "  pipelines: Record<string, unknown>;"),
     "ServerSettings.pipelines"),
    (("  earlyPid: number | null;\n", ""), "EngineStats.earlyPid: only in protocol/lsp.py"),
    (("export interface Divergence {", "export interface Divergent {"), "Divergence: only in"),
    (("  rows: [number, number][];", "  rows: number[][];"), "FrameTable.rows"),
])
def test_a_drift_is_found(edit: tuple[str, str], expected: str) -> None:
    text = PROTOCOL_TS.read_text(encoding="utf-8")
    old, new = edit
    assert old in text
    drifted = text.replace(old, new, 1)
    assert any(p.startswith(expected) for p in mismatches(drifted)), mismatches(drifted)
