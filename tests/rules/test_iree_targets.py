"""The IREE targets as data (rules/iree_targets.py): every front end accepts them where it
accepts a target, their compile flags, and the architecture settings they take or refuse."""

from __future__ import annotations

import pytest

from torch_mlir_lens import defaults
from torch_mlir_lens.project.config import parse_table
from torch_mlir_lens.rules import iree_targets
from torch_mlir_lens.rules.targets import BACKENDS, TARGETS, parse_targets, target_title


def test_the_iree_targets_are_targets_but_not_torch_mlir_backends() -> None:
    assert iree_targets.IREE_TARGETS == ("iree-cpu", "iree-cuda", "iree-rocm", "iree-vulkan")
    for name in iree_targets.IREE_TARGETS:
        assert name in TARGETS and name not in BACKENDS  # no rewrites, no default checks
        assert target_title(name).startswith("IREE ")
    assert parse_targets("linalg,iree-cpu,iree-rocm") == ["linalg", "iree-cpu", "iree-rocm"]
    config = parse_table({"targets": ["iree-cpu", "tosa"]}, "/p/pyproject.toml")
    assert config.targets == ("iree-cpu", "tosa")


def test_compile_flags_name_the_device_and_its_default_architecture() -> None:
    cpu = iree_targets.compile_flags("iree-cpu", None)
    assert "--iree-hal-target-device=local" in cpu
    assert "--iree-hal-local-target-device-backends=llvm-cpu" in cpu
    assert "--iree-llvmcpu-target-cpu=host" in cpu
    assert "--iree-input-demote-f64-to-f32=false" in cpu  # eager's float64 signature kept
    assert iree_targets.compile_flags("iree-cuda", None)[:2] == [
        "--iree-hal-target-device=cuda", f"--iree-cuda-target={defaults.IREE_ARCHS['iree-cuda']}"]
    assert "--iree-rocm-target=gfx90a" in iree_targets.compile_flags("iree-rocm", "gfx90a")
    vulkan = iree_targets.compile_flags("iree-vulkan", None)
    assert not any(f.startswith("--iree-vulkan-target") for f in vulkan)  # IREE's default
    assert not any(f.startswith("--iree-input-demote") for f in vulkan)  # f64 demoted
    assert iree_targets.arch_title("iree-vulkan", None) == "IREE's default"


@pytest.mark.parametrize("arch", ["sm_80 --iree-foo", "-o/etc/passwd", "", "x" * 80, "a b"])
def test_an_architecture_is_one_word_never_a_flag(arch: str) -> None:
    error = iree_targets.arch_error("iree-cuda", arch)
    assert (error is None) == (arch == "")  # "" means the default
    if arch:
        with pytest.raises(ValueError, match="not a CUDA architecture name"):
            iree_targets.parse_archs([f"iree-cuda={arch}"])


def test_parse_archs() -> None:
    assert iree_targets.parse_archs(["iree-cuda=sm_86", "iree-rocm = gfx1100"]) == {
        "iree-cuda": "sm_86", "iree-rocm": "gfx1100"}
    with pytest.raises(ValueError, match="TARGET=ARCH"):
        iree_targets.parse_archs(["linalg=sm_80"])


def test_the_missing_iree_message_says_what_to_install() -> None:
    words = iree_targets.missing_iree_message("IREE CPU", ["iree-base-runtime"])
    assert "iree-base-runtime is not installed" in words
    assert "pip install 'torch-mlir-lens[iree]'" in words
    assert "iree-base-compiler==3.13.0" in words
