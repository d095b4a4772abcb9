"""Why the JIT could not link: the symbols LLVM did not find, each with the reason it was needed.

`ExecutionEngine.lookup` fails with a bare "Unknown function main"; the symbols that were missing
are only in what LLVM's JIT prints to native fd 2 ("JIT session error: Symbols not found:
[ __truncsfbf2 ]"). `captured_native_stderr` catches that text (`jit.link` says when it is safe
to); `link_error_message` turns it into a sentence for the user.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

_SYMBOLS_NOT_FOUND = re.compile(r"Symbols not found: \[([^\]]*)\]")

# compiler-rt/libgcc builtins LLVM calls for 16-bit float conversions on CPUs without
# F16C/AVX512-FP16 (half) or AVX512-BF16/AVX-NE-CONVERT (bfloat16) instructions:
# `__truncsfbf2`, `__extendhfsf2`, `__truncdfhf2`, `__gnu_h2f_ieee`, `__gnu_f2h_ieee`, ...
_HALF_BUILTIN = re.compile(r"__(?:trunc|extend)[a-z]*(?:hf|bf)[a-z0-9]*|__gnu_(?:h2f|f2h)_ieee")


@contextmanager
def captured_native_stderr() -> Iterator[list[str]]:
    """Collect what native code writes to fd 2 while the block runs (the list gets the text when
    the block ends); it does not reach fd 2. Only around a step known not to crash: a dying
    process's last words would be lost with it."""
    sys.stderr.flush()
    saved = os.dup(2)
    text: list[str] = []
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield text
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text.append(sink.read().decode("utf-8", "replace"))


def missing_symbols(llvm_text: str) -> list[str]:
    """The symbols named in LLVM's "Symbols not found: [ a, b ]" lines, first seen first."""
    found: list[str] = []
    for match in _SYMBOLS_NOT_FOUND.finditer(llvm_text):
        for name in match.group(1).replace(",", " ").split():
            if name not in found:
                found.append(name)
    return found


def why_missing(symbol: str, declared: Iterable[str] = ()) -> str:
    """A short reason a compiled module needed `symbol` ("`__truncsfbf2` (a bf16 ...)")."""
    if _HALF_BUILTIN.fullmatch(symbol):
        kind = "a bf16" if "bf" in symbol else "an f16"
        return f"`{symbol}` ({kind} conversion this CPU has no instruction for)"
    if symbol == "memrefCopy":
        return f"`{symbol}` (from MLIR's C runner utils library, which this process lacks)"
    if symbol in set(declared):
        return f"`{symbol}` (the module calls it but does not define it, nor does this process)"
    return f"`{symbol}` (neither in the compiled module nor in this process)"


def link_error_message(
    function: str, llvm_text: str, declared: Iterable[str], error: str = ""
) -> str:
    """The message of a failed link of `function`: each missing symbol and why, from LLVM's text
    (`declared`: the module's external functions); LLVM's own error when it names no symbol."""
    missing = missing_symbols(llvm_text)
    if missing:
        reasons = ", ".join(why_missing(s, declared) for s in missing)
        noun = "symbol" if len(missing) == 1 else "symbols"
        return f"JIT could not link {function}: {noun} not found: {reasons}"
    detail = llvm_text.strip().splitlines()[-1] if llvm_text.strip() else error
    return f"JIT could not link {function}: {detail or 'unknown LLVM error'}"
