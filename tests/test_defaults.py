"""The defaults are written once (defaults.py); the extension's manifest must say the same."""

from __future__ import annotations

import json
from pathlib import Path

from torch_mlir_lens import defaults
from torch_mlir_lens.engine import EngineConfig
from torch_mlir_lens.lsp.state.settings import Settings

MANIFEST = Path(__file__).resolve().parents[1] / "package.json"


def test_manifest_settings_default_to_the_shared_defaults() -> None:
    props = json.loads(MANIFEST.read_text())["contributes"]["configuration"]["properties"]
    assert props["torchMlirLens.timeoutSeconds"]["default"] == defaults.TIMEOUT_S
    assert props["torchMlirLens.memoryLimitMb"]["default"] == defaults.MEMORY_LIMIT_MB
    assert props["torchMlirLens.cacheSizeMb"]["default"] == defaults.CACHE_SIZE_MB


def test_the_engine_and_the_settings_use_them() -> None:
    config, settings = EngineConfig(), Settings()
    assert (config.timeout_s, config.memory_limit_mb, config.cache_max_mb) == (
        defaults.TIMEOUT_S, defaults.MEMORY_LIMIT_MB, defaults.CACHE_SIZE_MB)
    assert (settings.timeout_seconds, settings.memory_limit_mb, settings.cache_size_mb) == (
        defaults.TIMEOUT_S, defaults.MEMORY_LIMIT_MB, defaults.CACHE_SIZE_MB)
