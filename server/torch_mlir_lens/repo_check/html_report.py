"""`check --format html`: the report as one self-contained page, for a CI run's artifacts.

A renderer of the JSON report (`Report.to_json()`), nothing more: per backend the share of
modules that lower, of ops that lower (the ops of the backend's IR each module's verdict
counts; a report from before the counts has none) and of rejected ops with a proven rewrite
(bar charts drawn as inline SVG), the culprits ranked by how many modules they block with why
and their proven rewrites, every module's verdicts with its source lines, and with a baseline
what changed since (new findings, fixed ones). No script at all: the page's policy allows
none and fetches nothing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.findings.wording import at_node
from torch_mlir_lens.protocol.onnx_graphs import OnnxNode
from torch_mlir_lens.repo_check.report import Report
from torch_mlir_lens.rules.targets import target_title
from torch_mlir_lens.views.html_page import escape, page

STYLE = """
body { font: 14px system-ui, sans-serif; margin: 24px; color: #222; background: #fafafa; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; background: #fff; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
.ok { color: #2e7d32; font-weight: 600; } .bad { color: #c62828; font-weight: 600; }
.skip { color: #757575; }
.cards { display: flex; flex-wrap: wrap; gap: 16px; }
.card { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 10px 14px; }
.card h3 { margin: 0 0 6px; font-size: 15px; }
.chart text { font-size: 12px; fill: #222; }
code { background: #eee; padding: 0 3px; }
a { color: #0b62c4; }
small { color: #555; }
"""

GREEN, RED, BLUE, GREY = "#2e7d32", "#c62828", "#1565c0", "#e0e0e0"


@dataclass
class Culprit:
    """One rejected cause at one backend, over every module it blocks."""

    target: str
    cause: str
    why: str
    modules: set[str] = field(default_factory=set)
    places: list[str] = field(default_factory=list)
    rewrite: str = ""  # the proven rewrite's spec, or why none


def _link(file: str, line: int | None, node: dict[str, Any] | OnnxNode | None = None) -> str:
    """A link to a file's line; in an ONNX model, to the file, labelled with the node."""
    if node:
        label = at_node(file, node if isinstance(node, OnnxNode) else OnnxNode.from_json(node))
        return f'<a href="{escape(file)}">{escape(label)}</a>'
    where = f"{file}:{line}" if line else file
    return f'<a href="{escape(file)}{f"#L{line}" if line else ""}">{escape(where)}</a>'


def _bar(label: str, parts: list[tuple[int, str, str]], total: int, width: int = 320) -> str:
    """One labelled horizontal bar of `parts` [(count, colour, what)] out of `total`."""
    x, rects = 0.0, []
    for count, colour, what in parts:
        w = width * count / total if total else 0
        rects.append(f'<rect x="{x:.1f}" y="18" width="{w:.1f}" height="16" fill="{colour}">'
                     f"<title>{escape(what)}: {count}</title></rect>")
        x += w
    share = f"{100 * parts[0][0] / total:.0f}%" if total else "–"
    return (f'<svg class="chart" role="img" width="{width + 60}" height="40" '
            f'aria-label="{escape(label)}: {share}"><text x="0" y="12">{escape(label)}</text>'
            f'<rect x="0" y="18" width="{width}" height="16" fill="{GREY}"/>{"".join(rects)}'
            f'<text x="{width + 6}" y="31">{share}</text></svg>')


def _verdicts(entry: dict[str, Any], target: str) -> dict[str, Any] | None:
    value = (entry.get("targets") or {}).get(target)
    return value if isinstance(value, dict) else None


def _culprits(report: Report) -> list[Culprit]:
    """Every cause, ranked by the modules it blocks (then by backend and name)."""
    found: dict[tuple[str, str], Culprit] = {}
    for entry in report.modules:
        module = f"{entry.get('file')}::{entry.get('name')}"
        for target in report.targets:
            verdict = _verdicts(entry, target) or {}
            for u in verdict.get("unsupported") or []:
                cause = str(u.get("cause") or u.get("op") or "?")
                c = found.setdefault((target, cause), Culprit(target, cause, ""))
                c.modules.add(module)
                c.places.append(_link(str(entry.get("file")), u.get("line"), u.get("node")))
                rewrite = u.get("rewrite") or {}
                if rewrite.get("spec") and not c.rewrite.startswith("✓"):
                    c.rewrite = f"✓ {rewrite['spec']}: {rewrite.get('verify') or 'proven'}"
                elif rewrite.get("why") and not c.rewrite:
                    c.rewrite = str(rewrite["why"])
    for finding in report.findings():
        for c in found.values():
            if (finding.target == c.target and not c.why and finding.op
                    and finding.op in c.cause.replace("torch.", "")):
                c.why = finding.message
    return sorted(found.values(), key=lambda c: (-len(c.modules), c.target, c.cause))


def _op_counts(checked: list[dict[str, Any]], target: str) -> tuple[str, str]:
    """The chart of the ops that lower at `target` and its words, over the modules whose
    verdict counts them (`ops`: rules/verdict.py)."""
    counted = [ops for e in checked
               if isinstance(ops := (_verdicts(e, target) or {}).get("ops"), dict)]
    total = sum(int(o.get("total") or 0) for o in counted)
    rejected = sum(int(o.get("rejected") or 0) for o in counted)
    bar = _bar("ops that lower", [(total - rejected, GREEN, "lower"), (rejected, RED,
                                                                       "rejected")], total)
    words = f"{total - rejected} of {total} ops lower ({rejected} left unlowered)"
    if len(counted) < len(checked):
        words += (f" ({len(checked) - len(counted)} module(s) not counted: no "
                  f"{target_title(target)} IR)")
    return bar, words


def _backend_cards(report: Report) -> str:
    cards = []
    checked = [e for e in report.modules if "skipped" not in e]
    for target in report.targets:
        ok = sum(1 for e in checked if (_verdicts(e, target) or {}).get("ok"))
        rejected = [u for e in checked for u in (_verdicts(e, target) or {}).get("unsupported")
                    or []]
        proven = sum(1 for u in rejected if (u.get("rewrite") or {}).get("spec"))
        ops_bar, ops_words = _op_counts(checked, target)
        cards.append(
            f'<div class="card" data-target="{escape(target)}">'
            f"<h3>{escape(target_title(target))}</h3>"
            + _bar("modules that lower", [(ok, GREEN, "lower"), (len(checked) - ok, RED,
                                                                  "do not lower")], len(checked))
            + ops_bar
            + _bar("rejected ops with a proven rewrite", [(proven, BLUE, "proven rewrite"),
                                                          (len(rejected) - proven, RED,
                                                           "none")], len(rejected))
            + f"<p><small>{ok} of {len(checked)} modules lower; {escape(ops_words)}; "
              f"{len(rejected)} rejected op(s), {proven} with a proven rewrite</small></p></div>")
    return f'<div class="cards">{"".join(cards)}</div>'


def _culprit_table(culprits: list[Culprit]) -> str:
    if not culprits:
        return "<p class=\"ok\">No op is rejected.</p>"
    rows = "".join(
        f"<tr><td>{len(c.modules)}</td><td>{escape(target_title(c.target))}</td>"
        f"<td><code>{escape(c.cause)}</code></td><td>{escape(c.why)}</td>"
        f"<td>{escape(c.rewrite)}</td><td>{', '.join(c.places[:6])}"
        f"{' …' if len(c.places) > 6 else ''}</td></tr>" for c in culprits)
    return ("<table><tr><th>modules blocked</th><th>backend</th><th>cause</th><th>why</th>"
            f"<th>proven rewrite</th><th>where</th></tr>{rows}</table>")


def _cell(entry: dict[str, Any], target: str) -> str:
    if "skipped" in entry:
        return f'<td class="skip">skipped: {escape(entry.get("skipped"))}</td>'
    verdict = _verdicts(entry, target)
    if verdict is None:
        return '<td class="skip">–</td>'
    if verdict.get("ok"):
        return '<td class="ok">✓</td>'
    causes = [f"<code>{escape(u.get('cause') or u.get('op'))}</code> "
              f"{_link(str(entry.get('file')), u.get('line'), u.get('node'))}"
              for u in verdict.get("unsupported") or []]
    if verdict.get("error"):
        at = _link(str(entry.get("file")), verdict.get("error_line"), verdict.get("error_node"))
        causes.append(escape(str(verdict["error"]).splitlines()[0])
                      + (f" {at}" if verdict.get("error_line") else ""))
    return f'<td class="bad">✗ {"<br>".join(causes)}</td>'


def _module_table(report: Report) -> str:
    head = "".join(f"<th>{escape(target_title(t))}</th>" for t in report.targets)
    rows = "".join(
        f"<tr><td>{escape(e.get('name'))} {_link(str(e.get('file')), e.get('line'))}</td>"
        + "".join(_cell(e, t) for t in report.targets) + "</tr>" for e in report.modules)
    return f"<table><tr><th>module</th>{head}</tr>{rows}</table>"


def _baseline(report: Report) -> str:
    if report.baseline is None:
        return ""
    new = report.new_findings()
    items = "".join(f"<li>{escape(f.message)} {_link(f.file, f.line, f.node)}</li>"
                    for f in new)
    fixed = "".join(f"<li>{escape(' · '.join(str(k) for k in key))}</li>"
                    for key in report.fixed)
    return (f"<h2>Since the baseline <small>{escape(report.baseline)}</small></h2>"
            f"<h3>New ({len(new)})</h3><ul>{items or '<li>none</li>'}</ul>"
            f"<h3>Fixed ({len(report.fixed)})</h3><ul>{fixed or '<li>none</li>'}</ul>")


def render_html(report: Report, root: str) -> str:
    """The report as one self-contained HTML page."""
    summary = report.summary()
    verdict = ("ok" if report.exit_code() == 0 else "bad")
    per_target: dict[str, int] = defaultdict(int)
    for f in report.new_findings():
        per_target[f.target or "-"] += 1
    body = (
        f"<h1>Torch-MLIR Lens coverage <small>{escape(report.version)}</small></h1>"
        f'<p class="{verdict}">{summary["modules"]} modules in {summary["files"]} files: '
        f'{summary["ok"]} ok, {summary["failing"]} failing, {summary["skipped"]} skipped; '
        f'{summary["new"]} new finding(s); exit code {report.exit_code()}</p>'
        "<h2>Per backend</h2>" + _backend_cards(report)
        + "<h2>Culprits, by the modules they block</h2>" + _culprit_table(_culprits(report))
        + "<h2>Modules</h2>" + _module_table(report) + _baseline(report))
    if report.problems:
        body += "<h2>Files that could not be checked</h2><ul>" + "".join(
            f"<li>{escape(p.message)} {_link(p.file, p.line)}</li>" for p in report.problems
        ) + "</ul>"
    return page("Torch-MLIR Lens coverage", body, styles=(STYLE,))
