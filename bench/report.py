"""Figure results and the verdict table (the results files: `bench.results_file`)."""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.stats import median, spread


@dataclass
class Metric:
    """One measured quantity with its target: `value <op> target` is a PASS.

    `value` is the headline (usually a median or a ratio of medians); `samples` are the raw
    measurements it came from, `lo`/`hi` their spread.
    """

    name: str
    value: float
    unit: str
    target: float | None
    op: str = "<="  # "<=", ">=", "=="
    samples: list[float] = field(default_factory=list)
    lo: float = math.nan
    hi: float = math.nan
    note: str = ""

    @property
    def verdict(self) -> str:
        """PASS / FAIL against the target, INFO when there is no target, N/A when unmeasured."""
        if self.value is None or (isinstance(self.value, float) and math.isnan(self.value)):
            return "N/A"
        if self.target is None:
            return "INFO"
        ok = {
            "<=": self.value <= self.target,
            ">=": self.value >= self.target,
            "==": self.value == self.target,
        }[self.op]
        return "PASS" if ok else "FAIL"

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = self.verdict
        for k in ("value", "lo", "hi"):
            if isinstance(d[k], float) and math.isnan(d[k]):
                d[k] = None
        return d

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Metric:
        """A metric as `to_json` wrote it (None values back to NaN)."""
        def num(key: str) -> float:
            value = data.get(key)
            return math.nan if value is None else float(value)

        return cls(str(data["name"]), num("value"), str(data.get("unit", "")),
                   data.get("target"), str(data.get("op", "<=")),
                   list(data.get("samples", [])), num("lo"), num("hi"),
                   str(data.get("note", "")))


def metric_from_samples(
    name: str, samples: list[float], unit: str, target: float | None, op: str = "<=",
    note: str = "",
) -> Metric:
    """A metric whose value is the median of `samples`."""
    lo, hi = spread(samples)
    return Metric(name, median(samples), unit, target, op, list(samples), lo, hi, note)


@dataclass
class FigureResult:
    """The outcome of one figure of issue 5: its metrics, extra details, and any error."""

    number: int
    title: str
    metrics: list[Metric] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    method: str = ""  # how it is measured (the figure module's docstring)

    @property
    def verdict(self) -> str:
        """FAIL if any metric fails or the figure errored; PASS if all targeted metrics pass."""
        if self.error:
            return "ERROR"
        verdicts = [m.verdict for m in self.metrics if m.target is not None]
        if not verdicts or "N/A" in verdicts:
            return "N/A"
        return "FAIL" if "FAIL" in verdicts else "PASS"

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "title": self.title,
            "verdict": self.verdict,
            "metrics": [m.to_json() for m in self.metrics],
            "details": self.details,
            "error": self.error,
            "seconds": round(self.seconds, 2),
            "method": self.method,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FigureResult:
        """A figure as `to_json` wrote it; without a recorded method (older files), the
        figure module's current docstring."""
        number = int(data["number"])
        method = data.get("method")
        if method is None:
            from bench.figures import FIGURES

            docs = {fig.NUMBER: fig.__doc__ or "" for fig in FIGURES}
            method = docs.get(number, "")
        return cls(number, str(data.get("title", "")),
                   [Metric.from_json(m) for m in data.get("metrics", [])],
                   dict(data.get("details", {})), data.get("error"),
                   float(data.get("seconds", 0.0)), str(method))

    def markdown_body(self) -> list[str]:
        """The lines of its RESULTS.md section after the heading: method, error, details."""
        md: list[str] = []
        if self.method:
            body = self.method.strip().split("\n", 1)[-1].strip()
            md += [" ".join(body.split()), ""]
        if self.error:
            last = self.error.strip().splitlines()[-1] if self.error.strip() else self.error
            md += [f"Error: `{last}`", ""]
        for k, val in self.details.items():
            md.append(f"- {k}: {_detail(val)}")
        md.append("")
        return md


def _fmt(x: float | None, unit: str) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if unit == "s":
        return f"{x:.3f} s" if x < 10 else f"{x:.1f} s"
    if unit == "ms":
        return f"{x:.1f} ms"
    if unit == "MB":
        return f"{x:.1f} MB"
    if unit == "x":
        return f"{x:.3f}x"
    if unit == "bool":
        return "yes" if x else "no"
    if unit == "count":
        return f"{x:g}"
    if unit == "fraction":
        return f"{x:.0%}"
    return f"{x:.3g} {unit}"


def rows(figures: list[FigureResult],
         measured: dict[int, str] | None = None) -> list[list[str]]:
    """Table rows: figure, metric, median, spread, target, verdict (and, with `measured`, when
    each figure was measured, on its first row)."""
    out = []
    for f in figures:
        when = [] if measured is None else [measured.get(f.number, "?")]
        if f.error and not f.metrics:
            out.append([f"{f.number}. {f.title}", "(error)", "-", "-", "-", "ERROR", *when])
            continue
        for i, m in enumerate(f.metrics):
            label = f"{f.number}. {f.title}" if i == 0 else ""
            spr = "-" if math.isnan(m.lo) else f"{_fmt(m.lo, m.unit)} … {_fmt(m.hi, m.unit)}"
            tgt = "-" if m.target is None else f"{m.op} {_fmt(m.target, m.unit)}"
            out.append([label, m.name, _fmt(m.value, m.unit), spr, tgt, m.verdict,
                        *(when if i == 0 else [""] * len(when))])
    return out


HEADER = ["figure", "metric", "median", "spread (min … max)", "target", "verdict"]


def text_table(figures: list[FigureResult]) -> str:
    """A fixed-width table for the terminal."""
    table = [HEADER, *rows(figures)]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADER))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(figures: list[FigureResult],
                   measured: dict[int, str] | None = None) -> str:
    """The same table in Markdown (with a `measured` column when given)."""
    header = HEADER if measured is None else [*HEADER, "measured"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows(figures, measured):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    return "\n".join(lines)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gb() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return math.nan


def _versions(python: str) -> dict[str, str]:
    """torch / torch-mlir / pygls versions as installed for `python` (no torch import here)."""
    code = (
        "import importlib.metadata as m, json\n"
        "print(json.dumps({p: m.version(p) for p in "
        "('torch', 'torch-mlir', 'pygls', 'lsprotocol', 'torch-mlir-lens')}))"
    )
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
        return dict(json.loads(out.stdout))
    except Exception as exc:
        return {"error": str(exc)}


def machine(python: str = sys.executable) -> dict[str, Any]:
    """A description of this machine and the software measured (no paths)."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (math.nan,) * 3
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "ram_gb": _ram_gb(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "versions": _versions(python),
        "loadavg_at_start": [round(x, 2) for x in load],
    }


REPO = Path(__file__).resolve().parent.parent


def scrub(text: str) -> str:
    """Remove machine paths (repository, interpreter prefixes, home) from committed text."""
    for prefix, name in (
        (str(REPO), "."), (sys.prefix, "<venv>"), (sys.base_prefix, "<python>"),
        (os.path.expanduser("~"), "~"),
    ):
        if prefix and prefix not in ("/", "."):
            text = text.replace(prefix, name)
    return text


def _detail(val: Any) -> str:
    if isinstance(val, float):
        return f"{val:.4g}"
    if isinstance(val, list) and all(isinstance(x, float) for x in val):
        return "[" + ", ".join(f"{x:.4g}" for x in val) + "]"
    return f"{val}"
