"""Repeated blocks traced once (worker/blocks/): real torch.export, real torch-mlir, the
worker's own job entry point in-process. Models: tests/worker/models/repeated_blocks.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from torch_mlir_lens.protocol.jobs import LowerJob, StatsJob, VerifyJob
from torch_mlir_lens.protocol.results import LowerResult
from torch_mlir_lens.worker import job_handlers

MODELS = Path(__file__).resolve().parent / "models" / "repeated_blocks.py"
SOURCE = MODELS.read_text()
LINES = SOURCE.splitlines()


def _line(marker: str, after: int = 0) -> int:
    """The 1-based line ending with `# <marker>` (the first after line `after`)."""
    for number, text in enumerate(LINES, start=1):
        if number > after and text.rstrip().endswith(f"# {marker}"):
            return number
    raise AssertionError(f"no line marked {marker!r}")


def _lower(module: str, targets: list[str], *, text: str | None = None,
           inline: bool = False) -> dict[str, LowerResult]:
    job = LowerJob(path=str(MODELS), module=module, targets=targets, text=text,
                   inline_blocks=inline)
    reply = job_handlers.run_job({**job.to_json(), "id": 1})
    assert reply["ok"], reply
    results = [LowerResult.from_json(r) for r in reply["result"]["results"]]
    return {r.target: r for r in results}


def _verify(module: str, *, inline: bool = False) -> dict[str, Any]:
    job = VerifyJob(path=str(MODELS), module=module, inline_blocks=inline)
    reply = job_handlers.run_job({**job.to_json(), "id": 2})
    assert reply["ok"], reply
    return reply["result"]


def _functions(ir: str) -> dict[str, int]:
    """Private function name → the calls of it in the IR."""
    names = re.findall(r"func\.func private @(\w+)\(", ir)
    return {name: len(re.findall(rf"call @{name}\(", ir)) for name in names}


@pytest.fixture(scope="module")
def stack() -> dict[str, LowerResult]:
    return _lower("Stack", ["torch", "linalg", "tosa", "stablehlo"])


def test_one_function_for_the_repeated_block(stack: dict[str, LowerResult]) -> None:
    for target in ("torch", "linalg", "tosa"):
        result = stack[target]
        assert result.ok, result.diagnostics
        assert _functions(result.ir) == {"Block": 4}, f"{target}:\n{result.ir[:2000]}"
    assert stack["stablehlo"].ok  # StableHLO's pipeline runs on the calls inlined
    blocks = stack["linalg"].stats["blocks"]
    assert [(b["function"], b["calls"]) for b in blocks] == [("Block", 4)]
    inline = _lower("Stack", ["linalg"], inline=True)["linalg"]
    assert inline.ok and _functions(inline.ir) == {}
    assert inline.stats.get("blocks_note") == "inline: asked for"


def test_stitched_and_inline_verify_alike() -> None:
    stitched, inline = _verify("Stack"), _verify("Stack", inline=True)
    assert stitched["ok"] and inline["ok"], (stitched["message"], inline["message"])
    assert stitched["max_abs_err"] <= 1e-5 and inline["max_abs_err"] <= 1e-5


def test_block_ops_map_to_the_block_and_calls_to_the_parent(
        stack: dict[str, LowerResult]) -> None:
    result = stack["linalg"]
    ir = result.ir.splitlines()
    start = next(i for i, text in enumerate(ir, start=1) if "func.func private @Block" in text)
    block_lines = {m.line for m in result.map if m.ir_line > start}
    assert {_line("block: up"), _line("block: down")} <= block_lines
    assert _line("parent: call") not in block_lines  # traced alone: no caller frame
    calls = [i for i, text in enumerate(ir, start=1) if "call @Block(" in text]
    assert len(calls) == 4
    for number in calls:
        assert {m.line for m in result.map if m.ir_line == number} == {_line("parent: call")}


def test_survey_runs_few_blocks_of_a_deep_stack() -> None:
    result = _lower("DeepStack", ["linalg"])["linalg"]
    assert result.ok
    assert _functions(result.ir) == {"Block": 12}
    survey = result.stats["blocks_survey"]
    assert survey["calls"] == 12 and survey["recorded"] <= 3  # first, second, last
    assert survey["chained"] == 12  # the parent's export saw one op for the 12 blocks


def test_a_parent_reading_each_result_gets_one_op_per_block() -> None:
    result = _lower("Collecting", ["linalg"])["linalg"]
    assert result.ok, result.diagnostics
    assert _functions(result.ir) == {"Block": 4}
    assert result.stats["blocks_survey"]["chained"] == 0
    assert _verify("Collecting")["ok"]


def test_state_the_keys_do_not_see_leaves_the_blocks_inline() -> None:
    result = _lower("Drifting", ["linalg"])["linalg"]
    assert result.ok, result.diagnostics
    assert _functions(result.ir) == {}
    assert result.stats["blocks_survey"]["recorded"] == 3  # a sample disproved the key


def test_a_layer_index_that_picks_the_mask_splits_the_blocks() -> None:
    result = _lower("Alternating", ["linalg"])["linalg"]
    assert result.ok, result.diagnostics
    assert _functions(result.ir) == {"WindowedBlock": 2, "WindowedBlock_1": 2}
    assert _verify("Alternating")["ok"]


def test_two_block_classes_are_two_functions() -> None:
    result = _lower("TwoKinds", ["linalg"])["linalg"]
    assert result.ok, result.diagnostics
    # Layers 0 and 2 read the same mask choice (even index): one function.
    assert _functions(result.ir) == {"WindowedBlock": 2, "MlpBlock": 2}


def test_a_block_writing_its_input_stays_inline() -> None:
    result = _lower("InPlace", ["linalg"])["linalg"]
    assert result.ok, result.diagnostics
    assert _functions(result.ir) == {}
    assert result.stats["blocks_inline"] == 3
    assert all("in place" in why for why in result.stats["blocks_inline_why"])


def test_a_rejected_op_in_a_block_is_one_culprit_at_the_block_line() -> None:
    result = _lower("Upsampling", ["tosa"])["tosa"]
    assert not result.ok
    assert _functions(result.ir) == {"UpsampleBlock": 3}
    lines = [d.line for d in result.diagnostics if d.target == "tosa"]
    assert lines == [_line("block: culprit")], [(d.line, d.message) for d in result.diagnostics]


def _counters() -> dict[str, int]:
    reply = job_handlers.run_job({**StatsJob().to_json(), "id": 3})
    return {k: v for k, v in reply["result"].items() if k.startswith("block_")}


def test_an_edit_to_the_parent_reuses_the_traced_block() -> None:
    head = _line("parent: head")
    first = SOURCE.replace("# parent: head", "# parent: head (first)")
    edited = SOURCE.replace("return self.head(x) * 2.0  # parent: head",
                            "return self.head(x) * 3.0  # parent: head")
    assert edited.splitlines()[head - 1] != LINES[head - 1]
    before = _lower("Stack", ["linalg"], text=first)["linalg"].stats["blocks"][0]["source"]
    counts = _counters()
    after = _lower("Stack", ["linalg"], text=edited)["linalg"]
    assert after.ok and after.stats["blocks"][0]["source"] == "cached", before
    assert _counters()["block_cache_hits"] == counts["block_cache_hits"] + 1
    assert "3.0" in _lower("Stack", ["torch"], text=edited)["torch"].ir
    # An edit to the block traces it again.
    changed = edited.replace("return x + self.down(h)  # block: down",
                             "return x - self.down(h)  # block: down")
    again = _lower("Stack", ["linalg"], text=changed)["linalg"]
    assert again.stats["blocks"][0]["source"] == "traced"


def test_a_block_caching_a_tensor_lowers_and_verifies() -> None:
    # The survey and the block's trace run the forward on fake tensors: the cached bias must
    # not stay in the model for the parent's export to find (LeViT failed so).
    result = _lower("Caching", ["linalg", "tosa"])
    for target in ("linalg", "tosa"):
        assert result[target].ok, result[target].diagnostics
    assert _functions(result["linalg"].ir) == {"CachingBlock": 3}
    assert _verify("Caching")["ok"]

