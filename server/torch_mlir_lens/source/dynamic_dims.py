"""Dynamic dims as the `dynamic=` comment writes them, and the fixes torch.export suggests.

Pure text (no torch): the worker reads dim texts and words export errors with it, the language
server's quick fixes parse those messages and edit the comment with it, so the wording and its
reading live in one place.

    # torch-mlir-lens: dynamic={"ids": {0: "batch", 1: "seq<=512"}}

A dim is a string: its name (`"seq"`), optionally bounded: `"seq<=512"`, `"2<=seq<=512"`,
`"seq>=4"`. The same name is the same dim wherever it appears (its bounds given once, or
the same each time).

torch.export ends a `Constraints violated` error with `Suggested fixes:`, one line per dim:
`seq = Dim('seq', max=512)` (a bound the traced code needs), `batch = 1` (the code, or a
size-1 example, made it a constant), `seq = batch` (two dims that must be one). Each becomes
a `DimFix` that `fix_dynamic_text` applies to the comment's text.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from torch_mlir_lens.source.annotations import split_top_level

_DIM_TEXT = re.compile(
    r"^\s*(?:(?P<low>\d+)\s*<=\s*)?(?P<name>[A-Za-z_]\w*)\s*"
    r"(?:<=\s*(?P<high>\d+)|>=\s*(?P<min>\d+))?\s*$")
_SUGGESTED = re.compile(r"^Suggested fixes:\s*$", re.M)
_FIX_LINE = re.compile(r"^\s+(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<value>.+?)\s*$")
_DIM_CALL = re.compile(r"^Dim\(\s*['\"](?P<name>\w+)['\"]\s*(?P<kw>(?:,\s*\w+\s*=\s*-?\d+\s*)*)\)$")
_KW = re.compile(r"(\w+)\s*=\s*(-?\d+)")
_SPECIALIZED = re.compile(r"^(?:None\s*#\s*)?(?P<value>-?\d+)$")

UPSTREAM_SPECIALIZES = "torch.export specializes sizes 0 and 1"


@dataclass(frozen=True)
class DimText:
    """One dim as written in the comment: `name`, or `low<=name<=high`."""

    name: str
    low: int | None = None
    high: int | None = None

    def text(self) -> str:
        """The dim as the comment writes it."""
        if self.low is not None and self.high is not None:
            return f"{self.low}<={self.name}<={self.high}"
        if self.high is not None:
            return f"{self.name}<={self.high}"
        if self.low is not None:
            return f"{self.name}>={self.low}"
        return self.name


def parse_dim_text(text: str) -> DimText:
    """`"seq"`, `"seq<=512"`, `"2<=seq<=512"`, `"seq>=4"` → DimText; ValueError otherwise."""
    match = _DIM_TEXT.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a dim: write a name, optionally bounded "
                         "(\"seq\", \"seq<=512\", \"2<=seq<=512\", \"seq>=4\")")
    low = match.group("low") or match.group("min")
    high = match.group("high")
    dim = DimText(match.group("name"), int(low) if low else None, int(high) if high else None)
    if dim.low is not None and dim.high is not None and dim.low > dim.high:
        raise ValueError(f"{text!r}: the lower bound is above the upper one")
    return dim


@dataclass(frozen=True)
class DimFix:
    """One fix torch.export suggests for a dim of the `dynamic=` comment.

    kind "bounds": give `name` the range [low, high] (either may be None: unbounded);
    "static": the dim is a constant (`value`): leave it out of the comment; "same": it is the
    dim `other`: write that name instead.
    """

    kind: str
    name: str
    low: int | None = None
    high: int | None = None
    value: int | None = None
    other: str | None = None

    def describe(self) -> str:
        """The fix in the comment's words, e.g. `"seq"` → `"seq<=512"`."""
        if self.kind == "bounds":
            return f'"{self.name}" → "{DimText(self.name, self.low, self.high).text()}"'
        if self.kind == "static":
            return f'leave "{self.name}" out of dynamic= (it is always {self.value})'
        return f'"{self.name}" → "{self.other}" (they are the same dim)'


def suggested_fixes(message: str) -> list[DimFix]:
    """The fixes of a torch.export message's `Suggested fixes:` block (the lines our comment
    syntax can say; derived dims such as `seq = 2*_seq` are left to the message)."""
    found = _SUGGESTED.search(message)
    if found is None:
        return []
    fixes: list[DimFix] = []
    started = False
    for line in message[found.end():].splitlines():
        match = _FIX_LINE.match(line)
        if match is None:
            if line.strip() or started:
                break  # the block ends at the first line that is not `name = value`
            continue
        started = True
        fix = _fix_of(match.group("name"), match.group("value"))
        if fix is not None:
            fixes.append(fix)
    return fixes


def _fix_of(name: str, value: str) -> DimFix | None:
    call = _DIM_CALL.match(value)
    if call is not None:
        if call.group("name") != name:
            return None
        kws = {k: int(v) for k, v in _KW.findall(call.group("kw") or "")}
        low = kws.get("min")
        return DimFix("bounds", name, low=low if low not in (None, 0) else None,
                      high=kws.get("max"))
    special = _SPECIALIZED.match(value)
    if special is not None:
        return DimFix("static", name, value=int(special.group("value")))
    if re.fullmatch(r"[A-Za-z_]\w*", value) and value != name:
        return DimFix("same", name, other=value)
    return None


# --- a size-1 example on a dynamic dim --------------------------------------------------------


@dataclass(frozen=True)
class TooSmallExample:
    """An example input whose size on a dynamic dim torch.export would make a constant."""

    dim: str  # the dim's name ("batch")
    input: str  # the input's name ("ids")
    axis: int  # which dim of that input
    size: int  # 0 or 1
    shape: tuple[int, ...]  # the example input's whole shape


_TOO_SMALL = re.compile(
    r"`(?P<dim>\w+)` is dynamic, but the example's `(?P<input>[\w.\[\]]+)` has size "
    r"(?P<size>\d+) in dim (?P<axis>\d+) \(shape \[(?P<shape>[\d, ]*)\]\)")


def too_small_message(example: TooSmallExample) -> str:
    """The message of a dynamic dim whose example size is 0 or 1 (read by `parse_too_small`)."""
    shape = ", ".join(str(s) for s in example.shape)
    return (f"`{example.dim}` is dynamic, but the example's `{example.input}` has size "
            f"{example.size} in dim {example.axis} (shape [{shape}]): {UPSTREAM_SPECIALIZES} "
            f"(it takes them for constants), so a dynamic dim needs an example of size 2 or "
            f"more. Give `{example.input}` size 2 there, or leave \"{example.dim}\" out of "
            f"dynamic=.")


def parse_too_small(message: str) -> TooSmallExample | None:
    """The TooSmallExample a message of `too_small_message` names, or None."""
    match = _TOO_SMALL.search(message)
    if match is None:
        return None
    shape = tuple(int(s) for s in match.group("shape").split(",") if s.strip())
    return TooSmallExample(match.group("dim"), match.group("input"), int(match.group("axis")),
                           int(match.group("size")), shape)


# --- editing the comment's expressions --------------------------------------------------------


_STRING = re.compile(r"""(?P<q>["'])(?P<body>[^"'\\\n]*)(?P=q)""")


def fix_dynamic_text(text: str, fix: DimFix) -> str | None:
    """`text` (a comment line holding `dynamic=...`) with `fix` applied; None if it names no
    such dim. Every occurrence of the dim is changed (one dim, one range)."""
    changed = False

    def replace(match: re.Match[str]) -> str:
        nonlocal changed
        try:
            dim = parse_dim_text(match.group("body"))
        except ValueError:
            return match.group(0)
        if dim.name != fix.name:
            return match.group(0)
        changed = True
        q = match.group("q")
        if fix.kind == "bounds":
            return f"{q}{DimText(dim.name, fix.low, fix.high).text()}{q}"
        if fix.kind == "same" and fix.other:
            return f"{q}{fix.other}{q}"
        return match.group(0)

    if fix.kind == "static":
        out = _drop_dim(text, fix.name)
        return out
    out = _STRING.sub(replace, text)
    return out if changed else None


def _drop_dim(text: str, name: str) -> str | None:
    """Remove each `N: "name"` entry (and its comma) from the dicts of a comment line."""
    entry = re.compile(
        r"""\s*-?\d+\s*:\s*(?P<q>["'])(?P<body>[^"'\\\n]*)(?P=q)\s*(?:,|(?=\s*[}\]]))""")
    changed = False

    def drop(match: re.Match[str]) -> str:
        nonlocal changed
        try:
            if parse_dim_text(match.group("body")).name != name:
                return match.group(0)
        except ValueError:
            return match.group(0)
        changed = True
        return ""

    out = entry.sub(drop, text)
    if not changed:
        return None
    return re.sub(r",\s*([}\]])", r"\1", out).replace("{ ", "{")


def fix_example_size(text: str, shape: tuple[int, ...], axis: int, size: int = 2) -> str | None:
    """`text` (a comment line holding `inputs=...`) with every literal shape equal to `shape`
    given `size` at `axis`: a tuple `(1, 8)` or the int arguments of a call
    (`torch.randn(1, 8)`). None when no such literal is found."""
    match = re.search(r"inputs\s*=", text)
    parts = split_top_level(text[match.end():]) if match is not None else []
    if match is None or not parts:
        return None
    value = parts[0]  # up to a `;` that starts another key
    offset = text.index(value, match.end())
    try:
        tree = ast.parse(value, mode="eval")
    except SyntaxError:
        return None
    edits: list[tuple[int, int]] = []  # (start, end) of each int literal to replace
    for node in ast.walk(tree):
        candidates: list[list[ast.expr]] = []
        if isinstance(node, ast.Tuple):
            candidates.append(list(node.elts))
        if isinstance(node, ast.Call):
            candidates.append(list(node.args))
        for items in candidates:
            values = [i.value if isinstance(i, ast.Constant) and type(i.value) is int else None
                      for i in items]
            if len(values) == len(shape) and tuple(values) == shape:
                item = items[axis]
                edits.append((offset + item.col_offset, offset + (item.end_col_offset or 0)))
    if not edits:
        return None
    out = text
    for begin, end in sorted(set(edits), reverse=True):
        out = out[:begin] + str(size) + out[end:]
    return out
