"""iree-compile's output read into diagnostics (worker/iree/compile_errors.py), on transcripts
of IREE 3.13's own output (trimmed to their diagnostics and pass headers; the paths are this
test's): an error a pass made at an unknown location takes the user line of the error that
wraps it, library lines go to related information, the linker's words replace "see above",
and an architecture IREE lacks is told apart from an error of the module."""

from __future__ import annotations

from pathlib import Path

from torch.nn.modules import linear

from torch_mlir_lens.worker.ir.locations import UserFiles
from torch_mlir_lens.worker.iree.compile_errors import diagnostics, read_errors


def _spirv_f64(user: str, library: str) -> str:
    """A Llama's RMSNorm epsilon (f64) on Vulkan, f64 kept, compiled on one thread."""
    return f'''\
<unknown>:0: error: failed to legalize operation 'arith.constant': %18 = "arith.constant"() \
<{{value = 9.9999999999999995E-7 : f64}}> : () -> f64 loc(unknown)
<unknown>:0: note: see current operation: %18 = "arith.constant"() <{{value = 1.0E-6 : f64}}>
// -----// IR Dump After ConvertToSPIRVPass Failed: iree-convert-to-spirv{{index-bits=32}} \
//----- //
module {{
  func.func @main_dispatch_0() {{
  }}
}}
{library}:64:0: error: failed to run translation of source executable to target executable \
for backend #hal.executable.target<"vulkan-spirv", "vulkan-spirv-fb">
{library}:295:0: note: called from
{user}:41:0: note: called from
// -----// IR Dump After TranslateTargetExecutableVariantsPass Failed: \
iree-hal-translate-target-executable-variants{{target=vulkan-spirv}} //----- //
'''


def test_an_error_without_location_lands_on_the_line_of_the_error_wrapping_it(
        tmp_path: Path) -> None:
    user, library = str(tmp_path / "model.py"), "/site-packages/transformers/modeling_llama.py"
    errors = read_errors(_spirv_f64(user, library))
    assert [e.pass_name for e in errors] == ["iree-convert-to-spirv",
                                             "iree-hal-translate-target-executable-variants"]
    (diag,) = diagnostics(errors, UserFiles([user]), target="iree-vulkan", title="IREE Vulkan")
    assert (diag.file, diag.line, diag.kind) == (user, 41, "compile-error")
    assert diag.message.startswith("IREE Vulkan cannot compile this line: failed to legalize "
                                   "operation 'arith.constant'")
    assert "loc(unknown)" not in diag.message  # the op's own location is noise here
    assert diag.message.endswith("(in IREE's pass `iree-convert-to-spirv`)")


def test_the_linkers_words_say_what_see_above_meant(tmp_path: Path) -> None:
    user = str(tmp_path / "model.py")
    torch_file = linear.__file__
    transcript = f'''\
iree-lld: error: undefined symbol: tanh
>>> referenced by -:20
Linking failed; escaped command line returned exit code 256:
{torch_file}:134:0: error: failed to link executable and generate target dylib (check above \
for more specific error messages)
{user}:20:0: note: called from
{torch_file}:134:0: error: failed to serialize executable for target backend llvm-cpu
{user}:20:0: note: called from
// -----// IR Dump After SerializeTargetExecutablesPass Failed: \
iree-hal-serialize-target-executables{{target=llvm-cpu}} //----- //
'''
    (diag,) = diagnostics(read_errors(transcript), UserFiles([user]), target="iree-cpu",
                          title="IREE CPU")
    assert diag.line == 20 and not diag.related  # torch's own files are no library line
    assert diag.message == (
        "IREE CPU cannot compile this line: failed to link executable and generate target "
        "dylib (iree-lld: undefined symbol: tanh) (in IREE's pass "
        "`iree-hal-serialize-target-executables`)")


def test_an_architecture_iree_lacks_is_told_apart(tmp_path: Path) -> None:
    user = str(tmp_path / "model.py")
    refused = read_errors(f"{user}:23:0: error: missing GPU target in #hal.executable.target\n")
    unknown = read_errors("<unknown>:0: error: Unknown ROCM target 'gfx1234'\n")
    module = read_errors(f"{user}:23:0: error: 'spirv.GL.Tanh' op operand #0 must be 16/32-bit "
                         "float\n")
    assert refused[0].refuses_architecture() and unknown[0].refuses_architecture()
    assert not module[0].refuses_architecture()
