"""`check FILE` with explicit inputs (or one notebook): each module of one file at each target,
as a verdict per target (rules/verdict.py), printed as a listing or as JSON.

The settings are the repository check's, resolved by `repo_check` (command line, else
pyproject.toml, else the defaults); the listing is its per-file listing: the same wording
everywhere.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from torch_mlir_lens.cli.common import (
    CliError,
    EngineFactory,
    display,
    exit_code_for,
    from_lens,
    load_source,
    make_engine,
    module_job,
    pick_module,
    running_engine,
)
from torch_mlir_lens.cli.parser import EXIT_BAD_INPUT
from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.rules.exit_codes import check_exit_code
from torch_mlir_lens.rules.verdict import verdict_json
from torch_mlir_lens.source import notebook_program

if TYPE_CHECKING:
    from torch_mlir_lens.repo_check import CheckSettings


def resolved_args(args: argparse.Namespace, settings: CheckSettings) -> argparse.Namespace:
    """The command's options with the resolved settings in place of the unset ones: what the
    engine (limits, cache) and each job (strict export, rewrites) read."""
    if not args.paths:
        raise CliError("--inputs/--inputs-file/--init need one FILE")
    return argparse.Namespace(**{
        **vars(args), "file": args.paths[0], "timeout": settings.timeout_s,
        "memory_limit": settings.memory_mb, "strict": settings.strict_export,
        "rewrites": ",".join(settings.rewrites) if settings.prove_rewrites else "off"})


async def run(args: argparse.Namespace, targets: Sequence[str],
              make_engine: EngineFactory = make_engine) -> int:
    """Check the modules of `args.file` at `targets`: 0 when every one lowers, 1 when one
    does not, 3 when a job could not run and none failed to lower (rules/exit_codes.py)."""
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
    failures: list[str] = []  # the kind of each failure (rules/exit_codes.py decides)
    async with running_engine(args, make_engine, src.path) as engine:
        for name, line, inputs in names:
            entry: dict[str, Any] = {"name": name, "line": line, "inputs": inputs, "targets": {}}
            report.append(entry)
            if inputs == "missing":
                entry["skipped"] = "no example inputs (add a '# torch-mlir-lens: inputs=(...)' " \
                                   "comment above the class)"
                continue
            job = module_job(src, name, args)
            try:
                results = await engine.lower(job, targets=list(targets))
            except LensError as err:
                if explicit and exit_code_for(err.kind) == EXIT_BAD_INPUT:
                    raise from_lens(err, src.path) from err
                failures.append(err.kind)
                entry["error"] = {"kind": err.kind, "message": err.message, "line": err.line}
                entry["targets"] = {t: {"ok": False, "unsupported": [], "error": err.message}
                                    for t in targets}
                continue
            for result in results:
                verdict = verdict_json(result)
                if not verdict["ok"]:
                    failures.append(ErrorKind.LOWERING_ERROR)
                entry["targets"][result.target] = verdict
            await _with_rewrites(engine, job, results, entry, args)

    if args.json:
        print(src.to_json({"file": src.path, "modules": report}))
    else:
        print_check(src, report)
    return check_exit_code(bad_input=False, failure_kinds=failures)


async def _with_rewrites(engine: Any, job: Any, results: list[Any], entry: dict[str, Any],
                         args: argparse.Namespace) -> None:
    """The rewrites each target went through; each culprit's proven rewrite, or why none
    (unless `--rewrites off`; a proof that cannot run only leaves them out)."""
    from torch_mlir_lens.repo_check import add_used, prove_rewrites

    add_used(entry, results)
    if (getattr(args, "rewrites", None) or "").strip() == "off":
        return
    failing = [t for t, v in entry["targets"].items() if v.get("unsupported")]
    await prove_rewrites(engine, job, failing, entry, [], None, job.path, job.module)


def print_check(src: Any, report: list[dict[str, Any]]) -> None:
    """The listing of one file's check, worded as the repository check's (repo_check/listing.py).
    `src` has `path` and `notebook` (None: a .py file; else its lines become cell lines)."""
    entries = report if src.notebook is None else \
        cast(list[dict[str, Any]], notebook_program.relocate_json(report, src.path, src.notebook))
    from torch_mlir_lens.repo_check import file_listing

    sys.stdout.write(file_listing(display(src.path), entries))
