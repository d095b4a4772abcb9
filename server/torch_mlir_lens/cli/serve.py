"""`torch-mlir-lens serve`: run the language server (LSP over stdio, or TCP)."""

from __future__ import annotations

import argparse
import gc
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
    # First thing: the worker's torch imports take seconds and overlap ours (pygls,
    # lsprotocol). It runs no user code until a job arrives, so trust is not involved yet;
    # the server stops it at once if the client says the workspace is untrusted.
    from torch_mlir_lens.engine import Engine, EngineConfig

    engine = Engine(EngineConfig(python=sys.executable))
    engine.prespawn()
    _reuse_generated_code()
    # lsprotocol builds hundreds of classes as it is imported: collecting garbage meanwhile
    # only costs start-up time (~15 %), and what it builds lives as long as the server.
    gc.disable()
    try:
        from torch_mlir_lens.lsp.server import run_server
    finally:
        gc.freeze()
        gc.enable()
    return run_server(tcp=args.tcp, host=args.host, port=args.port, prespawned=engine)


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
