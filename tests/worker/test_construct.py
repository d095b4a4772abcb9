"""Modules built without their weights (fake tensors), the fallback to real construction, and
weights imported from tensor memory: real jobs through `run_job`, the real torch-mlir.

`construct: "meta"` makes the worker try construction without weights even for these small
modules (the default, "auto", does it only above `construct.META_OVER_BYTES`).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

from torch_mlir_lens.worker.ir.literals import ELIDED_KEY, mark_elided
from torch_mlir_lens.worker.job_handlers import run_job
from torch_mlir_lens.worker.loading import construct

USER_FILE = textwrap.dedent(
    """\
    import torch
    import torch.nn.functional as F
    from torch import nn


    class Block(nn.Module):
        def __init__(self, d: int = 24):
            super().__init__()
            self.norm = nn.LayerNorm(d)
            self.fc = nn.Linear(d, d)

        def forward(self, x, scale):
            return x + self.fc(self.norm(x)) * scale


    # torch-mlir-lens: inputs=(torch.randint(0, 50, (2, 5)),)
    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(50, 24)
            self.blocks = nn.ModuleList([Block(24), Block(24)])
            self.head = nn.Linear(24, 8).to(torch.bfloat16)
            self.register_buffer("offset", torch.arange(24, dtype=torch.int64))
            self.table = torch.linspace(0.0, 1.0, 24)  # a plain attribute: a lifted constant
            self.register_buffer("keep", torch.arange(24) % 5 != 0)  # bool

        def forward(self, tokens):
            x = self.embed(tokens) + self.offset.to(torch.float32) * self.table
            x = x.masked_fill(~self.keep, 0.0)
            for block in self.blocks:
                x = block(x, 0.5)
            return self.head(x.to(torch.bfloat16)).float()


    # torch-mlir-lens: inputs=(torch.randn(2, 16),)
    class ReadsWeights(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 16)
            self.gain = float(self.fc.weight.detach().abs().max())  # reads a weight

        def forward(self, x):
            return self.fc(x) * self.gain


    # torch-mlir-lens: inputs=(torch.randn(2, 16),)
    class MaskedWidth(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", torch.rand(16) > 2.0)  # all False
            self.width = 16 - int(self.mask.sum())  # a shape from a buffer's values
            self.fc = nn.Linear(self.width, 4)

        def forward(self, x):
            return self.fc(x[:, : self.width])


    # torch-mlir-lens: inputs=(torch.randn(2, 16),)
    class LearnedScale(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 16)
            self.scale = nn.Parameter(torch.tensor(0.5))  # printed inline, by value

        def forward(self, x):
            return self.fc(x) * self.scale


    # torch-mlir-lens: inputs=(torch.randn(2, 16),)
    class Repeats(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 16)
            self.times = torch.arange(4).sum() // 3  # a plain tensor: its value shapes the trace

        def forward(self, x):
            for _ in range(int(self.times)):
                x = torch.tanh(self.fc(x))
            return x
    """
)


@pytest.fixture(scope="module")
def user_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("construct") / "lens_construct_user.py"
    path.write_text(USER_FILE)
    return path


def _lower(path: Path, module: str, construct_policy: str, *, targets: list[str] | None = None,
           keep_weights: bool = False, tag: str = "") -> list[dict[str, Any]]:
    """Lower through run_job; `tag` changes the text (a comment) so nothing comes from a cache."""
    text = path.read_text() + f"\n# {tag or construct_policy}\n"
    reply = run_job({"id": 1, "op": "lower", "path": str(path), "text": text, "module": module,
                     "targets": targets or ["linalg"], "construct": construct_policy,
                     "keep_weights": keep_weights})
    assert reply["ok"], reply
    results: list[dict[str, Any]] = reply["result"]["results"]
    for res in results:
        assert res["ok"], res["diagnostics"]
    return results


def _parse(text: str) -> None:
    from torch_mlir import ir

    from torch_mlir_lens.worker.lowering import parsing_context

    ir.Module.parse(text, context=parsing_context())


_RESOURCE = re.compile(r"dense_resource<[^>]+>")


def _structure(ir_text: str) -> list[str]:
    """The IR's op lines with every resource key made the same (the resource section dropped)."""
    body = ir_text.split("\n{-#")[0]
    return [_RESOURCE.sub("dense_resource<K>", line) for line in body.splitlines()]


@pytest.fixture(scope="module")
def tiny_meta(user_file: Path) -> list[dict[str, Any]]:
    return _lower(user_file, "Tiny", "meta", targets=["raw", "linalg", "tosa", "stablehlo"])


def test_meta_construction_lowers_every_target_to_ir_that_parses(
        tiny_meta: list[dict[str, Any]]) -> None:
    for res in tiny_meta:
        assert res["stats"]["construction"] == construct.META, res["stats"]
        assert "never built" in res["stats"]["construction_reason"]
        assert res["stats"]["weight_bytes"] > 0
        _parse(res["ir"])


def test_elided_resources_have_the_weights_types_and_shapes(
        tiny_meta: list[dict[str, Any]]) -> None:
    raw = tiny_meta[0]["ir"]
    resources = re.findall(r"dense_resource<([^>]+)> : (tensor<[^>]+>)", raw)
    assert resources and {key for key, _ in resources} == {ELIDED_KEY}
    types = {t for _, t in resources}
    # embedding, Linear 24x24 (+ bias), LayerNorm, the bf16 head, the int64 buffer, the
    # lifted constant: every kind of tensor the importer freezes, with its dtype and shape.
    assert {"tensor<50x24xf32>", "tensor<24x24xf32>", "tensor<24xf32>", "tensor<8x24xbf16>",
            "tensor<8xbf16>", "tensor<24xsi64>"} <= types
    assert "{-#" not in raw  # no data at all: nothing for a resource section


def test_meta_ir_has_the_structure_of_the_real_one(user_file: Path,
                                                   tiny_meta: list[dict[str, Any]]) -> None:
    real = _lower(user_file, "Tiny", "real", targets=["raw", "linalg", "stablehlo"])
    assert all(r["stats"]["construction"] == construct.REAL for r in real)
    by_target = {r["target"]: r["ir"] for r in tiny_meta}
    for res in real:
        assert _structure(res["ir"]) == _structure(by_target[res["target"]]), res["target"]


def test_keep_weights_builds_real_weights_and_prints_their_bytes(user_file: Path) -> None:
    # A program built without weights is cached first; --keep-weights must not reuse it.
    _lower(user_file, "Tiny", "meta", tag="kw")
    [res] = _lower(user_file, "Tiny", "meta", targets=["raw"], keep_weights=True, tag="kw")
    assert res["stats"]["construction"] == construct.REAL
    assert "--keep-weights" in res["stats"]["construction_reason"]
    assert ELIDED_KEY not in res["ir"]
    _parse(res["ir"])
    # The bytes of seeded tensors are in the printed blobs, as torch holds them: a float32
    # constant (from ExportedProgram.constants), an int64 buffer, a bf16 weight.
    table = torch.linspace(0.0, 1.0, 24)
    offset = torch.arange(24, dtype=torch.int64)
    hexes = re.findall(r'"0x([0-9A-F]+)"', res["ir"])
    assert any(h.endswith(table.numpy().tobytes().hex().upper()) for h in hexes)
    assert any(h.endswith(offset.numpy().tobytes().hex().upper()) for h in hexes)
    bf16_blobs = [h for h in hexes if len(h) == 8 + 8 * 24 * 2 * 2]
    assert bf16_blobs, "the 8x24 bf16 weight's blob"


@pytest.mark.parametrize(("module", "why"), [
    ("ReadsWeights", "building without weights failed"),
    ("MaskedWidth", "building without weights failed"),
    ("LearnedScale", "one-element weights need their values (scale)"),
])
def test_modules_that_need_values_fall_back_to_real_construction(user_file: Path, module: str,
                                                                  why: str) -> None:
    [res] = _lower(user_file, module, "meta")
    stats = res["stats"]
    assert stats["construction"] == construct.REAL
    assert stats["construction_reason"].startswith("fallback: ") and why in (
        stats["construction_reason"]), stats


def test_a_value_the_trace_needs_is_known_or_falls_back(user_file: Path) -> None:
    """`int(self.times)` in forward: the trace needs the tensor's value. Fake tensors made from
    Python data keep it (meta works); either way the IR is the real one: 1 tanh per repeat."""
    [meta] = _lower(user_file, "Repeats", "meta")
    [real] = _lower(user_file, "Repeats", "real")
    assert meta["ir"].count("math.tanh") == real["ir"].count("math.tanh") == 2
    assert meta["stats"]["construction"] in (construct.META, construct.REAL)


@pytest.mark.parametrize("module", ["Tiny", "ReadsWeights", "MaskedWidth", "LearnedScale"])
def test_verify_uses_real_weights_and_matches_eager(user_file: Path, module: str) -> None:
    text = user_file.read_text() + "\n# verify\n"
    base = {"path": str(user_file), "text": text, "module": module, "construct": "meta"}
    lowered = run_job({"id": 1, "op": "lower", "targets": ["linalg"], **base})
    assert lowered["ok"], lowered
    reply = run_job({"id": 2, "op": "verify", **base})
    assert reply["ok"], reply
    assert reply["result"]["ok"], reply["result"]["message"]


def test_default_policy_builds_small_modules_with_their_weights(user_file: Path) -> None:
    [res] = _lower(user_file, "Tiny", "auto")
    assert res["stats"]["construction"] == construct.REAL
    assert res["stats"]["construction_reason"].startswith("small module")


LM_FILE = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self, d: int):
            super().__init__()
            self.fc = nn.Linear(d, d)

        def forward(self, x, gate):
            return x + torch.relu(self.fc(x)) * gate


    # torch-mlir-lens: inputs=(torch.randint(0, 40, (1, 6)),)
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(40, 16)
            self.blocks = nn.ModuleList([Block(16) for _ in range(3)])

        def forward(self, tokens):
            x = self.embed(tokens)
            gate = torch.sigmoid(x.mean(-1, keepdim=True))
            for block in self.blocks:
                x = block(x, gate)
            return x
    """
)


def test_derived_inputs_recorded_in_a_parent_built_without_weights(tmp_path: Path) -> None:
    path = tmp_path / "lens_construct_lm.py"
    path.write_text(LM_FILE)
    [res] = _lower(path, "Block", "meta")
    assert res["inputs_source"] == "derived:LM"
    assert res["stats"]["construction"] == construct.META
    assert re.search(r"tensor<1x6x16xf32>", res["ir"])  # the shape the parent passed
    reply = run_job({"id": 3, "op": "verify", "path": str(path), "module": "Block"})
    assert reply["ok"] and reply["result"]["ok"], reply


CLONED_FILE = textwrap.dedent(
    """\
    import copy

    import torch
    from torch import nn


    class CachingBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Parameter(torch.randn(3, 8))
            self.register_buffer("index", torch.tensor([2, 0, 1]), persistent=False)
            self.bias_cache = {}

        def forward(self, x):
            if "cpu" not in self.bias_cache:  # gathered on the first call, then kept
                self.bias_cache["cpu"] = self.table[self.index]
            return torch.tanh(x + self.bias_cache["cpu"])


    # torch-mlir-lens: inputs=(torch.randn(2, 3, 8),)
    class Cloned(nn.Module):
        def __init__(self):
            super().__init__()
            # Copies are not built by their constructor: the recording keeps them as they ran.
            self.blocks = nn.ModuleList([copy.deepcopy(CachingBlock()) for _ in range(2)])
            self.eval()

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x
    """
)


@pytest.mark.parametrize("policy", [construct.META, construct.REAL])
def test_a_submodule_kept_from_the_recording_run_lowers_as_the_file_made_it(
        tmp_path: Path, policy: str) -> None:
    path = tmp_path / "lens_construct_cloned.py"
    path.write_text(CLONED_FILE)
    [res] = _lower(path, "CachingBlock", policy, targets=["torch"])
    assert res["inputs_source"] == "derived:Cloned"
    # The gather a fresh block runs on its first call, not what the parent's run cached.
    assert "torch.aten.index" in res["ir"], res["ir"]


def test_mark_elided_keeps_printed_blobs_and_marks_the_rest() -> None:
    asm = textwrap.dedent(
        """\
        %0 = torch.vtensor.literal(dense_resource<torch_tensor_4_torch.float32> : tensor<4xf32>)
        %1 = torch.vtensor.literal(dense_resource<torch_tensor_9_9_torch.float32> : tensor<9x9xf32>)
        %2 = torch.vtensor.literal(dense_resource<"odd key"> : tensor<9xf32>)

        {-#
          dialect_resources: {
            builtin: {
              torch_tensor_4_torch.float32: "0x0400000000000000000000000000000000000000"
            }
          }
        #-}
        """
    )
    out = mark_elided(asm)
    assert "dense_resource<torch_tensor_4_torch.float32> : tensor<4xf32>" in out
    assert out.count(f"dense_resource<{ELIDED_KEY}>") == 2
    assert "tensor<9x9xf32>" in out and out.endswith(asm[asm.index("{-#"):])
