"""f16 and bf16 in compiled code: nothing beyond x86-64 (SSE2) is needed, and conversions round
bit for bit like PyTorch.

LLVM turns any conversion to or from a 16-bit float (and so any arithmetic on one) into a call of
a compiler-rt/libgcc builtin on a CPU without the instructions for it; a process without that
library cannot link it. Whether a given machine has the instructions must not decide these
tests: the lowered LLVM dialect is checked to compute nothing in 16-bit floats, and the JIT
compiles for a baseline x86-64 CPU (function attributes turning off F16C, AVX-512 and the bf16
conversion extensions, whatever the host has), whose object code is checked for builtin calls.
"""

from __future__ import annotations

import platform
import re
import runpy
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch_mlir import ir
from torch_mlir.execution_engine import ExecutionEngine

from torch_mlir_lens.worker import lowering
from torch_mlir_lens.worker.stages.llvm import lower_linalg_to_llvm
from torch_mlir_lens.worker.verify import default_tolerances
from torch_mlir_lens.worker.verify.jit import function_signature, link, run_compiled
from torch_mlir_lens.worker.verify.job import verify_callable
from torch_mlir_lens.worker.verify.linalg import private_copy

HERE = [__file__]
ZOO = Path(__file__).resolve().parents[1] / "models" / "hf_zoo.py"
# compiler-rt/libgcc 16-bit float conversion builtins (`__truncsfbf2`, `__extendhfsf2`, ...).
HALF_BUILTIN = re.compile(rb"__(?:trunc|extend)[a-z]*(?:hf|bf)[a-z0-9]*|__gnu_(?:h2f|f2h)_ieee")
# A CPU with SSE2 only: what every x86-64 has, none of the 16-bit float conversion instructions.
BASELINE_CPU = "x86-64"
BASELINE_FEATURES = ["-avx", "-avx2", "-f16c", "-fma", "-avx512f", "-avx512fp16", "-avx512bf16",
                     "-avxneconvert", "-amx-bf16", "-amx-fp16"]


class Conversions(nn.Module):
    """Every conversion to and from f16/bf16 that a model does, and arithmetic in both."""

    def forward(self, x32: torch.Tensor, x64: torch.Tensor, h: torch.Tensor, b: torch.Tensor,
                n: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            x32.to(torch.bfloat16), x32.to(torch.float16),
            x64.to(torch.bfloat16), x64.to(torch.float16),
            b.to(torch.float32), h.to(torch.float32),
            b.to(torch.float64), h.to(torch.float64),
            b * b + 1, h * h + 1,  # one rounding per op, in eager and compiled alike
            n.to(torch.bfloat16), n.to(torch.float16),
            b.to(torch.int32), h.to(torch.int32),
            torch.exp(b), torch.tanh(h), torch.where(b > 0, b, -b), h.amax(),
        )


EXACT = 14  # the leading outputs: one rounding each, in eager as compiled: bit for bit


def _bits(values: list[int], dtype: torch.dtype) -> torch.Tensor:
    """Tensors of `dtype` from raw bit patterns (unsigned ints)."""
    width = {torch.float32: torch.int32, torch.float16: torch.int16,
             torch.bfloat16: torch.int16}[dtype]
    size = torch.iinfo(width).bits
    signed = [v - (1 << size) if v >= 1 << (size - 1) else v for v in values]
    return torch.tensor(signed, dtype=width).view(dtype)


def _f32_edge_cases() -> torch.Tensor:
    """f32 values at every rounding edge of f16 and bf16, both signs, plus random bit patterns.

    Each 16-bit value's midpoint to the next one (ties: to even), the f32 values on either side
    of it, zeros, subnormals of both, the largest finite values and what overflows, inf and NaNs.
    """
    specials = [0, 1, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x7F800001,
                0x7FBFFFFF, 0x7FC12345, 0x477FEFFF, 0x477FF000, 0x47800000, 0x33000000,
                0x33000001, 0x33400000, 0x387FE000, 0x387FF000]
    # bf16: the midpoint between bf16 patterns k and k+1 is the f32 pattern (k << 16) | 0x8000.
    bf16_mid = [(k << 16) | low for k in range(0x7F80) for low in (0x7FFF, 0x8000, 0x8001)]
    base = torch.cat([_bits(specials, torch.float32), _bits(bf16_mid, torch.float32)])
    # f16: midpoints of every pair of neighbours (exact in f32), and their f32 neighbours.
    f16 = _bits(list(range(0x7C00)), torch.float16).double()
    upper = torch.cat([f16[1:], torch.tensor([65536.0], dtype=torch.float64)])
    mid = ((f16 + upper) / 2).float()
    f16_edges = torch.cat([mid, torch.nextafter(mid, mid * 2), torch.nextafter(mid, mid * 0)])
    generator = torch.Generator().manual_seed(0)
    random = torch.randint(-(2**31), 2**31, (20000,), generator=generator, dtype=torch.int64)
    values = torch.cat([base, f16_edges, random.to(torch.int32).view(torch.float32)])
    return torch.cat([values, -values])


def _f64_edge_cases(f32: torch.Tensor) -> torch.Tensor:
    """f64 values: the f32 ones, and ones a hair off each 16-bit tie. PyTorch rounds f64 to a
    16-bit float through f32 (the hair is lost, then the tie goes to even): so must we."""
    x = f32.double()
    return torch.cat([x, torch.nextafter(x, x * 2), torch.nextafter(x, x * 0),
                      torch.tensor([1 + 2**-8 + 2**-30, 1 + 2**-11 + 2**-40, 1e300, -1e-300])])


def _every(dtype: torch.dtype) -> torch.Tensor:
    """Every 16-bit pattern of `dtype` (NaNs, infs, subnormals included)."""
    return torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)


@pytest.fixture(scope="module")
def inputs() -> tuple[torch.Tensor, ...]:
    x32 = _f32_edge_cases()
    return (x32, _f64_edge_cases(x32), _every(torch.float16), _every(torch.bfloat16),
            torch.arange(-70000, 70000, 7, dtype=torch.int64))


def _llvm_module(model: nn.Module, args: tuple[Any, ...]) -> tuple[ir.Module, Any]:
    """The model lowered to the LLVM dialect by the worker's own path, and its signature."""
    program = lowering.export_program(model, args, user_files=HERE)
    linalg = lowering.ProgramLowerer(program, module_name=type(model).__name__,
                                     user_files=HERE).module_for("linalg")
    module = private_copy(linalg, None, None)
    sig = function_signature(module)
    lower_linalg_to_llvm(module)
    return module, sig


@pytest.fixture(scope="module")
def lowered(inputs: tuple[torch.Tensor, ...]) -> tuple[ir.Module, Any]:
    return _llvm_module(Conversions().eval(), inputs)


def _half_float_computations(module: ir.Module) -> list[str]:
    """LLVM-dialect ops that compute on f16/bf16 values (arithmetic, comparisons, conversions):
    each needs an instruction or a builtin for 16-bit floats. Moving them around does not."""
    moves = {"llvm.load", "llvm.store", "llvm.bitcast", "llvm.mlir.constant",
             "llvm.getelementptr", "llvm.select", "llvm.insertvalue", "llvm.extractvalue",
             "llvm.mlir.global", "llvm.return", "llvm.br", "llvm.cond_br"}
    found: list[str] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        types = [str(v.type) for v in (*op.operands, *op.results)]
        if op.name not in moves and ({"f16", "bf16"} & set(types)):
            found.append(f"{op.name}: {', '.join(types)}")
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _compile_for_baseline_cpu(module: ir.Module, tmp_path: Path) -> tuple[ExecutionEngine, bytes]:
    """JIT the module as for an SSE2-only x86-64 (on an x86-64 host); its object code too."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        features = ir.Attribute.parse(
            "#llvm.target_features<[" + ", ".join(f'"{f}"' for f in BASELINE_FEATURES) + "]>",
            context=module.context)
        for op in module.body.operations:
            if op.operation.name == "llvm.func":
                op.operation.attributes["target_cpu"] = ir.StringAttr.get(
                    BASELINE_CPU, context=module.context)
                op.operation.attributes["target_features"] = features
    engine = ExecutionEngine(module, opt_level=0)
    link(engine, "main", module)
    obj = tmp_path / "module.o"
    engine.dump_to_object_file(str(obj))
    return engine, obj.read_bytes()


def _assert_same_bits(ours: torch.Tensor, theirs: torch.Tensor, what: str) -> None:
    """Bit for bit, except that a NaN only has to be a NaN (PyTorch's own NaN bits differ
    between its scalar and vectorized code)."""
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, what
    if not ours.dtype.is_floating_point:
        assert torch.equal(ours, theirs), what
        return
    nan = theirs.isnan()
    assert torch.equal(ours.isnan(), nan), f"{what}: NaN where PyTorch has none, or not"
    ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}[ours.element_size()]
    a, b = ours[~nan].view(ints), theirs[~nan].view(ints)
    wrong = (a != b).nonzero().flatten()
    if len(wrong):
        i, mask = int(wrong[0]), (1 << 8 * ours.element_size()) - 1
        raise AssertionError(f"{what}: {len(wrong)} values differ, e.g. {ours[~nan][i]} "
                             f"(bits {int(a[i]) & mask:#x}) vs PyTorch's {theirs[~nan][i]} "
                             f"(bits {int(b[i]) & mask:#x})")


# --- what the CPU is asked to do --------------------------------------------------------------


def test_lowered_module_computes_nothing_in_16_bit_floats(lowered: tuple[ir.Module, Any]) -> None:
    """Any f16/bf16 op left in the LLVM dialect becomes a builtin call on some CPU."""
    module, _ = lowered
    text = str(module)
    assert "bf16" in text and "f16" in text  # the values are still loaded and stored as such
    assert _half_float_computations(module) == []
    assert not HALF_BUILTIN.search(text.encode())


def test_baseline_x86_64_object_code_calls_no_builtin_and_links(
    lowered: tuple[ir.Module, Any], tmp_path: Path
) -> None:
    module, _ = lowered
    _, obj = _compile_for_baseline_cpu(module, tmp_path)
    assert obj.startswith(b"\x7fELF")
    assert HALF_BUILTIN.findall(obj) == []


# --- rounding like PyTorch -------------------------------------------------------------------


def test_conversions_and_arithmetic_match_torch_bit_for_bit(
    lowered: tuple[ir.Module, Any], inputs: tuple[torch.Tensor, ...], tmp_path: Path
) -> None:
    """Ties to even, subnormals kept, overflow to inf, NaN stays NaN; f64 rounds through f32."""
    module, sig = lowered
    engine, _ = _compile_for_baseline_cpu(module, tmp_path)
    ours = run_compiled(engine, sig, inputs)
    with torch.no_grad():
        eager = Conversions()(*inputs)
    names = ["f32→bf16", "f32→f16", "f64→bf16", "f64→f16", "bf16→f32", "f16→f32", "bf16→f64",
             "f16→f64", "bf16 b*b+1", "f16 h*h+1", "i64→bf16", "i64→f16", "bf16→i32",
             "f16→i32"]
    _, _, h, b, _ = inputs
    for name, mine, theirs in zip(names, ours, eager, strict=False):
        if name.endswith("→i32"):  # float → int is undefined for NaN, inf and out of range
            source = b if name.startswith("bf16") else h
            valid = source.isfinite() & (source.abs() < 2**31)
            mine, theirs = mine[valid], theirs[valid]
        _assert_same_bits(mine, theirs, name)
    # exp and tanh come from libm instead of PyTorch's own: within the dtype's tolerance.
    for mine, theirs in zip(ours[EXACT:], eager[EXACT:], strict=True):
        rtol, atol = default_tolerances(theirs.dtype)
        finite = theirs.isfinite()
        assert torch.equal(mine.isfinite(), finite)
        torch.testing.assert_close(mine[finite].float(), theirs[finite].float(), rtol=rtol,
                                   atol=atol)


def test_rounding_edges_are_in_the_inputs(inputs: tuple[torch.Tensor, ...]) -> None:
    """The cases the bit comparison relies on are really there (and round as claimed)."""
    x32 = inputs[0]
    tie_even = torch.tensor([1 + 2**-8], dtype=torch.float32)  # bf16 tie, rounds down to 1
    tie_odd = torch.tensor([1 + 3 * 2**-8], dtype=torch.float32)  # rounds up
    assert tie_even.to(torch.bfloat16).item() == 1.0
    assert tie_odd.to(torch.bfloat16).item() == 1 + 2**-6
    for value in (1 + 2**-8, 1 + 3 * 2**-8, 65520.0, 2.0**-25, 3 * 2.0**-25, float("inf")):
        assert (x32 == value).any(), value
    assert torch.isinf(torch.tensor([65520.0]).to(torch.float16)).all()  # the f16 overflow
    assert x32.isnan().any() and (x32.abs() < 2.0**-126).logical_and(x32 != 0).any()


# --- Verify of bf16 models -----------------------------------------------------------------------


def test_bf16_llama_verifies_within_bf16_tolerance() -> None:
    """A `transformers` Llama in bfloat16, the whole Verify path."""
    zoo = runpy.run_path(str(ZOO))
    torch.manual_seed(0)
    model = zoo["TinyLlama"]().to(torch.bfloat16).eval()
    result = verify_callable(model, (torch.randint(0, 96, (1, 8)),), module_name="TinyLlama",
                             user_files=[str(ZOO)])
    assert result.ok, result.message
    [out] = result.outputs
    rtol, atol = default_tolerances(torch.bfloat16)
    assert out.dtype == "bfloat16" and (out.rtol, out.atol) == (rtol, atol)
    # Its outputs stay under 4 in magnitude, where a bf16 step is 2**-6 (what was measured):
    # a couple of steps at most.
    assert out.max_abs_err is not None and out.max_abs_err <= 2 * 2**-6
