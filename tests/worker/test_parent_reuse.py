"""The parent's export kept across an edit to a block's forward (worker/blocks/parent_cache.py):
reused only when nothing the parent's export sees changed, and then the IR is the one a fresh
export gives. The worker's own job entry point, in-process, on models built without weights."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from torch_mlir_lens.protocol.jobs import LowerJob
from torch_mlir_lens.protocol.results import LowerResult
from torch_mlir_lens.worker import job_handlers
from torch_mlir_lens.worker.blocks import block_cache, parent_cache
from torch_mlir_lens.worker.lowering import programs

MODELS = Path(__file__).resolve().parent / "models" / "repeated_blocks.py"
DOWN = "return x + self.down(h)  # block: down"
SAME_LINES = "return x - self.down(h)  # block: down"  # another op, no line moved
MORE_LINES = "y = self.down(h)\n        return x - y  # block: down"
OTHER_TYPE = "return (x + self.down(h)).double()  # block: down"


def _forget() -> None:
    block_cache.clear()
    parent_cache.clear()
    programs.forget_programs()


@pytest.fixture
def model(tmp_path: Path) -> Iterator[Path]:
    """A copy of the models (their exports keyed by this path), nothing kept before or after."""
    _forget()
    yield Path(shutil.copy(MODELS, tmp_path / "repeated_blocks.py"))
    _forget()


def _lower(path: Path, text: str, module: str = "Stack", construct: str = "meta",
           targets: tuple[str, ...] = ("linalg",)) -> LowerResult:
    job = LowerJob(path=str(path), module=module, text=text, targets=list(targets),
                   construct=construct)
    reply = job_handlers.run_job({**job.to_json(), "id": 1})
    assert reply["ok"], reply
    result = LowerResult.from_json(reply["result"]["results"][0])
    assert result.ok, result.diagnostics
    return result


def _fresh(path: Path, text: str, **kw: str) -> LowerResult:
    """What a worker that kept nothing gives."""
    _forget()
    return _lower(path, text, **kw)


def test_an_edit_to_a_block_forward_reuses_the_parent_export(model: Path) -> None:
    text = model.read_text()
    assert _lower(model, text).stats["blocks_parent"] == "exported"
    edited = text.replace(DOWN, SAME_LINES)
    reused = _lower(model, edited)
    assert reused.stats["blocks_parent"] == "reused"
    assert reused.stats["blocks"][0]["source"] == "traced"
    assert "arith.subf" in reused.ir
    fresh = _fresh(model, edited)
    assert fresh.stats["blocks_parent"] == "exported"
    assert reused.ir == fresh.ir
    assert [(m.ir_line, m.file, m.line, m.depth) for m in reused.map] == [
        (m.ir_line, m.file, m.line, m.depth) for m in fresh.map]


@pytest.mark.parametrize("change", [MORE_LINES, OTHER_TYPE], ids=["lines moved", "result type"])
def test_an_edit_the_parent_can_see_exports_it_again(model: Path, change: str) -> None:
    text = model.read_text()
    _lower(model, text)
    edited = text.replace(DOWN, change)
    again = _lower(model, edited)
    assert again.stats["blocks_parent"] == "exported"
    assert again.ir == _fresh(model, edited).ir


def test_a_block_forward_run_by_the_parent_keeps_nothing(model: Path) -> None:
    """`StackWithExtra` calls one more Block outside the list: its forward is part of the
    parent's export, so an edit to it must export the parent again."""
    text = model.read_text()
    _lower(model, text, module="StackWithExtra")
    edited = text.replace(DOWN, SAME_LINES)
    again = _lower(model, edited, module="StackWithExtra")
    assert again.stats["blocks_parent"] == "exported"
    assert again.ir.count("arith.subf") == _fresh(model, edited, module="StackWithExtra"
                                                  ).ir.count("arith.subf")


def test_a_model_with_its_weights_is_exported_each_time(model: Path) -> None:
    text = model.read_text()
    _lower(model, text, construct="real")
    again = _lower(model, text.replace(DOWN, SAME_LINES), construct="real")
    assert again.stats["blocks_parent"] == "exported"


def test_a_stitched_program_kept_by_reuse_verifies(model: Path) -> None:
    """After a reuse, the next job on the same text (Verify, with real weights) builds its
    own program: it verifies against eager."""
    from torch_mlir_lens.protocol.jobs import VerifyJob

    text = model.read_text()
    _lower(model, text)
    edited = text.replace(DOWN, SAME_LINES)
    assert _lower(model, edited).stats["blocks_parent"] == "reused"
    job = VerifyJob(path=str(model), module="Stack", text=edited)
    reply = job_handlers.run_job({**job.to_json(), "id": 2})
    assert reply["ok"] and reply["result"]["ok"], reply


FLAGGED = '''from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

SIGN = float(Path(__file__).with_name("sign.txt").read_text())  # not code: in no key


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.up = nn.Linear(8, 16)
        self.down = nn.Linear(16, 8)

    def forward(self, x):
        h = F.gelu(self.up(self.norm(x)))
        return x + self.down(h)  # block: down


# torch-mlir-lens: inputs=(torch.randn(2, 3, 8),)
class Flagged(nn.Module):
    def __init__(self):
        super().__init__()
        self.sign = SIGN
        self.blocks = nn.ModuleList([Block() for _ in range(3)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x * 3.0 if self.sign > 0 else x * 5.0
'''


def test_a_changed_module_state_exports_the_parent_again(tmp_path: Path) -> None:
    """The same code but for a block's forward, and a module attribute that differs (read
    from a data file, which no key covers): the kept parent export is not used."""
    _forget()
    (tmp_path / "sign.txt").write_text("1")
    path = tmp_path / "flagged.py"
    path.write_text(FLAGGED)
    first = _lower(path, FLAGGED, module="Flagged")
    assert "3.000000e+00" in first.ir and "5.000000e+00" not in first.ir
    same = FLAGGED.replace(DOWN, SAME_LINES)
    assert _lower(path, same, module="Flagged").stats["blocks_parent"] == "reused"
    (tmp_path / "sign.txt").write_text("-1")
    other = FLAGGED.replace(DOWN, "return x * self.down(h)  # block: down")  # no line moved
    again = _lower(path, other, module="Flagged")
    assert again.stats["blocks_parent"] == "exported"
    assert "5.000000e+00" in again.ir and "3.000000e+00" not in again.ir
    _forget()
