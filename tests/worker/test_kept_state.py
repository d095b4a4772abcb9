"""The state guard (worker/loading/kept_state.py): what a run of the forward wrote to the model
is put back after it, in place where something may hold on to a container."""

from __future__ import annotations

import importlib.util
from collections import OrderedDict
from pathlib import Path
from typing import Any

import torch
from torch import nn

from torch_mlir_lens.worker.loading.kept_state import state_kept

MODELS = Path(__file__).resolve().parent / "models" / "repeated_blocks.py"


def _models() -> Any:
    spec = importlib.util.spec_from_file_location("repeated_blocks", MODELS)
    assert spec is not None and spec.loader is not None
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    return models


def test_the_state_guard_puts_back_what_a_forward_wrote() -> None:
    model = _models().Caching()
    caches = [block.bias_cache for block in model.blocks]
    hooks = model.blocks[0]._forward_hooks
    with state_kept(model):
        model(torch.randn(2, 3, 8))
        model.blocks[1].index = torch.tensor([0, 0, 0])  # a buffer assigned
        model.blocks[2].bias_cache = {}  # a container replaced
        assert all(block.bias_cache for block in model.blocks[:2])
    assert [block.bias_cache for block in model.blocks] == [{}, {}, {}]
    assert all(block.bias_cache is cache for block, cache in zip(model.blocks, caches, strict=True))
    assert model.blocks[0]._forward_hooks is hooks
    assert not any(hasattr(block, "last_length") for block in model.blocks)
    assert model.blocks[1].index.tolist() == [2, 0, 1]


class _Frozen(OrderedDict):
    """A dict that refuses to change, as transformers' ModelOutput does."""

    def __delitem__(self, key: Any) -> None:
        raise RuntimeError("cannot delete from a frozen output")

    def clear(self) -> None:
        raise RuntimeError("cannot clear a frozen output")

    def update(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("cannot update a frozen output")


class _KeepsLastOutput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.last = _Frozen(value=torch.zeros(1))
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.last = _Frozen(value=x)
        return x


def test_a_dict_that_refuses_to_change_is_put_back_as_an_object() -> None:
    model = nn.Sequential(_KeepsLastOutput(), _KeepsLastOutput())
    before = [block.last for block in model]
    with state_kept(model):
        model(torch.ones(2))
    assert [block.last for block in model] == before
    assert all(block.last is old for block, old in zip(model, before, strict=True))
    assert [block.calls for block in model] == [0, 0]  # every module put back, not only some


class _SwitchesToTraining(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.train()  # as code that toggles dropout for one call does
        return x


def test_a_forward_that_switches_the_mode_leaves_the_model_in_its_own() -> None:
    model = nn.Sequential(_SwitchesToTraining()).eval()
    with state_kept(model):
        model(torch.ones(2))
    assert not any(module.training for module in model.modules())
