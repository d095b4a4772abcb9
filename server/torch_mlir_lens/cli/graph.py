"""`torch-mlir-lens graph`: a module's computation graph with each node's verdict per backend.

    torch-mlir-lens graph FILE [--module NAME | --line N] [--targets linalg,tosa,stablehlo]
                          [--format html|json|model-explorer] [-o OUT] [--verify] [--inputs ...]
                          [--rewrites ...]

`html` (the default) is one self-contained page (its script and the graph inline, no network
when it opens); `json` is `{"module", "file", "targets", "nodes": [{"id", "op", "name", "line",
"library_line", "ir_lines", "shape", "dtype", "targets": {"tosa": {"ok", "status", "why"}}}],
"edges": [{"from", "to", "type"}], "groups", "verdicts", "ir"}` (protocol/graph.py);
`model-explorer` is the graph as Model Explorer opens it, each backend's verdicts beside it as
node data (views/model_explorer.py). `--verify`
also runs Verify (the Linalg IR on LLVM against eager PyTorch, as `verify` does by default): the
graph then carries its verdict (`verify`) and the ops of the first line whose values differ
carry the mismatch (each node's `verify`). Exit 0 when the graph is written, whatever its
verdicts and Verify's (`check` and `verify` are the gates); 1 when the module does not export
(no graph), 2 bad input, 3 could not run. Never over a source file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from torch_mlir_lens.cli.common import (
    CliError,
    EngineFactory,
    add_inputs,
    add_module_choice,
    display,
    load_source,
    make_engine,
    module_job,
    pick_module,
    running_engine,
)
from torch_mlir_lens.cli.parser import EXIT_NO_RUN, EXIT_OK
from torch_mlir_lens.findings.graph_verify import mark_verify
from torch_mlir_lens.project import write_policy
from torch_mlir_lens.protocol.graph import ModuleGraph
from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.protocol.verify_results import VerifyResult
from torch_mlir_lens.rules.targets import BACKENDS

FORMATS = ("html", "json", "model-explorer")


def _targets(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in names if t not in BACKENDS]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"not a backend: {', '.join(bad) or text!r} (choose from {', '.join(BACKENDS)})")
    return list(dict.fromkeys(names))


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the `graph` subcommand."""
    graph: argparse.ArgumentParser = sub.add_parser(
        "graph", help="a module's graph with each op's verdict per backend (HTML or JSON)")
    graph.add_argument("file")
    add_module_choice(graph)
    graph.add_argument("--targets", type=_targets, default=list(BACKENDS), metavar="LIST",
                       help=f"backends whose verdicts the nodes carry (default "
                            f"{','.join(BACKENDS)})")
    graph.add_argument("--format", choices=FORMATS, default="html",
                       help="html: one self-contained page (default); json: the graph's data; "
                            "model-explorer: Model Explorer's graph file, and with -o a node "
                            "data file per backend beside it (OUT.TARGET.nodedata.json)")
    graph.add_argument("-o", "--output", metavar="OUT", help="the file to write (default: stdout)")
    graph.add_argument("--verify", action="store_true",
                       help="also run Verify (Linalg against eager PyTorch) and mark the ops of "
                            "the first line whose values differ")
    add_inputs(graph)
    return graph


async def _verified(engine: Any, job: Any, graph: dict[str, Any]) -> dict[str, Any]:
    """The graph with Verify's verdict and its problems on their nodes (a Verify that cannot
    start is its verdict: the graph is written all the same)."""
    try:
        result: VerifyResult = await engine.verify(job)
    except LensError as err:
        result = VerifyResult(module=job.module, ok=False, kind=err.kind,
                              message=f"✗ verify could not run: {err.message}")
    marked = ModuleGraph.from_json(graph)
    nodes = mark_verify(marked, result)
    where = f" (marked on {len(nodes)} op{'' if len(nodes) == 1 else 's'})" if nodes else ""
    print(f"Verify: {(marked.verify or {}).get('message')}{where}", file=sys.stderr)
    return marked.to_json()


def _render(graph: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(graph, indent=1) + "\n"
    if fmt == "model-explorer":
        from torch_mlir_lens.views.model_explorer import graph_collection

        return json.dumps(graph_collection(graph), indent=1) + "\n"
    from torch_mlir_lens.views.assets import AssetMissing
    from torch_mlir_lens.views.graph_page import graph_html

    try:
        return graph_html(graph)
    except AssetMissing as err:
        raise CliError(str(err), EXIT_NO_RUN) from None


def _write(text: str, output: str | None, source: str) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    if not os.path.isdir(os.path.dirname(os.path.abspath(output))):
        raise CliError("the output folder does not exist", file=output)
    try:
        real = write_policy.check_cli_output(output, source=source)
    except write_policy.WriteRefused as err:
        raise CliError(f"will not write the graph here: {err.reason}", file=output) from None
    from torch_mlir_lens.system.atomic_write import write_atomically

    try:
        write_atomically(real, text.encode("utf-8"))
    except OSError as exc:
        raise CliError(f"cannot write: {exc.strerror or exc}", file=output) from None


def _write_node_data(graph: dict[str, Any], output: str, source: str) -> None:
    """Each backend's verdicts as Model Explorer node data, beside the graph file."""
    from torch_mlir_lens.views.model_explorer import node_data

    for target in graph.get("targets") or []:
        path = _node_data_path(output, target)
        _write(json.dumps(node_data(graph, target), indent=1) + "\n", path, source)
        print(f"wrote {display(path)} (Model Explorer node data: the {target} verdicts)",
              file=sys.stderr)


def _node_data_path(output: str, target: str) -> str:
    """`net.json` → `net.tosa.nodedata.json`: a backend's node data beside the graph file."""
    stem = output[:-len(".json")] if output.endswith(".json") else output
    return f"{stem}.{target}.nodedata.json"


def _outputs(args: argparse.Namespace) -> list[str]:
    """Every file the command will write (the node data files with Model Explorer's)."""
    if args.output is None:
        return []
    extra = [_node_data_path(args.output, t) for t in args.targets] \
        if args.format == "model-explorer" else []
    return [args.output, *extra]


async def run(args: argparse.Namespace, make_engine: EngineFactory = make_engine) -> int:
    """The `graph` command: the worker builds the graph; this writes it."""
    src = load_source(args.file)
    module = pick_module(src, args.module, args.line)
    for output in _outputs(args):  # each refused before the lowering's cost, none written
        if not os.path.isdir(os.path.dirname(os.path.abspath(output))):
            raise CliError("the output folder does not exist", file=output)
        try:
            write_policy.check_cli_output(output, source=os.path.abspath(src.path))
        except write_policy.WriteRefused as err:
            raise CliError(f"will not write the graph here: {err.reason}",
                           file=output) from None
    job = module_job(src, module, args)
    async with running_engine(args, make_engine, src.path) as engine:
        graph = await engine.graph(job, args.targets)
        if args.verify:
            graph = await _verified(engine, job, graph)
    _write(_render(graph, args.format), args.output, os.path.abspath(src.path))
    if args.format == "model-explorer" and args.output is not None:
        _write_node_data(graph, args.output, os.path.abspath(src.path))
    if args.output is not None:
        print(f"wrote {display(args.output)} ({len(graph.get('nodes') or [])} nodes, "
              f"{len(graph.get('groups') or [])} groups)", file=sys.stderr)
    return EXIT_OK
