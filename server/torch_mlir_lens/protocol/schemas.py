"""The shapes of replies read back from the persistent cache, checked before they are believed.

An authenticated entry was written by this product, but a product of another build, a bug or
a disk error can still leave one whose fields have the wrong types (`"diagnostics": "[]"`,
`"ir": 5`): such a reply would fail inside every feature that reads it, at every start. A
stored reply is used only when `conforms` says it has its job's shape; otherwise it is a
miss, removed and replaced.

A schema is a Python type (`str`, `bool`, `dict`, ...; `int` excludes `bool`, `float` takes
ints), a tuple of schemas (any of them), a one-element list (a list of that), `Table(values)`
(a dict with string keys), or `Obj(required, optional)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.protocol.results import LowerResult


@dataclass(frozen=True)
class Obj:
    """A JSON object with these keys (other keys are allowed and ignored)."""

    required: dict[str, Any]
    optional: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Table:
    """A JSON object of string keys, each value of one schema."""

    values: Any


def conforms(value: Any, schema: Any) -> bool:
    """Whether `value` has the shape `schema` describes."""
    if schema is None:
        return value is None
    if isinstance(schema, tuple):
        return any(conforms(value, s) for s in schema)
    if isinstance(schema, list):
        return isinstance(value, list) and all(conforms(v, schema[0]) for v in value)
    if isinstance(schema, Table):
        return isinstance(value, dict) and all(
            isinstance(k, str) and conforms(v, schema.values) for k, v in value.items())
    if isinstance(schema, Obj):
        return isinstance(value, dict) and all(
            k in value and conforms(value[k], s) for k, s in schema.required.items()
        ) and all(conforms(value[k], s) for k, s in schema.optional.items() if k in value)
    if schema is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if schema is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, schema)


_OPT_STR = (str, None)
_OPT_INT = (int, None)
RELATED = Obj({"file": str, "line": int}, {"message": str})
DIAGNOSTIC = Obj(
    {"severity": str, "message": str},
    {"kind": str, "file": _OPT_STR, "line": _OPT_INT, "op": _OPT_STR, "target": _OPT_STR,
     "related": [RELATED], "cause": _OPT_STR, "ops": ([str], None), "knock_on": ([dict], None),
     "reason": _OPT_STR})
_MAP = (Obj({"files": [str], "rows": [[int]]}),
        [Obj({"ir_line": int, "file": str, "line": int}, {"depth": int})])
_FRAMES = Obj({"files": [str], "library": [int], "chains": [[int]], "rows": [[int]]})
LOWER_RESULT = Obj(
    {"module": str, "target": str, "ok": bool, "ir": str, "diagnostics": [DIAGNOSTIC],
     "stats": dict, "timings": Table(float)},
    {"map": _MAP, "frames": _FRAMES, "passes": ([Obj({"name": str, "ir": str})], None),
     "inputs_source": _OPT_STR, "partial": bool, "rewrites": [str]})
LOWER_REPLY = Obj({"results": [LOWER_RESULT]})
REWRITES_REPLY = Obj({"module": str, "offers": [dict], "timings": Table(float)})


def lower_reply_ok(reply: Any) -> bool:
    """A lowering's reply: every result of the right shape, and one that reads back whole
    (its source map's file indices, its chains)."""
    if not conforms(reply, LOWER_REPLY):
        return False
    for result in reply["results"]:
        LowerResult.from_json(result)  # raises on an index out of range: not valid
    return True


def rewrites_reply_ok(reply: Any) -> bool:
    """A `rewrites` job's reply (each offer is read leniently by `RewriteOffer.from_json`)."""
    return conforms(reply, REWRITES_REPLY)


def stored_reply_ok(reply: Any) -> bool:
    """A reply the engine keeps in the persistent cache: a lowering's or a `rewrites` job's."""
    if isinstance(reply, dict) and "results" in reply:
        return lower_reply_ok(reply)
    return rewrites_reply_ok(reply)
