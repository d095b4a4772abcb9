"""`torch-mlir-lens serve`: run the language server (LSP over stdio, or TCP)."""

from __future__ import annotations

import argparse
import gc
import sys
from typing import Any


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the `serve` subcommand."""
    serve: argparse.ArgumentParser = sub.add_parser(
        "serve", help="run the language server (LSP over stdio)")
    serve.add_argument("--tcp", action="store_true", help="listen on TCP instead of stdio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=2087)
    return serve


def run(args: argparse.Namespace) -> int:
    """Start the worker early, then serve until the client leaves."""
    # First thing: the worker's torch imports take seconds and overlap ours (pygls,
    # lsprotocol). It runs no user code until a job arrives, so trust is not involved yet;
    # the server stops it at once if the client says the workspace is untrusted.
    from torch_mlir_lens.engine import Engine, EngineConfig

    engine = Engine(EngineConfig(python=sys.executable))
    engine.prespawn()
    # lsprotocol builds hundreds of classes as it is imported: collecting garbage meanwhile
    # only costs start-up time (~15 %), and what it builds lives as long as the server.
    gc.disable()
    try:
        from torch_mlir_lens.lsp.server import run_server
    finally:
        gc.freeze()
        gc.enable()
    return run_server(tcp=args.tcp, host=args.host, port=args.port, prespawned=engine)
