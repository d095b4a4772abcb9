"""Traced blocks kept on disk (worker/blocks/block_cache.py's second tier): a worker that never
traced a block finds it in the persistent cache's folder, lowers to the same IR with it, and
never uses an entry that no longer holds. The worker's own job entry point, in-process; a
"new worker" is this one with its memory tier emptied."""

from __future__ import annotations

import base64
import json
import shutil
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from torch_mlir_lens.protocol.jobs import LowerJob, StatsJob, VerifyJob
from torch_mlir_lens.protocol.results import LowerResult
from torch_mlir_lens.system import cache_key, disk_cache
from torch_mlir_lens.worker import job_handlers
from torch_mlir_lens.worker.blocks import block_cache
from torch_mlir_lens.worker.lowering import programs

MODELS = Path(__file__).resolve().parent / "models" / "repeated_blocks.py"
PARENT_EDIT = ("return self.head(x) * 2.0  # parent: head",
               "return self.head(x) * 3.0  # parent: head")
BLOCK_EDIT = ("return x + self.down(h)  # block: down", "return x - self.down(h)  # block: down")

HELPER = "import torch\n\n\ndef act(x):\n    return torch.tanh(x)  # helper: act\n"
HELPED = '''import torch
from torch import nn

from helpers import act


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.up = nn.Linear(8, 16)
        self.down = nn.Linear(16, 8)

    def forward(self, x):
        return x + self.down(act(self.up(self.norm(x))))  # block: act


# torch-mlir-lens: inputs=(torch.randn(2, 8),)
class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(3)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x * 2.0  # parent: out
'''


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    """An empty persistent cache folder; the worker's memory tier empty before and after."""
    _new_worker()
    yield tmp_path / "cache"
    _new_worker()
    block_cache.use_folder(None)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    """A copy of the repeated-blocks models (its blocks are keyed by this file's path)."""
    folder = tmp_path / "project"
    folder.mkdir()
    return Path(shutil.copy(MODELS, folder / "repeated_blocks.py"))


def _lower(path: Path, text: str, targets: list[str], cache: Path | None,
           module: str = "Stack") -> dict[str, LowerResult]:
    job = LowerJob(path=str(path), module=module, targets=targets, text=text,
                   block_cache=str(cache) if cache is not None else None,
                   workspace=str(path.parent))
    reply = job_handlers.run_job({**job.to_json(), "id": 1})
    assert reply["ok"], reply
    return {r.target: r for r in (LowerResult.from_json(x) for x in reply["result"]["results"])}


def _source(result: LowerResult) -> str:
    blocks = result.stats["blocks"]
    assert len(blocks) == 1, blocks
    return str(blocks[0]["source"])


def _ops(ir: str) -> str:
    """The IR without its resources (the weights' bytes)."""
    return ir.split("\n{-#")[0]


def _mapped(result: LowerResult) -> list[tuple[str, int]]:
    """(file, line) of each IR line's source."""
    return [(m.file, m.line) for m in result.map]


def _counters() -> dict[str, Any]:
    return job_handlers.run_job({**StatsJob().to_json(), "id": 3})["result"]


def _new_worker() -> None:
    """What a restarted server's worker has: nothing in memory."""
    block_cache.clear()
    programs.forget_programs()


def test_a_block_traced_by_one_worker_is_read_from_disk_by_the_next(
        store: Path, model: Path) -> None:
    text = model.read_text()
    first = _lower(model, text, ["linalg"], store)["linalg"]
    assert first.ok and _source(first) == "traced"
    assert list((store / block_cache.DISK_SUBFOLDER).rglob("*.json.z")), "nothing written"
    edited = text.replace(*PARENT_EDIT)
    _new_worker()
    hits = _counters()["block_disk_hits"]
    stored = _lower(model, edited, ["linalg", "fx"], store)
    assert _source(stored["linalg"]) == "stored"
    assert _counters()["block_disk_hits"] == hits + 1
    # The IR equals that of a worker tracing the block itself (but for the weights' values:
    # each lowering builds the model, with its random initial weights).
    _new_worker()
    fresh = _lower(model, edited, ["linalg"], None)["linalg"]
    assert _source(fresh) == "traced"
    assert _ops(stored["linalg"].ir) == _ops(fresh.ir)
    assert "call @Block(" in _ops(fresh.ir)
    # The fx view needs the block's program: traced again on demand, from this lowering.
    assert stored["fx"].ok and "block" in stored["fx"].ir.lower(), stored["fx"].ir[:400]


def test_a_stored_block_verifies_against_eager(store: Path, model: Path) -> None:
    text = model.read_text()
    _lower(model, text, ["linalg"], store)
    _new_worker()
    job = VerifyJob(path=str(model), module="Stack", text=text.replace(*PARENT_EDIT),
                    block_cache=str(store), workspace=str(model.parent))
    reply = job_handlers.run_job({**job.to_json(), "id": 2})
    assert reply["ok"] and reply["result"]["ok"], reply


def test_an_edit_to_the_block_is_traced_again(store: Path, model: Path) -> None:
    text = model.read_text()
    _lower(model, text, ["linalg"], store)
    _new_worker()
    changed = _lower(model, text.replace(*BLOCK_EDIT), ["linalg"], store)["linalg"]
    assert _source(changed) == "traced"
    assert "arith.subf" in changed.ir or "linalg.sub" in changed.ir, changed.ir[-1500:]


def test_a_changed_helper_file_is_traced_again(store: Path, tmp_path: Path) -> None:
    """The block's ops have lines in another user file: the entry holds while that file is
    unchanged. An edit there that keeps the ops (the digest) but moves their lines must not
    bring back the old lines."""
    folder = tmp_path / "helped"
    folder.mkdir()
    helper = folder / "helpers.py"
    helper.write_text(HELPER)
    path = folder / "model.py"
    path.write_text(HELPED)
    assert _source(_lower(path, HELPED, ["linalg"], store)["linalg"]) == "traced"
    _new_worker()
    assert _source(_lower(path, HELPED, ["linalg"], store)["linalg"]) == "stored"
    # The same worker (its memory tier), then a new one (the disk tier).
    for moved, new_worker in ((2, False), (3, True)):
        helper.write_text("# moved down\n" * moved + HELPER)
        if new_worker:
            _new_worker()
        again = _lower(path, HELPED, ["linalg"], store)["linalg"]
        assert _source(again) == "traced"
        act_line = 5 + moved  # `return torch.tanh(x)` in the edited helpers.py
        assert any(Path(f).name == "helpers.py" and line == act_line
                   for f, line in _mapped(again)), sorted(set(_mapped(again)))


@pytest.mark.parametrize("damage", ["bytes", "bytecode"])
def test_a_damaged_entry_is_traced_again(store: Path, model: Path, damage: str) -> None:
    """An entry that is not one (any bytes), or one whose function is not MLIR bytecode: the
    block is traced again, as if nothing were stored."""
    text = model.read_text()
    _lower(model, text, ["linalg"], store)
    entries = list((store / block_cache.DISK_SUBFOLDER).rglob("*.json.z"))
    assert entries
    for entry in entries:
        if damage == "bytes":
            entry.write_bytes(b"\x00 not an entry")
            continue
        # Ours (tagged with this user's key, as the worker wrote it), but not bytecode.
        secret = cache_key.cache_secret()
        assert secret is not None
        blob = entry.read_bytes()[len(disk_cache._MAGIC):]
        name = entry.name.removesuffix(".json.z")
        payload = cache_key.unseal(secret, "blocks", name, blob)
        assert payload is not None
        data = json.loads(zlib.decompress(payload))
        data["reply"]["raw"] = base64.b64encode(b"ML\xefR not bytecode").decode()
        entry.write_bytes(disk_cache._MAGIC + cache_key.seal(
            secret, "blocks", name, zlib.compress(json.dumps(data).encode())))
    _new_worker()
    again = _lower(model, text.replace(*PARENT_EDIT), ["linalg"], store)["linalg"]
    assert again.ok and _source(again) == "traced", again.stats
    assert "call @Block(" in again.ir


def test_without_a_folder_nothing_is_written(store: Path, model: Path) -> None:
    _lower(model, model.read_text(), ["linalg"], None)
    assert not store.exists()
