"""MLIR locations → the user's source frames.

The FX importer gives each op a call-site chain of every Python frame, innermost first:
`callsite(".../torch/nn/modules/linear.py":134:0 at callsite("model.py":10:0 at "model.py":22:0))`.
We keep the frames whose file is one of the user's files, matched by full path (torch has files
named `conv.py`, `pooling.py`, ... like the user's), innermost first; `full_chains` also keeps
library frames (`library_frames.py` says which files are library code).

Works on location *text* (as printed by MLIR, `#locN` aliases resolved through a table), so the
same code serves printed IR (ir_text) and `ir.Location` objects (`str(loc)`), without holding
Operation handles across pass runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from torch_mlir_lens.protocol.frames import SourceFrame
from torch_mlir_lens.worker.ir.library_frames import LibraryFiles, library_files

Frame = tuple[str, int]  # (file, 1-based line)
Chain = tuple[Frame, ...]  # frames of one call stack, innermost first


class UserFiles:
    """The set of user files, matched by normalized full path (and real path)."""

    def __init__(self, files: Iterable[str]) -> None:
        self._paths: set[str] = set()
        self.given: tuple[str, ...] = tuple(os.path.normpath(f) for f in files)  # in order
        for f in self.given:
            self._paths.add(f)
            self._paths.add(os.path.realpath(f))
        self._cache: dict[str, bool] = {}

    def __contains__(self, file: object) -> bool:
        if not isinstance(file, str):
            return False
        hit = self._cache.get(file)
        if hit is None:
            hit = os.path.normpath(file) in self._paths or os.path.realpath(file) in self._paths
            self._cache[file] = hit
        return hit


def as_user_files(files: Iterable[str] | UserFiles) -> UserFiles:
    """Accept a plain collection of paths or an existing UserFiles."""
    return files if isinstance(files, UserFiles) else UserFiles(files)


# ---------------------------------------------------------------------------------------------
# A small parser for MLIR's location syntax:
#   unknown | "file":L:C [to ...] | callsite(A at B) | "name"(child) | "name"
#   | fused[A, B] | fused<#meta>[A, B] | #locN
# ---------------------------------------------------------------------------------------------


@dataclass
class _Node:
    kind: str  # "file" | "callsite" | "fused" | "alias" | "unknown"
    file: str = ""
    line: int = 0
    children: tuple[_Node, ...] = ()
    alias: str = ""


_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2}|.)")


def _unescape(s: str) -> str:
    """A string as MLIR prints it, unescaped. `\\XX` escapes are bytes (MLIR escapes every
    byte of a non-ASCII character): collected, then decoded together as UTF-8 (as file names
    are: `ü/érf.py`, `模型.py`)."""
    if "\\" not in s:
        return s
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(s):
        out += s[pos:m.start()].encode("utf-8", "surrogateescape")
        g = m.group(1)
        if len(g) == 2:
            out.append(int(g, 16))
        else:
            out += {"n": "\n", "t": "\t"}.get(g, g).encode("utf-8", "surrogateescape")
        pos = m.end()
    out += s[pos:].encode("utf-8", "surrogateescape")
    return out.decode("utf-8", "surrogateescape")


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t\n":
            self.i += 1

    def peek(self, word: str) -> bool:
        self.ws()
        return self.s.startswith(word, self.i)

    def eat(self, word: str) -> bool:
        if self.peek(word):
            self.i += len(word)
            return True
        return False

    def string(self) -> str:
        self.ws()
        assert self.s[self.i] == '"'
        j = self.i + 1
        while j < len(self.s) and self.s[j] != '"':
            j += 2 if self.s[j] == "\\" else 1
        raw = self.s[self.i + 1 : j]
        self.i = j + 1
        return _unescape(raw)

    def skip_balanced(self, open_ch: str, close_ch: str) -> None:
        depth = 0
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == '"':
                self.string()
                continue
            if c == open_ch:
                depth += 1
            elif c == close_ch:
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return
            self.i += 1

    def node(self) -> _Node:
        self.ws()
        if self.eat("loc("):
            inner = self.node()
            self.eat(")")
            return inner
        if self.eat("unknown"):
            return _Node("unknown")
        if self.peek("#"):
            m = re.compile(r"#[\w$.-]+").match(self.s, self.i)
            assert m
            self.i = m.end()
            return _Node("alias", alias=m.group(0))
        if self.eat("callsite("):
            callee = self.node()
            self.eat("at")
            caller = self.node()
            self.eat(")")
            return _Node("callsite", children=(callee, caller))
        if self.eat("fused"):
            if self.peek("<"):
                self.skip_balanced("<", ">")
            self.eat("[")
            kids: list[_Node] = []
            while not self.peek("]") and self.i < len(self.s):
                kids.append(self.node())
                self.eat(",")
            self.eat("]")
            return _Node("fused", children=tuple(kids))
        if self.peek('"'):
            name = self.string()
            m = re.compile(r":(\d+)(?::(\d+))?(?:\s+to\s+(?:\d+)?(?::\d+)?)?").match(self.s, self.i)
            if m:
                self.i = m.end()
                return _Node("file", file=name, line=int(m.group(1)))
            if self.peek("("):  # NameLoc with a child location
                self.eat("(")
                child = self.node()
                self.eat(")")
                return child
            return _Node("unknown")  # NameLoc without a child
        # Something we do not know (opaque locations, ...): skip one token.
        self.i += 1
        return _Node("unknown")


class LocationResolver:
    """Turns location text into user-frame chains; resolves `#locN` aliases via a table."""

    def __init__(self, user_files: Iterable[str] | UserFiles,
                 aliases: dict[str, str] | None = None,
                 libraries: LibraryFiles | None = None) -> None:
        self.user_files = as_user_files(user_files)
        self.libraries = libraries or library_files()
        self._full_cache: dict[str, list[tuple[SourceFrame, ...]]] = {}
        self._alias_text = dict(aliases or {})
        self._alias_chains: dict[str, tuple[Chain, ...]] = {}
        self._text_cache: dict[str, tuple[Chain, ...]] = {}
        self._user_cache: dict[str, list[Chain]] = {}  # ops share locations: filter once

    def all_chains(self, loc_text: str) -> tuple[Chain, ...]:
        """Every call stack in the location (all frames, innermost first), fused ones apart."""
        hit = self._text_cache.get(loc_text)
        if hit is None:
            try:
                hit = self._chains(_Parser(loc_text).node(), 0)
            except (AssertionError, IndexError, ValueError):
                hit = ()
            self._text_cache[loc_text] = hit
        return hit

    def user_chains(self, loc_text: str) -> list[Chain]:
        """The user frames of each call stack in the location; empty stacks dropped, deduped."""
        hit = self._user_cache.get(loc_text)
        if hit is None:
            hit = []
            for chain in self.all_chains(loc_text):
                user = tuple(f for f in chain if f[0] in self.user_files)
                if user and user not in hit:
                    hit.append(user)
            self._user_cache[loc_text] = hit
        return list(hit)

    def full_chains(self, loc_text: str) -> list[tuple[SourceFrame, ...]]:
        """Each call stack with user and library frames (torch's own and the standard
        library's dropped), innermost first; only the stacks with a library frame, deduped."""
        hit = self._full_cache.get(loc_text)
        if hit is None:
            hit = []
            for chain in self.all_chains(loc_text):
                kept = []
                for file, line in chain:
                    if file in self.user_files:
                        kept.append(SourceFrame(file, line, False))
                    elif self.libraries.is_library(file):
                        kept.append(SourceFrame(file, line, True))
                full = tuple(kept)
                if any(f.library for f in full) and full not in hit:
                    hit.append(full)
            self._full_cache[loc_text] = hit
        return list(hit)

    def user_frames(self, loc_text: str) -> list[Frame]:
        """The user frames of the first call stack that has any, innermost first."""
        chains = self.user_chains(loc_text)
        return list(chains[0]) if chains else []

    def _chains(self, node: _Node, depth: int) -> tuple[Chain, ...]:
        if depth > 200:  # defensive: a cyclic alias table would recurse forever
            return ()
        if node.kind == "file":
            return (((node.file, node.line),),)
        if node.kind == "alias":
            return self._alias(node.alias, depth)
        if node.kind == "callsite":
            callee = self._chains(node.children[0], depth + 1) or ((),)
            caller = self._chains(node.children[1], depth + 1) or ((),)
            chains = tuple(a + b for a in callee for b in caller)
            return tuple(c for c in chains if c)
        if node.kind == "fused":
            result: list[Chain] = []
            for child in node.children:
                result.extend(self._chains(child, depth + 1))
            return tuple(result)
        return ()

    def _alias(self, name: str, depth: int) -> tuple[Chain, ...]:
        hit = self._alias_chains.get(name)
        if hit is None:
            text = self._alias_text.get(name)
            hit = () if text is None else self._chains(_Parser(text).node(), depth + 1)
            self._alias_chains[name] = hit
        return hit


def user_frames_of(location: object, user_files: Iterable[str] | UserFiles) -> list[Frame]:
    """User frames (innermost first) of an `ir.Location` or location text."""
    return LocationResolver(user_files).user_frames(str(location))
