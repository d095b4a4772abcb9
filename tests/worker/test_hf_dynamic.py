"""`transformers` text models with dynamic batch and sequence (tests/models/hf_zoo_dynamic.py),
through one warm engine: Verify at several sizes, and the export errors a user meets on the
way (a bound torch.export asks for, a failure inside the library).

A fast subset (a RoPE decoder, BERT's bound, GPT-2's library error); benchmark figure 11
verifies all thirteen against their static twins.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from torch_mlir_lens.engine import Engine, EngineConfig, ModuleJob
from torch_mlir_lens.protocol.results import ErrorKind

pytestmark = pytest.mark.asyncio(loop_scope="module")

ZOO = Path(__file__).resolve().parents[1] / "models" / "hf_zoo_dynamic.py"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def engine() -> AsyncIterator[Engine]:
    eng = Engine(EngineConfig(python=sys.executable, timeout_s=240, memory_limit_mb=4000))
    await eng.start()
    try:
        yield eng
    finally:
        await eng.stop()


def _line_of(text: str, needle: str, after: str) -> int:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if after in line)
    return next(i for i, line in enumerate(lines[start:], start + 1) if needle in line)


async def test_llama_verifies_at_three_sizes(engine: Engine) -> None:
    """RoPE, grouped-query attention and every projection an `nn.Linear` on [batch, seq, d]:
    the views llvm/torch-mlir#4743 miscompiles, run right at three sizes."""
    result = await engine.verify(ModuleJob(path=str(ZOO), module="DynamicLlama"))
    assert result.ok, result.message
    assert len(result.sizes) == 3 and all(c.ok for c in result.sizes)
    assert result.sizes[0].example
    assert [[(d.name, d.size) for d in c.dims] for c in result.sizes] == [
        [("batch", 2), ("seq", 8)], [("batch", 3), ("seq", 2)], [("batch", 5), ("seq", 7)]]
    assert [c.outputs[0].shape for c in result.sizes] == [[2, 8, 32], [3, 2, 32], [5, 7, 32]]
    assert result.message.startswith("✓ matches eager at 3 sizes")


async def test_bert_without_its_bound_says_which_one_at_the_comment(engine: Engine) -> None:
    text = ZOO.read_text().replace('1: "seq<=64"}}\nclass DynamicBert', '1: "seq"}}\nclass '
                                                                        'DynamicBert')
    assert text != ZOO.read_text()
    (result,) = await engine.lower(ModuleJob(path=str(ZOO), module="DynamicBert", text=text),
                                   targets=["linalg"])
    (diag,) = result.diagnostics
    assert diag.kind == ErrorKind.EXPORT_ERROR
    assert "Constraints violated (seq)" in diag.message
    assert "Suggested fixes:\n  seq = Dim('seq', max=64)" in diag.message
    assert 'In the dynamic= comment: "seq" → "seq<=64"' in diag.message
    # At the comment line that declares the dims, right above the class.
    assert (diag.file, diag.line) == (str(ZOO), _line_of(text, "class DynamicBert", "") - 1)


async def test_gpt2s_export_error_is_located_in_the_library_and_at_the_users_line(
        engine: Engine) -> None:
    (result,) = await engine.lower(ModuleJob(path=str(ZOO), module="DynamicGPT2"),
                                   targets=["linalg"])
    (diag,) = result.diagnostics
    assert diag.kind == ErrorKind.EXPORT_ERROR and "Cannot view a tensor" in diag.message
    zoo = ZOO.parent / "hf_zoo.py"
    assert (diag.file, diag.line) == (str(zoo), _line_of(zoo.read_text(),
                                                         "self.lm(input_ids=ids)",
                                                         "class TinyGPT2"))
    assert diag.related and diag.related[0].message == "raised here"
    raised = Path(diag.related[0].file)
    assert raised.parts[-2:] == ("transformers", "pytorch_utils.py")
    assert f"(in transformers/pytorch_utils.py:{diag.related[0].line})" in diag.message
    assert all(r.message == "called from here" for r in diag.related[1:])
    assert any(Path(r.file).name == "modeling_gpt2.py" for r in diag.related[1:])
