"""The lowering targets Torch-MLIR Lens knows, and their pass pipelines.

Pure data (no torch import) so that the CLI and the language server can validate and list
targets without loading the worker. Every pipeline string of the project is here: the worker
(lowering, unsupported-op listing, partial lowering, verify) reads them from this module.
"""

from __future__ import annotations

from dataclasses import dataclass

# Raw FX-imported IR → the torch backend contract.
TORCH_BACKEND_PIPELINE = "builtin.module(torchdynamo-export-to-torch-backend-pipeline)"
# ONNX-imported IR (each node a `torch.operator "onnx.*"`) → the Torch backend IR; its first
# pass alone converts the nodes, leaving those it has no conversion for as they are.
ONNX_TORCH_PIPELINE = "builtin.module(torch-onnx-to-torch-backend-pipeline)"
ONNX_CONVERSION_PIPELINE = "builtin.module(func.func(convert-torch-onnx-to-torch))"


@dataclass(frozen=True)
class Target:
    """A named lowering target."""

    name: str
    title: str  # as shown to people: "Linalg", "TOSA", ...
    description: str
    backend_pipeline: str | None = None  # applied to torch-backend IR; None for fx/raw/torch
    is_backend: bool = False  # a backend whose unsupported ops are diagnosed


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("fx", "FX", "the ATen graph of the torch.export program, as PyTorch prints it"),
        Target("raw", "Raw", "the FX graph imported into the Torch dialect, before any pass"),
        Target("torch", "Torch", "the Torch dialect at the backend contract"),
        Target(
            "linalg",
            "Linalg",
            "linalg-on-tensors",
            "builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline)",
            is_backend=True,
        ),
        Target(
            "tosa",
            "TOSA",
            "the TOSA dialect",
            "builtin.module(torch-backend-to-tosa-backend-pipeline)",
            is_backend=True,
        ),
        Target(
            "stablehlo",
            "StableHLO",
            "the StableHLO dialect",
            "builtin.module(torch-backend-to-stablehlo-backend-pipeline)",
            is_backend=True,
        ),
        Target("llvm", "LLVM", "the LLVM dialect, lowered from linalg-on-tensors"),
        # Compiled by IREE from the Linalg IR (rules/iree_targets.py: flags, architectures);
        # shown as IREE's dispatch regions, each mapped to the lines fused into it.
        Target("iree-cpu", "IREE CPU", "compiled by IREE for a CPU (llvm-cpu; this machine's "
               "by default), shown as its dispatch regions"),
        Target("iree-cuda", "IREE CUDA", "compiled by IREE for NVIDIA GPUs (sm_80 by default)"),
        Target("iree-rocm", "IREE ROCm", "compiled by IREE for AMD GPUs (gfx942 by default)"),
        Target("iree-vulkan", "IREE Vulkan", "compiled by IREE for Vulkan (SPIR-V)"),
    )
}

BACKENDS: tuple[str, ...] = tuple(name for name, t in TARGETS.items() if t.is_backend)

# torch-backend IR → each backend, the whole pipeline (with the backend-contract check).
BACKEND_PIPELINES: dict[str, str] = {
    name: t.backend_pipeline for name, t in TARGETS.items() if t.backend_pipeline is not None
}

# Conversion prefixes of the backend pipelines (no backend-contract verification at the end):
# what is left unconverted after them is what the backend cannot lower.
LEFTOVER_PIPELINES: dict[str, str] = {
    "linalg": (
        "builtin.module(func.func(torch-restructure-non-constant-axes,torch-fuse-quantized-ops,"
        "convert-torch-to-tmtensor,canonicalize,convert-torch-to-linalg,canonicalize,"
        "convert-torch-to-scf,convert-torch-to-arith,convert-torch-to-tensor))"
    ),
    "stablehlo": "builtin.module(func.func(convert-torch-to-stablehlo,convert-torch-to-arith))",
}
CUSTOM_TARGET = "custom"  # the result target name of a user-supplied pipeline


def target_title(name: str) -> str:
    """The human title of a target name ("linalg" → "Linalg"); unknown names pass through."""
    target = TARGETS.get(name)
    return target.title if target else name


def is_known_target(name: str) -> bool:
    return name in TARGETS


def parse_targets(text: str) -> list[str]:
    """The targets of a comma-separated list such as `--targets linalg,tosa`; ValueError
    naming an unknown one, or saying the list names none."""
    targets = [t.strip() for t in text.split(",") if t.strip()]
    for t in targets:
        if t not in TARGETS:
            raise ValueError(f"unknown target {t!r} (choose from {', '.join(TARGETS)})")
    if not targets:
        raise ValueError("--targets names no target")
    return targets


# The `llvm` target's own pipeline, linalg-on-tensors → LLVM dialect for the JIT
# (worker/stages/llvm.py), in two halves with a rewrite in between (below).
# Why each step:
# - tensor.concat (torch.cat, RoPE's rotate_half) has no bufferization: torch-mlir's
#   refback-generalize-tensor-concat rewrites it into slices inserted into an empty tensor;
# - TMTensor ops (cumsum's tm_tensor.scan, scatter, sort: from convert-torch-to-tmtensor) bufferize
#   with their own pass once one-shot-bufferize (allowed to pass over them) has bufferized the
#   rest, and become loops with tm-tensor-to-loops;
# - generalize named ops so that convert-linalg-to-loops sees plain linalg.generic;
# - one-shot-bufferize over function boundaries with identity layouts: arguments and results
#   are then plain contiguous memrefs, which is what the caller passes (C-contiguous arrays);
# - buffer-deallocation-pipeline frees temporaries and makes returned buffers owned by the
#   caller (so the caller may free them);
# - refback-munge-memref-copy turns memref.copy (from tensor.pad and bufferization.clone) into
#   a linalg copy: otherwise the JIT needs `memrefCopy` from a runtime library the wheel lacks;
# - expand-strided-metadata computes the sizes and strides of dynamic shapes (collapse_shape,
#   expand_shape, subviews of `?` dims) with affine.apply: a second lower-affine after it turns
#   them into arith before the conversion to LLVM (dynamic shapes failed without it);
# - f16 and bf16: LLVM lowers their conversions (and the ones inside any arithmetic on them)
#   to compiler-rt/libgcc builtins on CPUs without F16C/AVX512-BF16, which the JIT cannot find
#   (GCC 12's libgcc has no bf16 ones). So 16-bit float math and arithmetic are computed in f32
#   (math-extend-to-supported-types, arith-emulate-unsupported-floats: each op still rounds to
#   its 16-bit type, as LLVM would); between the two halves worker/stages/half_floats.py rewrites
#   the f16 conversions (and those between 16-bit floats and f64) into integer arithmetic, then
#   arith-expand{include-bf16} does the same for f32 <-> bf16. Nothing is left for the CPU but
#   SSE2;
# - the rest is the standard conversion of loops, arith, math, memref, func and cf to LLVM;
# - first of all, the calls of a stitched module's block functions are inlined (nothing to do
#   in a module of one function): deallocation and the JIT's entry point want one function.
LLVM_PIPELINE_HEAD = (
    "builtin.module("
    "inline{default-pipeline=},"
    "func.func(refback-generalize-tensor-concat),"
    "func.func(linalg-generalize-named-ops),"
    "one-shot-bufferize{allow-unknown-ops bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "func.func(tm-tensor-bufferize),"
    "func.func(buffer-deallocation-pipeline),"
    "convert-bufferization-to-memref,"
    "func.func(refback-munge-memref-copy),"
    "func.func(tm-tensor-to-loops),"
    "func.func(convert-linalg-to-loops),"
    "lower-affine,"
    "convert-scf-to-cf,"
    "func.func(math-extend-to-supported-types{target-type=f32},"
    "arith-emulate-unsupported-floats{source-types=bf16,f16 target-type=f32}))"
)
LLVM_PIPELINE_TAIL = (
    "builtin.module("
    "func.func(arith-expand{include-bf16=true}),"
    "func.func(convert-math-to-llvm),"
    "convert-math-to-libm,"
    "expand-strided-metadata,"
    "lower-affine,"
    "finalize-memref-to-llvm,"
    "convert-arith-to-llvm,"
    "convert-func-to-llvm,"
    "convert-cf-to-llvm,"
    "convert-ub-to-llvm,"
    "reconcile-unrealized-casts)"
)


# A stitched module (worker/blocks/: one function per repeated block, called at each of its
# calls): its calls inlined, before a pipeline that needs one function (StableHLO, a user's
# pipeline), and before a backend's contract check (which rejects `func.call`), run apart.
INLINE_CALLS_PIPELINE = "builtin.module(inline{default-pipeline=})"


def contract_check_pipeline(verify_pass: str, *, inline: bool) -> str:
    """A backend's contract check (`torch-verify-...-contract`), the calls inlined first when
    `inline`."""
    return f"builtin.module({'inline{default-pipeline=},' if inline else ''}{verify_pass})"


# Not a lowering: running these two conversions on an empty module loads the StableHLO and
# TMTensor dialects, which this wheel registers only as dependencies of passes, so that IR
# holding their ops can be parsed (worker/stages/pipeline.py).
DIALECT_LOADING_PIPELINE = (
    "builtin.module(func.func(convert-torch-to-stablehlo,convert-torch-to-tmtensor))"
)


# A backend's own IR → linalg-on-tensors, so that Verify runs what that backend produced
# (a rewrite's TOSA or StableHLO ops, not Linalg's). The passes torch-mlir's e2e suite uses
# to run those backends on its reference backend (torch_mlir_e2e_test/tosa_backends,
# stablehlo_backends): TOSA constants become arith first, named ops before the rest.
LINALG_FROM_BACKEND: dict[str, str] = {
    "tosa": (
        "builtin.module(func.func(tosa-to-arith,tosa-to-scf,tosa-optional-decompositions,"
        "tosa-to-linalg-named,tosa-to-linalg,tosa-to-tensor,tosa-to-arith))"
    ),
    "stablehlo": (
        "builtin.module(func.func(stablehlo-aggressive-simplification),"
        "stablehlo-legalize-to-linalg,stablehlo-convert-to-signless,canonicalize)"
    ),
}
