"""The IREE targets: how IREE compiles a module's Linalg IR for each device, and runs it.

Pure data (no torch, no IREE import): the CLI and the language server validate IREE targets
and their architecture settings without loading the worker. The worker (worker/iree/) reads
the compile flags and the runtime driver of each target here and nowhere else. The targets
themselves are listed with the others in `targets.py`.

Verified with IREE 3.13.0 (`iree-base-compiler`, `iree-base-runtime`): the CPU, CUDA (`sm_80`,
`sm_86`, `sm_89`, `sm_120`), ROCm (`gfx90a`, `gfx942`, `gfx950`, `gfx1100`) and Vulkan compile
on a machine without a GPU; this build refuses CUDA `sm_90` and `sm_100` ("missing GPU target
in #hal.executable.target"), which `worker/iree/` reports as the architecture's refusal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from torch_mlir_lens import defaults

IREE_VERSION = "3.13.0"  # the pinned version (pyproject's `iree` extra)
COMPILER_DISTRIBUTION = "iree-base-compiler"
RUNTIME_DISTRIBUTION = "iree-base-runtime"
IREE_DISTRIBUTIONS = (COMPILER_DISTRIBUTION, RUNTIME_DISTRIBUTION)
IREE_EXTRA = "iree"  # the package's extra that installs them (pyproject.toml)

# What every message about a missing IREE says, in one place.
IREE_INSTALL = (f"pip install 'torch-mlir-lens[{IREE_EXTRA}]' (that is, "
                f"{COMPILER_DISTRIBUTION}=={IREE_VERSION} and "
                f"{RUNTIME_DISTRIBUTION}=={IREE_VERSION})")


def missing_iree_message(title: str, missing: list[str]) -> str:
    """The words of the error when IREE is not installed where the worker runs."""
    return (f"{title} needs IREE, and {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed in the worker's "
            f"interpreter: {IREE_INSTALL}")


@dataclass(frozen=True)
class IreeDevice:
    """How IREE compiles for one target and which runtime driver runs the result."""

    hal_device: str  # --iree-hal-target-device
    driver: str  # iree.runtime's driver ("local-task", "cuda", "hip", "vulkan")
    flags: tuple[str, ...]  # the device's own compile flags
    arch_flag: str  # the flag naming the architecture (a CPU, a GPU)
    arch_words: str  # what the architecture is, in messages
    is_gpu: bool = True
    keeps_f64: bool = True  # False: IREE's default, f64 demoted to f32 (a changed signature)


IREE_DEVICES: dict[str, IreeDevice] = {
    "iree-cpu": IreeDevice("local", "local-task",
                           ("--iree-hal-local-target-device-backends=llvm-cpu",),
                           "--iree-llvmcpu-target-cpu", "CPU", is_gpu=False),
    "iree-cuda": IreeDevice("cuda", "cuda", (), "--iree-cuda-target", "CUDA architecture"),
    "iree-rocm": IreeDevice("hip", "hip", (), "--iree-rocm-target", "ROCm architecture"),
    "iree-vulkan": IreeDevice("vulkan", "vulkan", (), "--iree-vulkan-target",
                              "Vulkan target", keeps_f64=False),
}
IREE_TARGETS: tuple[str, ...] = tuple(IREE_DEVICES)

# IREE demotes f64 to f32 by default, which changes the compiled function's signature (eager's
# float64 inputs would no longer fit) and fails on f64 weights: the CPU, CUDA and ROCm keep the
# types eager PyTorch computes in. Vulkan keeps IREE's default: SPIR-V rarely has f64, and a
# model's f64 scalars (a norm's epsilon) would otherwise fail there.
KEEP_F64: tuple[str, ...] = ("--iree-input-demote-f64-to-f32=false",)

# An architecture is one word of IREE's own spelling (`sm_80`, `gfx942`, `znver4`, `rdna3`,
# `a100`): never a second flag.
_ARCH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")


def is_iree_target(name: str) -> bool:
    """Whether `name` is one of the IREE targets."""
    return name in IREE_DEVICES


def default_arch(target: str) -> str | None:
    """The architecture `target` compiles for when no setting names one (None: IREE's own
    default, Vulkan's portable target)."""
    return defaults.IREE_ARCHS.get(target)


def arch_error(target: str, arch: str | None) -> str | None:
    """Why `arch` cannot be `target`'s architecture setting, or None when it can."""
    if arch is None or arch == "":
        return None
    if not _ARCH.match(arch):
        return (f"{arch!r} is not a {IREE_DEVICES[target].arch_words} name (one word such as "
                f"{default_arch(target) or 'rdna3'})")
    return None


def compile_flags(target: str, arch: str | None) -> list[str]:
    """iree-compile's flags for `target` at `arch` (None or "": the default)."""
    device = IREE_DEVICES[target]
    chosen = arch or default_arch(target)
    flags = [f"--iree-hal-target-device={device.hal_device}", *device.flags]
    if chosen:
        flags.append(f"{device.arch_flag}={chosen}")
    return [*flags, *(KEEP_F64 if device.keeps_f64 else ())]


def arch_title(target: str, arch: str | None) -> str:
    """The architecture as messages name it ("sm_80", "host", "IREE's default")."""
    return arch or default_arch(target) or "IREE's default"


def parse_archs(items: list[str]) -> dict[str, str]:
    """`TARGET=ARCH` items (`iree-cuda=sm_86`) → {target: arch}; ValueError naming a bad
    one."""
    out: dict[str, str] = {}
    for item in items:
        target, sep, arch = item.partition("=")
        target, arch = target.strip(), arch.strip()
        if not sep or not is_iree_target(target):
            raise ValueError(f"{item!r}: expected TARGET=ARCH with TARGET one of "
                             f"{', '.join(IREE_TARGETS)}")
        error = arch_error(target, arch)
        if error:
            raise ValueError(error)
        out[target] = arch
    return out
