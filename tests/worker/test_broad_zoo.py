"""The broad real-model corpus (tests/models/broad_zoo.py), its fast subset.

Benchmark figure 13 runs every architecture; here: how tiny configs are made, and a handful of
architectures through the real worker, each standing for a class of failure the sweep found:

- `phimoe`: a mixture of experts (transformers' grouped matmul custom op, `aten.histc`) and one
  of the architectures whose worker used to die (a negative scatter dim in its router);
- `swin`: a buffer inside a tensor list, which torch-mlir could not import; it must lower
  everywhere and compute what eager PyTorch computes.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import pytest
import pytest_asyncio

from torch_mlir_lens.engine import Engine, EngineConfig, ModuleJob

ZOO = Path(__file__).resolve().parents[1] / "models" / "broad_zoo.py"
CRASH = ZOO.parent / "torch_mlir_crash.py"
BACKENDS = ["linalg", "tosa", "stablehlo"]
in_module_loop = pytest.mark.asyncio(loop_scope="module")


def _load_zoo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lens_broad_zoo", ZOO)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


broad_zoo = _load_zoo()


def job(model_type: str) -> ModuleJob:
    return ModuleJob(path=str(ZOO), module="ZooModel", init=f"({model_type!r},)",
                     inputs=f"zoo_inputs({model_type!r})")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def zoo_engine() -> AsyncIterator[Engine]:
    engine = Engine(EngineConfig(python=sys.executable, timeout_s=240, memory_limit_mb=4000))
    await engine.start()
    try:
        yield engine
    finally:
        await engine.stop()


def test_tiny_configs_keep_what_the_architecture_is_about() -> None:
    deepseek = {"num_hidden_layers": 61, "hidden_size": 7168, "num_attention_heads": 128,
                "num_key_value_heads": 128, "vocab_size": 129280, "bos_token_id": 0,
                "eos_token_id": 1, "image_token_id": 128815, "n_routed_experts": 256,
                "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "qk_head_dim": 192,
                "mlp_layer_types": ["dense"] * 3 + ["sparse"] * 58,
                "vision_config": {"model_type": "clip_vision_model", "hidden_size": 1024,
                                  "image_size": 336, "num_hidden_layers": 24}}
    tiny = broad_zoo.tiny_overrides(deepseek)
    assert tiny["num_hidden_layers"] == 2 and tiny["hidden_size"] == 32
    assert tiny["mlp_layer_types"] == ["dense", "sparse"]  # the MoE layer stays
    assert tiny["num_key_value_heads"] == tiny["num_attention_heads"]  # still multi-head
    assert tiny["qk_head_dim"] == tiny["qk_nope_head_dim"] + tiny["qk_rope_head_dim"]
    assert tiny["vocab_size"] == broad_zoo.VOCAB
    assert broad_zoo.TOKENS <= tiny["image_token_id"] < broad_zoo.VOCAB  # moved, not an input
    assert "bos_token_id" not in tiny  # already inside the vocabulary
    assert tiny["vision_config"] == {"model_type": "clip_vision_model", "hidden_size": 32,
                                     "image_size": 32, "num_hidden_layers": 2}
    swin = broad_zoo.tiny_overrides({"image_size": 224, "patch_size": 4, "window_size": 7,
                                     "depths": [2, 2, 6, 2], "embed_dim": 96})
    # Every stage a whole number of windows: 64 / 4 = 16, 8, 4, 2 patches for windows of 2.
    assert (swin["window_size"], swin["image_size"], swin["depths"]) == (2, 64, [1, 1, 1, 1])


def test_the_corpus_lists_every_base_model_and_the_diffusers_ones() -> None:
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    names = broad_zoo.architectures()
    assert set(MODEL_MAPPING_NAMES) <= set(names) and len(names) == len(set(names))
    assert names[-2:] == list(broad_zoo.DIFFUSERS)
    with pytest.raises(broad_zoo.NotBuilt, match="no base model"):
        broad_zoo.spec("not-an-architecture")


@in_module_loop
async def test_a_mixture_of_experts_names_only_aten_ops(zoo_engine: Engine) -> None:
    results = await zoo_engine.lower(job("phimoe"), targets=BACKENDS)
    for res in results:
        ops = {d.op for d in res.diagnostics if d.severity == "error"}
        messages = " ".join(d.message for d in res.diagnostics)
        assert "grouped_mm" not in messages and "crashed" not in messages, messages
        assert all(op and op.startswith("torch.aten.") for op in ops), ops
        if res.target != "tosa":  # TOSA also lacks sort and friends; the others only histc
            assert ops == {"torch.aten.histc"}, messages
        assert res.ir  # the rest lowered (or the Torch IR with the culprit outlined)
    assert zoo_engine.restarts == 0  # the worker that used to die on it


@in_module_loop
async def test_swin_lowers_everywhere_and_matches_eager(zoo_engine: Engine) -> None:
    results = await zoo_engine.lower(job("swin"), targets=BACKENDS)
    assert [(r.target, r.ok) for r in results] == [(b, True) for b in BACKENDS], \
        [d.message for r in results for d in r.diagnostics]
    verdict = await zoo_engine.verify(job("swin"))
    assert verdict.ok, verdict.message


@in_module_loop
async def test_a_pass_that_crashes_torch_mlir_becomes_a_culprit(zoo_engine: Engine) -> None:
    """Ordinary pipelines run in the worker (a fork each would cost as much as a small
    module's lowering): the crash ends that worker once, the job runs again on a worker that
    forks its passes, and the answer is the culprit at its line, not a crash."""
    restarts = zoo_engine.restarts
    linalg, tosa = await zoo_engine.lower(ModuleJob(path=str(CRASH), module="EmptyTail"),
                                          targets=["linalg", "tosa"])
    line = next(n for n, text in enumerate(CRASH.read_text().splitlines(), start=1)
                if "the view torch-mlir crashes on" in text)
    [diag] = linalg.diagnostics
    assert (diag.op, diag.line) == ("torch.aten.view", line), diag
    assert "crashed torch-mlir (SIGFPE) in `convert-torch-to-linalg`" in diag.message
    assert linalg.partial and "linalg.generic" in linalg.ir  # the relu lowered all the same
    assert tosa.diagnostics  # answered by the same job
    assert zoo_engine.restarts == restarts + 1
    # From now on the worker survives such a crash: another job, no restart.
    again = await zoo_engine.lower(ModuleJob(path=str(CRASH), module="EmptyTail",
                                             text=CRASH.read_text() + "\n# edited\n"),
                                   targets=["stablehlo", "linalg"])
    assert again[1].diagnostics[0].op == "torch.aten.view"
    assert zoo_engine.restarts == restarts + 1
