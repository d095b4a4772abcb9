"""`torch-mlir-lens serve`: run the language server (LSP over stdio, or TCP)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

SAVE_AFTER_S = 30.0


HELP = "run the language server (LSP over stdio)"


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the `serve` subcommand (to the full command line's parser)."""
    serve: argparse.ArgumentParser = sub.add_parser("serve", help=HELP)
    _add_arguments(serve)
    return serve


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tcp", action="store_true", help="listen on TCP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=2087)


def main(argv: list[str]) -> int:
    """`torch-mlir-lens serve …` straight from `cli.main`: the editor waits for this one, so
    it parses its own arguments and loads nothing of the other commands."""
    from torch_mlir_lens.cli.parser import PROG, Parser

    parser = Parser(prog=f"{PROG} serve", description=HELP)
    _add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Start the worker early, then serve until the client leaves."""
    # First thing: the worker's torch imports take seconds and overlap ours. It runs no user
    # code until a job arrives, so trust is not involved yet; the server stops it at once if
    # the client says the workspace is untrusted.
    from torch_mlir_lens.engine.worker_client.spawn import spawn_early

    early = spawn_early(sys.executable)
    _reuse_generated_code()
    if not args.tcp:
        # The front answers the first lenses before pygls is even imported (lsp/front.py).
        from torch_mlir_lens.lsp.front import serve_stdio

        return serve_stdio(early)
    from torch_mlir_lens.lsp.front import full_server
    from torch_mlir_lens.lsp.server import serve_tcp

    return serve_tcp(full_server(early), host=args.host, port=args.port)


def _reuse_generated_code() -> None:
    """Compile attrs' and cattrs' generated code once across starts (lsp/code_cache.py).

    Saved when the server exits and, for a server that is killed, 30 s after start (by then
    the first lenses, hovers and diagnostics have made their converters)."""
    import atexit
    import threading

    from torch_mlir_lens.lsp.code_cache import GeneratedCodeCache, default_path

    cache = GeneratedCodeCache(default_path())
    cache.install()
    atexit.register(cache.save)
    timer = threading.Timer(SAVE_AFTER_S, cache.save)
    timer.daemon = True
    timer.start()
