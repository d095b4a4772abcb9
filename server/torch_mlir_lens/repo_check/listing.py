"""The per-file listing of `--format text`: each module's verdict per backend, each
unsupported op at its line; the wording of the single-file `check FILE`.

It reads report entries only (so `merge` can print shards' JSON without the sources): a
notebook's lines carry their cell beside them (`cell`, `error_cell`) and read
`cell C line L`; an ONNX model's carry their node (`node`, `error_node`) and read
`node N "name" (Op, opset K)`.
"""

from __future__ import annotations

from typing import Any

from torch_mlir_lens.protocol.onnx_graphs import OnnxNode
from torch_mlir_lens.repo_check.rewrite_findings import rewrite_note


def line_text(line: int | None, cell: int | None = None,
              node: dict[str, Any] | None = None) -> str:
    """`line N`, `cell C line L` in a notebook, the node's label in an ONNX model."""
    if node:
        return OnnxNode.from_json(node).label()
    return f"cell {cell} line {line}" if cell else f"line {line}"


def _indented(message: str, prefix: str) -> str:
    """A multi-line message with its continuation lines under the first."""
    lines = message.splitlines() or [""]
    return "\n".join([lines[0], *(prefix + ln for ln in lines[1:])])


def _module_lines(entry: dict[str, Any]) -> list[str]:
    head = f"  {entry['name']}"
    if entry.get("line"):
        head += f" ({line_text(entry['line'], entry.get('cell'))})"
    if "skipped" in entry:
        return [f"{head}: skipped, {entry['skipped']}"]
    if "error" in entry:
        err = entry["error"]
        at = f" at {line_text(err['line'], err.get('cell'))}" if err.get("line") else ""
        return [f"{head}: error{at}: {_indented(err['message'], '      ')}"]
    verdicts = list(entry["targets"].values())
    errors = {(v["error"], v["error_line"], v.get("error_cell")) for v in verdicts}
    if verdicts and all(not v["ok"] and not v["unsupported"] for v in verdicts) \
            and len(errors) == 1:
        # One failure before any backend (the export): say it once.
        message, line, cell = errors.pop()
        at = f" at {line_text(line, cell)}" if line else ""
        return [f"{head}: failed{at}: {_indented(message or 'failed', '      ')}"]
    marks = []
    for target, v in entry["targets"].items():
        if v["ok"]:
            through = f" (through rewrites {', '.join(v['rewrites'])})" if v.get("rewrites") \
                else ""
            marks.append(f"{target} ok{through}")
        elif v["unsupported"]:
            marks.append(f"{target} {len(v['unsupported'])} unsupported")
        else:
            marks.append(f"{target} failed")
    out = [f"{head}: " + ", ".join(marks)]
    for target, v in entry["targets"].items():
        for u in v["unsupported"]:
            if u.get("node"):  # the node's label names its operator: it is the cause
                out.append(f"    {target}: {line_text(u['line'], node=u['node'])}")
            else:
                at = line_text(u["line"], u.get("cell")) if u["line"] else "no line"
                out.append(f"    {target}: {u.get('cause') or u['op']} at {at}")
            if (u.get("rewrite") or {}).get("rewrites"):  # a proven one (JSON: also why none)
                out.append(f"      {rewrite_note(u['rewrite'])}")
        if v["error"] and not v["unsupported"]:
            at = f" ({line_text(v['error_line'], v.get('error_cell'), v.get('error_node'))})" \
                if v["error_line"] else ""
            out.append(f"    {target}{at}: {_indented(v['error'], '      ')}")
    return out


def file_listing(shown: str, entries: list[dict[str, Any]]) -> str:
    """The listing of one file's module entries, headed by the file as `shown`."""
    lines = [shown]
    for entry in entries:
        lines += _module_lines(entry)
    return "\n".join(lines) + "\n"
