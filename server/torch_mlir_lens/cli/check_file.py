"""`check FILE` with explicit inputs (or one notebook): each module of one file at each target,
as a verdict per target (verdict.py), printed as a listing or as JSON.

`print_check` is also the repository check's per-file listing (the same wording everywhere).
"""

from __future__ import annotations

import argparse
from typing import Any

from torch_mlir_lens import notebook_cli
from torch_mlir_lens.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    CliError,
    EngineFactory,
    display,
    exit_code_for,
    from_lens,
    indented,
    load_source,
    make_engine,
    module_job,
    pick_module,
)
from torch_mlir_lens.results import LensError
from torch_mlir_lens.targets import TARGETS
from torch_mlir_lens.verdict import verdict_json


async def run(args: argparse.Namespace, make_engine: EngineFactory = make_engine) -> int:
    """Check the modules of `args.file` at `args.targets`: 0 when every one lowers, else 1."""
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    for t in targets:
        if t not in TARGETS:
            raise CliError(f"unknown target {t!r} (choose from {', '.join(TARGETS)})")
    if not targets:
        raise CliError("--targets names no target")
    src = load_source(args.file)
    explicit = bool(args.inputs or args.inputs_file or args.init)
    if args.module:
        chosen = [m for m in src.modules if m.name == args.module]
        names = [(args.module, chosen[0].line if chosen else None, "given")]
    elif explicit:
        names = [(pick_module(src, None, None), src.modules[0].line, "given")]
    else:
        names = [(m.name, m.line, m.inputs) for m in src.modules]
    if not names:
        raise CliError("no nn.Module class found", file=src.path)

    report: list[dict[str, Any]] = []
    failed = False
    engine = make_engine(args)
    await engine.start()
    try:
        for name, line, inputs in names:
            entry: dict[str, Any] = {"name": name, "line": line, "inputs": inputs, "targets": {}}
            report.append(entry)
            if inputs == "missing":
                entry["skipped"] = "no example inputs (add a '# torch-mlir-lens: inputs=(...)' " \
                                   "comment above the class)"
                continue
            try:
                results = await engine.lower(module_job(src, name, args), targets=targets)
            except LensError as err:
                if explicit and exit_code_for(err.kind) == EXIT_BAD_INPUT:
                    raise from_lens(err, src.path) from err
                failed = True
                entry["error"] = {"kind": err.kind, "message": err.message, "line": err.line}
                entry["targets"] = {t: {"ok": False, "unsupported": [], "error": err.message}
                                    for t in targets}
                continue
            for result in results:
                verdict = verdict_json(result)
                failed = failed or not verdict["ok"]
                entry["targets"][result.target] = verdict
    finally:
        await engine.stop()

    if args.json:
        print(src.to_json({"file": src.path, "modules": report}))
    else:
        print_check(src, report)
    return EXIT_FAILED if failed else EXIT_OK


def print_check(src: Any, report: list[dict[str, Any]]) -> None:
    """The listing of one file's check. `src` has `path` and `notebook` (None: a .py file)."""

    def line_text(line: int | None) -> str:
        return notebook_cli.line_text(src.notebook, line)

    print(display(src.path))
    for entry in report:
        head = f"  {entry['name']} ({line_text(entry['line'])})" if entry["line"] else \
            f"  {entry['name']}"
        if "skipped" in entry:
            print(f"{head}: skipped, {entry['skipped']}")
            continue
        if "error" in entry:
            err = entry["error"]
            at = f" at {line_text(err['line'])}" if err.get("line") else ""
            print(f"{head}: error{at}: {indented(err['message'], '      ')}")
            continue
        verdicts = list(entry["targets"].values())
        errors = {(v["error"], v["error_line"]) for v in verdicts}
        if verdicts and all(not v["ok"] and not v["unsupported"] for v in verdicts) \
                and len(errors) == 1:
            # One failure before any backend (the export): say it once.
            message, line = errors.pop()
            at = f" at {line_text(line)}" if line else ""
            print(f"{head}: failed{at}: {indented(message or 'failed', '      ')}")
            continue
        marks = []
        for target, v in entry["targets"].items():
            if v["ok"]:
                marks.append(f"{target} ok")
            elif v["unsupported"]:
                marks.append(f"{target} {len(v['unsupported'])} unsupported")
            else:
                marks.append(f"{target} failed")
        print(f"{head}: " + ", ".join(marks))
        for target, v in entry["targets"].items():
            for u in v["unsupported"]:
                at = line_text(u["line"]) if u["line"] else "no line"
                print(f"    {target}: {u.get('cause') or u['op']} at {at}")
            if v["error"] and not v["unsupported"]:
                at = f" ({line_text(v['error_line'])})" if v["error_line"] else ""
                print(f"    {target}{at}: {indented(v['error'], '      ')}")
