"""Reopening a workspace: a second server process with the same persistent cache answers the
first hover, the lenses' verdicts and the diagnostics from the cache, confirmed, not lowered
again: its worker exports nothing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from tests.harness.lsp_session import child_env, hover_text, server_command

from .helpers import (
    code_lenses,
    copy_workspace,
    diagnostics,
    hover,
    init_params,
    line_of,
    make_client,
    open_doc,
    server_info,
    settled,
    wait_until,
)

pytestmark = pytest.mark.asyncio(loop_scope="function")


async def session(workspace: Path, cache: Path) -> dict[str, Any]:
    """One editor session: open the model with unsupported ops, hover, lenses, diagnostics."""
    client = make_client()
    await client.start_io(*server_command(), env=child_env(
        {"TORCH_MLIR_LENS_CACHE_DIR": str(cache)}), cwd=str(workspace))
    try:
        await client.initialize_session(init_params(workspace))
        path = workspace / "unsupported_ops.py"
        uri = open_doc(client, path)
        shown = hover_text(await hover(client, uri, line_of(path, "torch.erfinv(")))

        async def every_verdict() -> list[str] | None:
            """The verdict lenses, once every module has one naming all three backends."""
            titles = [lens.command.title for lens in await code_lenses(client, uri)
                      if lens.command]
            verdicts = [t for t in titles if "Linalg" in t and "StableHLO" in t and "·" in t]
            modules = titles.count("Show Linalg IR")
            return verdicts if modules and len(verdicts) == modules else None

        verdicts = await wait_until(client, every_verdict, timeout=240)
        await settled(client)
        info = await server_info(client)
        return {"hover": shown, "diagnostics": sorted(
            (d.range.start.line, d.message) for d in diagnostics(client, uri)),
            "verdicts": verdicts, "engine": info["engine"]}
    finally:
        await client.shutdown_session()


def ir_of(hover: str) -> str:
    """The MLIR block of a hover."""
    return hover.partition("```mlir")[2].partition("```")[0].strip()


async def test_a_reopened_workspace_answers_from_the_persistent_cache(tmp_path: Path) -> None:
    workspace = copy_workspace(tmp_path / "ws")
    cache = tmp_path / "cache"
    first = await session(workspace, cache)
    assert first["engine"]["exportsRun"] >= 1 and first["engine"]["persistentWrites"] >= 2
    assert "linalg" in first["hover"]
    second = await session(workspace, cache)
    # The same answers (the hover's IR; its verdict line may be complete sooner now)...
    assert ir_of(second["hover"]) == ir_of(first["hover"]) != ""
    assert second["diagnostics"] == first["diagnostics"] and second["diagnostics"]
    assert second["verdicts"] == first["verdicts"]
    # ...and nothing lowered again: every check was a confirmed entry of the cache.
    engine = second["engine"]
    assert engine["exportsRun"] == 0 and engine["jobsRun"] == 0, engine
    assert engine["persistentHits"] >= 2 and engine["persistentStale"] == 0
    assert os.listdir(cache)
