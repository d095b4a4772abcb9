"""The persistent cache through real engines and a real worker: a second engine (another
process, days later) answers without a worker while nothing changed, and never serves a stale
answer when a line, a sibling file, a setting or a library version changed."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from torch_mlir_lens.engine import Engine, EngineConfig, ModuleJob

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODEL = """\
import torch
import torch.nn as nn

import fakelib
from layers import FACTOR


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Scaled(nn.Module):
    def forward(self, x):
        return x * FACTOR + fakelib.SHIFT
"""


OTHER = """\
import torch
import torch.nn as nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Other(nn.Module):
    def forward(self, x):
        return x - 1.0
"""

LAZY = """\
import torch
import torch.nn as nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Lazy(nn.Module):
    def forward(self, x):
        from lazy_helper import K  # imported only while tracing
        return x * K
"""


def write_library(site: Path, version: str) -> None:
    """An installed distribution `fakelib` of `version` (its code is the same)."""
    (site / "fakelib").mkdir(parents=True, exist_ok=True)
    (site / "fakelib" / "__init__.py").write_text("SHIFT = 0.5\n")
    for old in site.glob("fakelib-*.dist-info"):
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    info = site / f"fakelib-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fakelib\nVersion: {version}\n")
    (info / "top_level.txt").write_text("fakelib\n")


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("persistent")
    site = root / "site-packages"  # a folder of installed code, as far as anyone can tell
    write_library(site, "1.0")
    project = root / "project"
    project.mkdir()
    (project / "model.py").write_text(MODEL)
    (project / "layers.py").write_text("FACTOR = 2.0\n")
    (project / "other.py").write_text(OTHER)
    (project / "lazy.py").write_text(LAZY)
    (project / "lazy_helper.py").write_text("K = 4.0\n")
    return {"site": site, "project": project, "cache": root / "cache"}


@pytest.fixture(scope="module")
def config(folders: dict[str, Path]) -> EngineConfig:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(folders["site"]), os.environ.get("PYTHONPATH", "")]))
    # This process checks library versions too: it must see the same distributions.
    sys.path.insert(0, str(folders["site"]))
    return EngineConfig(python=sys.executable, timeout_s=60, memory_limit_mb=2000, env=env,
                        cache_dir=str(folders["cache"]))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def warm(config: EngineConfig) -> AsyncIterator[Engine]:
    """The engine that computes: started once, its memory cache emptied between steps."""
    engine = Engine(config)
    await engine.start()
    yield engine
    await engine.stop()


def job(folders: dict[str, Path], text: str | None = None, *, file: str = "model.py",
        module: str = "Scaled", **fields: object) -> ModuleJob:
    path = folders["project"] / file
    return ModuleJob(path=str(path), module=module, text=text or path.read_text(),
                     **fields)  # type: ignore[arg-type]


async def lowered(engine: Engine, the_job: ModuleJob) -> str:
    (result,) = await engine.lower(the_job, targets=["torch"])
    assert result.ok, result.diagnostics
    return result.ir


async def fresh_answer(config: EngineConfig, the_job: ModuleJob) -> str:
    """What another process would answer from the cache alone: never started, no worker."""
    other = Engine(config)
    try:
        ir = await lowered(other, the_job)
        assert other.worker_pid is None, "answered by a worker, not by the cache"
        stats = other.persistent_stats
        assert stats is not None and stats.hits == 1
        return ir
    finally:
        await other.stop()


async def recomputed(warm: Engine, the_job: ModuleJob) -> tuple[str, int]:
    """The warm engine's answer with its memory cache emptied, and how many stale entries its
    persistent cache met meanwhile."""
    warm.forget_results()
    stats = warm.persistent_stats
    assert stats is not None
    stale, hits = stats.stale, stats.hits
    ir = await lowered(warm, the_job)
    assert stats.hits == hits, "a changed input was answered from the cache"
    await warm.flush()
    return ir, stats.stale - stale


async def test_another_process_answers_from_the_cache(warm: Engine, config: EngineConfig,
                                                      folders: dict[str, Path]) -> None:
    first = await lowered(warm, job(folders))
    assert "2.000000e+00" in first and "5.000000e-01" in first
    await warm.flush()
    assert await fresh_answer(config, job(folders)) == first


async def test_a_changed_line_is_recomputed(warm: Engine, folders: dict[str, Path]) -> None:
    text = (folders["project"] / "model.py").read_text().replace("x * FACTOR", "x * FACTOR * x")
    ir, _ = await recomputed(warm, job(folders, text))
    assert "torch.aten.mul.Tensor" in ir and ir.count("torch.aten.mul") >= 2


async def test_a_changed_sibling_file_is_recomputed(warm: Engine, config: EngineConfig,
                                                    folders: dict[str, Path]) -> None:
    layers = folders["project"] / "layers.py"
    layers.write_text("FACTOR = 3.0\n")
    try:
        ir, stale = await recomputed(warm, job(folders))
        assert stale == 1 and "3.000000e+00" in ir
        assert await fresh_answer(config, job(folders)) == ir  # the new answer is kept
    finally:
        layers.write_text("FACTOR = 2.0\n")


async def test_a_changed_setting_is_recomputed(warm: Engine, folders: dict[str, Path]) -> None:
    changed = job(folders, settings_inputs={"Scaled": "(torch.randn(3, 4),)"},
                  text=(folders["project"] / "model.py").read_text().replace(
                      "# torch-mlir-lens: inputs=(torch.randn(2, 4),)\n", ""))
    ir, _ = await recomputed(warm, changed)
    assert "[3,4]" in ir


async def test_a_changed_library_version_is_recomputed(warm: Engine, config: EngineConfig,
                                                       folders: dict[str, Path]) -> None:
    ir, _ = await recomputed(warm, job(folders))  # stored anew, for FACTOR = 2.0 again
    assert await fresh_answer(config, job(folders)) == ir
    write_library(folders["site"], "2.0")
    try:
        _, stale = await recomputed(warm, job(folders))
        assert stale == 1
    finally:
        write_library(folders["site"], "1.0")


async def test_another_file_lowered_by_the_same_worker_is_not_a_dependency(
        warm: Engine, config: EngineConfig, folders: dict[str, Path]) -> None:
    """What a module depends on is what it imports, not everything the warm worker loaded:
    editing a file lowered before (by the same worker) keeps this module's answer."""
    other = folders["project"] / "other.py"
    await lowered(warm, job(folders, file="other.py", module="Other"))
    ir, _ = await recomputed(warm, job(folders))  # stored after Other, by the same worker
    other.write_text(OTHER.replace("x - 1.0", "x - 2.0"))
    try:
        assert await fresh_answer(config, job(folders)) == ir
    finally:
        other.write_text(OTHER)


async def test_a_file_imported_only_while_tracing_is_a_dependency(
        warm: Engine, folders: dict[str, Path]) -> None:
    helper = folders["project"] / "lazy_helper.py"
    lazy = job(folders, file="lazy.py", module="Lazy")
    first, _ = await recomputed(warm, lazy)
    assert "4.000000e+00" in first
    helper.write_text("K = 5.0\n")
    try:
        again, stale = await recomputed(warm, lazy)
        assert stale == 1 and "5.000000e+00" in again
    finally:
        helper.write_text("K = 4.0\n")


BLOCKS = Path(__file__).resolve().parents[1] / "worker" / "models" / "repeated_blocks.py"


async def test_a_restarted_worker_reads_traced_blocks_from_the_cache_folder(
        tmp_path: Path) -> None:
    """The engine tells its worker the cache folder; another worker process (a restarted
    server, another engine of `check`) finds the block there after an edit to the parent."""
    model = tmp_path / "stack.py"
    model.write_text(BLOCKS.read_text())
    config = EngineConfig(python=sys.executable, timeout_s=120, memory_limit_mb=3000,
                          cache_dir=str(tmp_path / "cache"))
    text = model.read_text()
    sources = []
    for step, edit in enumerate(("* 2.0  # parent: head", "* 3.0  # parent: head")):
        engine = Engine(config)
        try:
            the_job = ModuleJob(path=str(model), module="Stack",
                                text=text.replace("* 2.0  # parent: head", edit))
            (result,) = await engine.lower(the_job, targets=["linalg"])
            assert result.ok, result.diagnostics
            sources.append([b["source"] for b in result.stats["blocks"]])
            counters = (await engine.stats()).worker
            assert (counters.block_traces, counters.block_disk_hits) == (
                (1, 0) if step == 0 else (0, 1)), counters
        finally:
            await engine.stop()
    assert sources == [["traced"], ["stored"]]
