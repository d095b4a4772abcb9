"""`--format sarif`: SARIF 2.1.0, as GitHub code scanning and other review tools read it.

One run. Paths are URIs relative to %SRCROOT% (the project root), percent-encoded as RFC 3986
asks (`%C3%BC/m%20v2.py`). Rules are backend × op (`tosa/aten.roll`) plus the failures before
any backend (`export-error`, `timeout`, ...). A result sits at the op's file and line, names its
module as a logical location, and points at the module's definition as a related location
(and, when the op comes from another file, e.g. a layer library, at that file's line as the
primary one). Baselined findings stay in, with `baselineState: unchanged` and an external
suppression, so a viewer can still show them; new ones are `baselineState: new`. Skipped
modules are tool notifications. `runs[0].properties.torchMlirLens` records the modules
checked, the shard, the settings and the whole run's module list, for `merge`
(`run_identity`).

A notebook's result: SARIF locations are lines of an artifact as stored, and review tools
show them there, so the physical location is the .ipynb file with the region on the line of
its JSON text that holds the cell's line; the cell and the line within it are in the
location's properties (`notebookCell`, `notebookCellLine`) and in the message
(`NOTEBOOK.ipynb:CELL:LINE`).

An ONNX model's result: a node is no line of the file, so the physical location is the `.onnx`
artifact with no region, and the node is a logical location (its name, or `node N` without
one; `properties.onnxNode`: index, name, op_type, domain, opset) beside the graph's; the
message starts with `MODEL.onnx: node N "name" (Op, opset K)`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from torch_mlir_lens import __version__
from torch_mlir_lens.findings import Finding
from torch_mlir_lens.findings.wording import at_node
from torch_mlir_lens.protocol.onnx_graphs import OnnxNode
from torch_mlir_lens.repo_check.notebook_modules import FileLines, where
from torch_mlir_lens.repo_check.report import Report
from torch_mlir_lens.repo_check.rewrite_findings import rewrite_note
from torch_mlir_lens.repo_check.run_identity import RunIdentity
from torch_mlir_lens.rules.rewrite_specs import at_export, offer_title, pin_title
from torch_mlir_lens.rules.targets import target_title
from torch_mlir_lens.source.onnx_files import is_onnx

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/llvm/torch-mlir"
SRCROOT = "%SRCROOT%"


_MODULE_RULES = {
    "export-error": "torch.export or the FX importer cannot capture the module",
    "load-error": "the file's definitions fail to execute, or the ONNX model cannot be read",
    "syntax-error": "the file does not parse",
    "timeout": "lowering the module took longer than the time-out",
    "memory-limit": "lowering the module used more than the memory limit",
    "worker-crash": "the lowering worker crashed on the module",
    "inputs-missing": "the module has no example inputs",
}
# A target's failures that are not an op it rejects ("{t}": the target's title).
_TARGET_RULES = {
    "lowering-error": "the module does not lower to {t}",
    "compile-error": "IREE's compiler fails on the module's Linalg IR for {t}",
    "missing-dependency": "{t} needs IREE, which is not installed where the worker runs",
    "timeout": "the {t} job took longer than the time-out",
    "memory-limit": "the {t} job used more than the memory limit",
    "worker-crash": "the worker crashed in the {t} job",
}


def _rule_description(rule: str) -> str:
    target, sep, what = rule.partition("/")
    if not sep:
        return _MODULE_RULES.get(rule, f"the module fails before any backend ({rule})")
    if what in _TARGET_RULES:
        return _TARGET_RULES[what].format(t=target_title(target))
    return f"{what} cannot be lowered to {target_title(target)}"


def _rule(rule: str) -> dict[str, Any]:
    target, sep, what = rule.partition("/")
    props: dict[str, Any] = {"tags": ["torch-mlir"]}
    if sep:
        props.update({"target": target, "op": what})
    return {
        "id": rule,
        "name": "".join(p.capitalize() for p in rule.replace("/", "-").replace(".", "-")
                        .replace("_", "-").split("-") if p),
        "shortDescription": {"text": _rule_description(rule)},
        "defaultConfiguration": {"level": "error"},
        "properties": props,
    }


def artifact_location(file: str) -> dict[str, Any]:
    """A report path as SARIF wants it: a URI (RFC 3986: spaces and non-ASCII characters
    percent-encoded as UTF-8), relative to %SRCROOT%, or a file URI outside the root."""
    if os.path.isabs(file):
        return {"uri": Path(file).as_uri()}
    return {"uri": quote(file, safe="/"), "uriBaseId": SRCROOT}


def _location(file: str, line: int | None, cell: int | None,
              lines: FileLines) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": artifact_location(file)}
    file_line = None if is_onnx(file) else lines.line(file, cell, line)  # a node is no line
    if file_line:
        physical["region"] = {"startLine": file_line}
    location: dict[str, Any] = {"physicalLocation": physical}
    if cell and line:
        location["properties"] = {"notebookCell": cell, "notebookCellLine": line}
    return location


def fingerprint(f: Finding) -> str:
    """Stable across line moves: the baseline key, hashed."""
    return hashlib.sha256("\0".join(f.baseline_key).encode()).hexdigest()[:32]


def _node_location(node: OnnxNode, graph: str | None) -> dict[str, Any]:
    """An ONNX node as a SARIF logical location."""
    name = node.name or f"node {node.index}"
    return {"name": name, "fullyQualifiedName": f"{graph}/{name}" if graph else name,
            "kind": "function", "properties": {"onnxNode": node.to_json()}}


def _result(f: Finding, rule_index: int, lines: FileLines) -> dict[str, Any]:
    loc = _location(f.file, f.line, f.cell, lines)
    logical = [_node_location(f.node, f.module)] if f.node is not None else []
    if f.module:
        logical.append({"name": f.module, "kind": "module" if f.node else "type"})
    if logical:
        loc["logicalLocations"] = logical
    text = f.message if not f.module else f"{f.message} (in {f.module})"
    if f.rewrite and f.rewrite.get("rewrites"):
        text += f"; {rewrite_note(f.rewrite)}"
    if f.cell and f.line:
        text = f"{where(f.file, f.line, f.cell)}: {text}"
    elif f.node is not None:
        text = f"{at_node(f.file, f.node)}: {text}"
    result: dict[str, Any] = {
        "ruleId": f.rule, "ruleIndex": rule_index, "level": "error",
        "message": {"text": text},
        "locations": [loc],
        "partialFingerprints": {"torchMlirLens/v1": fingerprint(f)},
        "baselineState": "unchanged" if f.baselined else "new",
    }
    if f.module and f.module_line and (f.file, f.cell, f.line) != (
            f.module_file, f.module_cell, f.module_line):
        related = _location(f.module_file, f.module_line, f.module_cell, lines)
        related["id"] = 1
        related["message"] = {"text": f"module {f.module} is defined here"}
        result["relatedLocations"] = [related]
    if f.baselined:
        result["suppressions"] = [{"kind": "external", "status": "accepted",
                                   "justification": "in the torch-mlir-lens baseline"}]
    fix = _fix(f)
    if fix is not None:
        result["fixes"] = [fix]
    return result


def _fix(f: Finding) -> dict[str, Any] | None:
    """A proven rewrite as a SARIF fix: the line of the module's comment that applies it
    (none in a notebook, whose lines are a cell's)."""
    rewrite = f.rewrite or {}
    edit = rewrite.get("edit")
    names = list(rewrite.get("rewrites") or [])
    pin = not f.op and bool(names) and all(at_export(n) for n in names)  # past the export
    if not isinstance(edit, dict) or f.cell or f.module_cell or not (
            (f.target and f.op) or pin):
        return None
    line = int(edit["line"])
    region = {"startLine": line, "startColumn": 1,
              "endLine": line + 1 if edit.get("replace") else line, "endColumn": 1}
    title = offer_title(f.op, f.target, names, rewrite.get("max_abs")) \
        if f.op and f.target else pin_title(names, rewrite.get("max_abs"))
    return {
        "description": {"text": title},
        "artifactChanges": [{
            "artifactLocation": artifact_location(f.module_file),
            "replacements": [{"deletedRegion": region,
                              "insertedContent": {"text": f"{edit['text']}\n"}}],
        }],
    }


def to_sarif(report: Report, root: str) -> dict[str, Any]:
    """The SARIF log of a report (paths relative to `root`, the %SRCROOT%)."""
    lines = FileLines(root)
    findings = sorted(report.findings(), key=Finding.sort_key)
    rule_ids = sorted({f.rule for f in findings})
    index = {r: i for i, r in enumerate(rule_ids)}
    notes = [{
        "level": "note",
        "message": {"text": f"{e['name']} skipped: {e['skipped']}"},
        "locations": [_location(e["file"], e.get("line"), e.get("cell"), lines)],
    } for e in report.modules if "skipped" in e]
    notes += [{
        "level": "warning",
        "message": {"text": f"{where(w.file, w.line, w.cell)}: {w.message}"},
        "locations": [_location(w.file, w.line, w.cell, lines)],
    } for w in report.warnings]
    run: dict[str, Any] = {
        "tool": {"driver": {
            "name": "torch-mlir-lens", "version": report.version or __version__,
            "informationUri": INFO_URI, "rules": [_rule(r) for r in rule_ids],
        }},
        "originalUriBaseIds": {SRCROOT: {"uri": Path(root).resolve().as_uri() + "/"}},
        "invocations": [{"executionSuccessful": not report.problems,
                         "toolExecutionNotifications": notes}],
        "results": [_result(f, index[f.rule], lines) for f in findings],
        "columnKind": "unicodeCodePoints",
        "properties": {"torchMlirLens": {
            "targets": report.targets,
            "modules": [f"{e['file']}::{e['name']}" for e in report.modules],
            "shards": [{"index": i, "count": n} for i, n in report.shards],
            "config": report.config,
            "plan": report.plan,
            "summary": report.summary(),
        }},
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def merge_sarif(logs: list[dict[str, Any]]) -> dict[str, Any]:
    """One SARIF log from the logs of several shards (rules united, results in order)."""
    if not logs:
        raise ValueError("nothing to merge")
    runs = [run for log in logs for run in log.get("runs", [])]
    if not runs or any(run.get("tool", {}).get("driver", {}).get("name") != "torch-mlir-lens"
                       for run in runs):
        raise ValueError("not a torch-mlir-lens SARIF log")
    rules: dict[str, dict[str, Any]] = {}
    for run in runs:
        for rule in run["tool"]["driver"].get("rules", []):
            rules.setdefault(rule["id"], rule)
    rule_ids = sorted(rules)
    index = {r: i for i, r in enumerate(rule_ids)}
    results, notes, modules, shards, targets = [], [], [], [], []
    ok = True
    for run in runs:
        for r in run.get("results", []):
            results.append({**r, "ruleIndex": index[r["ruleId"]]})
        for inv in run.get("invocations", []):
            notes += inv.get("toolExecutionNotifications", [])
            ok = ok and bool(inv.get("executionSuccessful", True))
        props = run.get("properties", {}).get("torchMlirLens", {})
        modules += props.get("modules", [])
        shards += props.get("shards", [])
        targets += [t for t in props.get("targets", []) if t not in targets]

    def where(r: dict[str, Any]) -> tuple[Any, ...]:
        phys = r["locations"][0]["physicalLocation"] if r.get("locations") else {}
        return (phys.get("artifactLocation", {}).get("uri", ""),
                phys.get("region", {}).get("startLine", 0), r["ruleId"])

    first = runs[0]
    first_props = first.get("properties", {}).get("torchMlirLens", {})
    merged = {
        "tool": {"driver": {**first["tool"]["driver"], "rules": [rules[r] for r in rule_ids]}},
        "originalUriBaseIds": first.get("originalUriBaseIds", {}),
        "invocations": [{"executionSuccessful": ok, "toolExecutionNotifications": sorted(
            notes, key=lambda n: n["message"]["text"])}],
        "results": sorted(results, key=where),
        "columnKind": "unicodeCodePoints",
        "properties": {"torchMlirLens": {
            "targets": targets, "modules": sorted(modules), "shards": shards,
            "config": first_props.get("config"), "plan": first_props.get("plan")}},
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [merged]}


def run_identity(log: dict[str, Any], source: str) -> RunIdentity:
    """What `merge` compares of a SARIF log (its first run, as `to_sarif` writes one)."""
    runs = log.get("runs") or [{}]
    run = runs[0] if isinstance(runs[0], dict) else {}
    props = run.get("properties", {}).get("torchMlirLens", {})
    return RunIdentity(
        source=source, version=str(run.get("tool", {}).get("driver", {}).get("version")),
        targets=tuple(props.get("targets", [])), config=props.get("config"),
        plan=props.get("plan"),
        shards=tuple((int(s["index"]), int(s["count"])) for s in props.get("shards", [])))


def sarif_failed(log: dict[str, Any]) -> bool:
    """Whether a SARIF log holds a new (not baselined) result or a failed invocation."""
    for run in log.get("runs", []):
        if any(r.get("baselineState") != "unchanged" for r in run.get("results", [])):
            return True
        if any(not inv.get("executionSuccessful", True) for inv in run.get("invocations", [])):
            return True
    return False

