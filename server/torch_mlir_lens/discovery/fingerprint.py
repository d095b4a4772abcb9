"""Per-module fingerprints: a hash of everything in a file that can change one module's lowering.

Computed statically (no torch). The fingerprint of module M is the hash of the file's text with
every module class/function M does not depend on (its annotation comments and decorators
included) replaced by as many empty lines, so line numbers, which results carry, stay right
(blank lines themselves do not count, only where the other lines are).
M depends on the module definitions its body refers to (transitively, also through top-level
helpers), and, when its inputs are derived, on its ancestors and what they refer to (a
parent's forward decides M's inputs). Top-level code that is not a module always counts.

A text that does not parse cleanly gets the hash of the whole text for every module: a syntax
error anywhere stops the whole file from loading.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from torch_mlir_lens import discovery
from torch_mlir_lens.system.bounded_cache import BoundedCache

_IDENT_RE = re.compile(r"[A-Za-z_]\w*")
_CACHE_SIZE = 8
_CACHE: BoundedCache[tuple[object, ...], _File] = BoundedCache(_CACHE_SIZE)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class _Segment:
    """Consecutive lines of the file: one module definition (`unit`) or the code between."""

    start: int  # 0-based, inclusive
    end: int  # 0-based, exclusive
    unit: str | None
    digest: str
    code_digest: str  # without the comments above a definition (its inputs annotation)


class _File:
    """One text's segments and dependency graph; fingerprints are memoised per module."""

    def __init__(self, text: str, path: str | None, settings: dict[str, str] | None,
                 workspace: str | None) -> None:
        self.whole = _sha(text)
        self.clean = discovery.parses_cleanly(text)
        self._memo: dict[str, str] = {}
        if not self.clean:
            return
        lines = self.lines = text.splitlines(keepends=True)
        infos = discovery.find_modules(text, path, settings_inputs=settings, workspace=workspace)
        self.infos = {i.name: i for i in infos}
        body = discovery.parse_tolerant(text)
        units = {_unit(i.name) for i in infos}
        spans = _unit_spans(body, units, lines)
        self.segments = _segments(lines, spans)
        self.defines, self.refs = _graph(body, units, spans, lines)

    def fingerprint(self, module: str) -> str:
        if not self.clean or _unit(module) not in {s.unit for s in self.segments}:
            return self.whole
        cached = self._memo.get(module)
        if cached is None:
            whole, code = self._dependencies(module)
            # Code between definitions that is only blank lines is left out, as blank lines
            # are: a class appended below M after a blank line must not change M's hash.
            parts = [s.digest if s.unit is None or s.unit in whole else s.code_digest
                     for s in self.segments
                     if (s.unit is None and s.digest != _NOTHING) or s.unit in whole | code]
            cached = self._memo[module] = _sha("\n".join(parts))
        return cached

    def code_fingerprint(self, name: str) -> str:
        """Like `fingerprint`, of the code alone: `name`'s definition and the definitions it
        uses (not their annotations, not the ancestors), with the code between definitions."""
        if not self.clean or _unit(name) not in {s.unit for s in self.segments}:
            return self.whole
        code = self._code(_unit(name)) | {_unit(name)}
        # Between definitions, comment lines change nothing (a moved definition has its
        # line numbers in its own digest).
        parts = [_placed(self.lines, s.start, s.end, code_only=True) if s.unit is None
                 else s.code_digest for s in self.segments if s.unit is None or s.unit in code]
        return _sha("code\n" + "\n".join(p for p in parts if p != _NOTHING))

    def _dependencies(self, module: str) -> tuple[set[str], set[str]]:
        """The units M's lowering depends on: (with their annotations, code only).

        M's own annotation counts, and its ancestors' when its inputs are derived (theirs
        decide M's); the definitions they use count by their code only.
        """
        whole = {_unit(module)}
        code = self._code(_unit(module))
        info = self.infos.get(module)
        if info is not None and info.inputs == "derived":
            for ancestor in self._ancestors(module):
                whole.add(_unit(ancestor))
                code |= self._code(_unit(ancestor))
        return whole, code

    def _ancestors(self, module: str) -> Iterable[str]:
        """Parents, their parents, ... (the worker tries them in turn for a recording)."""
        seen: set[str] = {module}
        queue = list(self.infos[module].parent_candidates)
        while queue:
            parent = queue.pop()
            if parent in seen:
                continue
            seen.add(parent)
            yield parent
            if parent in self.infos:
                queue.extend(self.infos[parent].parent_candidates)

    def _code(self, unit: str) -> set[str]:
        """`unit` and the units it refers to, transitively, also through top-level helpers."""
        units: set[str] = set()
        seen_names: set[str] = set()
        stack = [unit]
        while stack:
            name = stack.pop()
            if name in seen_names:
                continue
            seen_names.add(name)
            for stmt_id in self.defines.get(name, ()):
                kind, _ = stmt_id
                if kind == "unit":
                    units.add(name)
                stack.extend(self.refs[stmt_id])
        return units


def _unit(module: str) -> str:
    """The top-level definition holding a module (`Outer.Inner` lives in `Outer`)."""
    return module.split(".", 1)[0]


Span = tuple[int, int, int]  # 0-based: comments above, decorators/definition, end (exclusive)


def _unit_spans(body: list[ast.stmt], units: set[str], lines: list[str]) -> dict[str, Span]:
    """The lines of each top-level module definition, the comments above it included."""
    spans: dict[str, Span] = {}
    for stmt in body:
        if isinstance(stmt, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and (
            stmt.name in units
        ):
            code_start = start = min([d.lineno for d in stmt.decorator_list] + [stmt.lineno]) - 1
            while start > 0 and lines[start - 1].lstrip().startswith("#"):
                start -= 1  # the annotation comments belong to the definition
            spans[stmt.name] = (start, code_start, stmt.end_lineno or stmt.lineno)
    return spans


def _segments(lines: list[str], spans: dict[str, Span]) -> list[_Segment]:
    """The whole file cut into module definitions and the code between them, in order."""
    segments: list[_Segment] = []
    pos = 0
    for name, (start, code_start, end) in sorted(spans.items(), key=lambda kv: kv[1]):
        if start > pos:
            gap = _placed(lines, pos, start)
            segments.append(_Segment(pos, start, None, gap, gap))
        segments.append(_Segment(start, end, name, _placed(lines, start, end),
                                 _placed(lines, code_start, end)))
        pos = end
    tail = _placed(lines, pos, len(lines))
    segments.append(_Segment(pos, len(lines), None, tail, tail))
    return segments


_NOTHING = hashlib.sha256(b"").hexdigest()  # `_placed` of blank lines only


def _placed(lines: list[str], start: int, end: int, *, code_only: bool = False) -> str:
    """Hash of the non-blank lines of [start, end), each with its line number (`code_only`:
    comment lines left out too).

    Equivalent to the text with the left-out definitions blanked, but a blank line added
    below a module leaves that module's fingerprint alone.
    """
    return _sha("".join(f"{i}:{lines[i]}" for i in range(start, end) if lines[i].strip()
                        and not (code_only and lines[i].lstrip().startswith("#"))))


StmtId = tuple[str, int]


def _graph(body: list[ast.stmt], units: set[str], spans: dict[str, Span],
           lines: list[str]) -> tuple[dict[str, list[StmtId]], dict[StmtId, set[str]]]:
    """Which top-level statements define each name, and the names each statement mentions.

    Mentions are read with a regex over the source (comments included): a stray match only
    adds a dependency, never loses one.
    """
    defines: dict[str, list[StmtId]] = {}
    refs: dict[StmtId, set[str]] = {}
    for index, stmt in enumerate(body):
        if isinstance(stmt, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and (
            stmt.name in spans
        ):
            stmt_id: StmtId = ("unit", index)
            start, _, end = spans[stmt.name]
            names = {stmt.name}
        else:
            stmt_id = ("code", index)
            start, end = stmt.lineno - 1, stmt.end_lineno or stmt.lineno
            names = _defined_names(stmt)
        refs[stmt_id] = set(_IDENT_RE.findall("".join(lines[start:end])))
        for name in names:
            defines.setdefault(name, []).append(stmt_id)
    return defines, refs


def _defined_names(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds (imports, assignments, defs, loop targets...)."""
    if isinstance(stmt, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return {stmt.name}
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".", 1)[0] for a in stmt.names}
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)}


def _file(text: str, path: str | None, settings: dict[str, str] | None,
          workspace: str | None) -> _File:
    key = (_sha(text), path, tuple(sorted((settings or {}).items())), workspace)
    cached = _CACHE.get(key)
    if cached is None:
        cached = _File(text, path, settings, workspace)
        _CACHE.put(key, cached)
    return cached


def fingerprint(text: str, module: str, path: str | None = None, *,
                settings_inputs: dict[str, str] | None = None,
                workspace: str | None = None) -> str:
    """The hash of what in `text` can change `module`'s lowering. Never raises.

    An unknown module (or a file that does not parse) gets the hash of the whole text.
    """
    try:
        return _file(text, path, settings_inputs, workspace).fingerprint(module)
    except Exception:  # a bug here must cost a re-export, not a lowering
        return _sha(text)


def code_fingerprint(text: str, name: str, path: str | None = None) -> str:
    """The hash of what in `text` can change what the class or function `name` computes and
    where its lines are: its code and the code it uses, never its inputs annotation or the
    modules that use it (a cache of traced repeated blocks keys on it). Never raises."""
    try:
        return _file(text, path, None, None).code_fingerprint(name)
    except Exception:  # a bug here must cost a trace, not a lowering
        return _sha(text)


def job_fingerprint(job: dict[str, object], text: str) -> str:
    """`fingerprint` from a module job's fields (docs/contracts.md, "Worker jobs")."""
    module, path, workspace = job.get("module"), job.get("path"), job.get("workspace")
    settings = job.get("settings_inputs")
    if not isinstance(module, str):
        return _sha(text)
    return fingerprint(
        text, module, path if isinstance(path, str) else None,
        settings_inputs=settings if isinstance(settings, dict) else None,
        workspace=workspace if isinstance(workspace, str) else None,
    )
