"""16-bit float conversions as integer arithmetic, so compiled code needs no runtime builtins.

On an x86-64 CPU without F16C, AVX512-BF16 or AVX-NE-CONVERT, LLVM lowers every `fptrunc`/
`fpext` to or from f16/bf16 into a call of a compiler-rt/libgcc builtin (`__truncsfhf2`,
`__extendhfsf2`, `__truncsfbf2`, ...). The JIT finds none of them in a process that does not
link that library (GCC 12's libgcc has no bf16 ones at all): Verify of an f16 or bf16 module
then fails to link. The `llvm` pipeline (`rules/targets.py`) therefore first computes all f16/
bf16 arithmetic in f32 (`arith-emulate-unsupported-floats`, `math-extend-to-supported-types`),
which leaves only `arith.truncf`/`arith.extf` touching 16-bit floats; this module rewrites them:

- a conversion between a 16-bit float and f64 goes through f32. For truncations this is what
  PyTorch does (`c10::Half`/`c10::BFloat16` are built from a float: `.to()` from float64 rounds
  twice); for extensions it is exact;
- f32 ↔ f16 become integer operations on the bits (below);
- f32 ↔ bf16 are left to `arith-expand{include-bf16=true}`, which runs next.

Rounding is to nearest, ties to even, as PyTorch's and the hardware's; overflow gives ±inf,
subnormals are kept (no flush to zero). A NaN stays a NaN with its sign and top payload bits,
quieted (what F16C's `vcvtps2ph`/`vcvtph2ps` give). PyTorch itself is not consistent on NaN
bits (its scalar and vectorized paths differ), so only the NaN-ness of a NaN is comparable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import arith

HALF_TYPES = ("f16", "bf16")

# Bits of f32 (`_F32_*`) and f16 (`_F16_*`) values and fields.
_F32_ABS_MASK = 0x7FFFFFFF
_F32_INF = 0x7F800000
_F32_QUIET = 0x00400000
_F32_MIN_F16_NORMAL = 0x38800000  # 2**-14, the smallest normal f16, as f32 bits
_F32_TO_F16_REBIAS = 0xC8000FFF  # (15 - 127) << 23 plus the rounding bias 0xfff, mod 2**32
_F16_INF = 0x7C00
_F16_QUIET_NAN = 0x7E00
_F16_SIGN = 0x8000
_F16_TO_F32_REBIAS = (127 - 15) << 23
_TWO_TO_MINUS_24 = 2.0**-24  # the f16 subnormal step


def expand_half_float_conversions(module: Any) -> int:
    """Rewrite the module's scalar `arith.truncf`/`arith.extf` ops to or from f16 and bf16 (see
    the module docstring); returns how many were rewritten. Runs in place, in the module's
    context; run it after the 16-bit arithmetic has been moved to f32."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in ("arith.truncf", "arith.extf") and _touches_half(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    with module.context:
        return sum(_rewrite(op) for op in found)


def _touches_half(op: ir.Operation) -> bool:
    return str(op.operands[0].type) in HALF_TYPES or str(op.results[0].type) in HALF_TYPES


def _rewrite(op: ir.Operation) -> bool:
    source, result = str(op.operands[0].type), str(op.results[0].type)
    # Vectors and tensors do not reach here (the pipeline has made everything scalar first);
    # f32 ↔ bf16 is arith-expand's.
    if {source, result} == {"f32", "bf16"} or not {source, result} <= {*HALF_TYPES, "f32", "f64"}:
        return False
    with op.location, ir.InsertionPoint(op):
        value = op.operands[0]
        if source == "f64":
            value = arith.truncf(ir.F32Type.get(), value)
        elif source == "f16":
            value = _f16_to_f32(value)
        elif source == "bf16":
            value = arith.extf(ir.F32Type.get(), value)
        if result == "f64":
            value = arith.extf(ir.F64Type.get(), value)
        elif result == "f16":
            value = _f32_to_f16(value)
        elif result == "bf16":
            value = arith.truncf(ir.BF16Type.get(), value)
        op.results[0].replace_all_uses_with(value)
    op.erase()
    return True


def _builder(width: int) -> tuple[Any, Callable[[int], Any]]:
    ty = ir.IntegerType.get_signless(width)
    return ty, lambda v: arith.constant(ty, v)


def _f32_to_f16(x: ir.Value) -> ir.Value:
    """f32 → f16, rounded to nearest even, on the bits."""
    i32, c = _builder(32)
    bits = arith.bitcast(i32, x)
    sign = arith.andi(arith.shrui(bits, c(16)), c(_F16_SIGN))
    mag = arith.andi(bits, c(_F32_ABS_MASK))
    top10 = arith.andi(arith.shrui(mag, c(13)), c(0x3FF))  # the mantissa bits f16 keeps

    # Normal results: rebias the exponent, round at bit 13 (the bias 0xfff plus the lowest kept
    # bit: ties go to even), clamp what rounds past the largest finite value to inf.
    odd = arith.andi(top10, c(1))
    normal = arith.shrui(arith.addi(arith.addi(mag, c(_F32_TO_F16_REBIAS)), odd), c(13))
    normal = arith.minui(normal, c(_F16_INF))

    # Subnormal results (and zero): the mantissa with its implicit bit, shifted right by
    # 126 - exponent (at least 14), rounded to nearest even. Shifts of 25 and more give 0; the
    # shift stays below 32 so that it is defined.
    mantissa = arith.ori(arith.andi(mag, c(0x7FFFFF)), c(0x800000))
    shift = arith.minui(arith.subi(c(126), arith.shrui(mag, c(23))), c(31))
    kept = arith.shrui(mantissa, shift)
    dropped = arith.andi(mantissa, arith.subi(arith.shli(c(1), shift), c(1)))
    half = arith.shli(c(1), arith.subi(shift, c(1)))
    ugt, eq = arith.CmpIPredicate.ugt, arith.CmpIPredicate.eq
    tie_to_odd = arith.andi(
        arith.cmpi(eq, dropped, half), arith.cmpi(eq, arith.andi(kept, c(1)), c(1))
    )
    round_up = arith.ori(arith.cmpi(ugt, dropped, half), tie_to_odd)
    subnormal = arith.addi(kept, arith.extui(i32, round_up))

    nan = arith.ori(top10, c(_F16_QUIET_NAN))
    is_nan = arith.cmpi(ugt, mag, c(_F32_INF))
    is_normal = arith.cmpi(arith.CmpIPredicate.uge, mag, c(_F32_MIN_F16_NORMAL))
    out = arith.select(is_nan, nan, arith.select(is_normal, normal, subnormal))
    i16 = ir.IntegerType.get_signless(16)
    return arith.bitcast(ir.F16Type.get(), arith.trunci(i16, arith.ori(out, sign)))


def _f16_to_f32(x: ir.Value) -> ir.Value:
    """f16 → f32 (exact), on the bits; a signaling NaN comes back quiet."""
    i32, c = _builder(32)
    f32 = ir.F32Type.get()
    bits = arith.extui(i32, arith.bitcast(ir.IntegerType.get_signless(16), x))
    sign = arith.shli(arith.andi(bits, c(_F16_SIGN)), c(16))
    mag = arith.andi(bits, c(0x7FFF))
    exponent = arith.shrui(mag, c(10))
    mantissa = arith.andi(mag, c(0x3FF))

    normal = arith.addi(arith.shli(mag, c(13)), c(_F16_TO_F32_REBIAS))
    # Subnormals and zero: mantissa * 2**-24 is exact in f32 (and never subnormal there).
    scaled = arith.mulf(arith.uitofp(f32, mantissa), arith.constant(f32, _TWO_TO_MINUS_24))
    subnormal = arith.bitcast(i32, scaled)
    eq = arith.CmpIPredicate.eq
    is_nan = arith.cmpi(arith.CmpIPredicate.ne, mantissa, c(0))
    quiet = arith.select(is_nan, c(_F32_QUIET), c(0))
    inf_nan = arith.ori(arith.ori(arith.shli(mantissa, c(13)), c(_F32_INF)), quiet)
    out = arith.select(
        arith.cmpi(eq, exponent, c(0x1F)), inf_nan,
        arith.select(arith.cmpi(eq, exponent, c(0)), subnormal, normal),
    )
    return arith.bitcast(f32, arith.ori(out, sign))
