"""What a lowering hands back: printed IR with its source map, and files written to disk.

    fx_result(module_name, program, users)   the `fx` target: the ATen graph as PyTorch prints it
    render(module_op, users, ...)             IR text, weights elided / locations stripped, + map
    lower_result(module_name, target, ...)    a target's LowerResult from its rendered IR
    module_bytes(module_op, ...)              the text or bytecode an export writes
    write_repro(...)                          a lowering's input IR + its torch-mlir-opt command
    atomic_write(path, data)                  temp file in the same folder + os.replace
    refuse_source(path, source)               the write policy's last check, where it writes
"""

from __future__ import annotations

import io
import os
import re
import shlex
from typing import Any

from torch_mlir_lens.project import write_policy
from torch_mlir_lens.protocol.frames import FrameTable, SourceFrame
from torch_mlir_lens.protocol.results import (
    ErrorKind,
    IrLineMapping,
    LensDiagnostic,
    LensError,
    LowerResult,
    PassIr,
)
from torch_mlir_lens.system.atomic_write import write_atomically
from torch_mlir_lens.worker.culprits import partial
from torch_mlir_lens.worker.ir import ir_text
from torch_mlir_lens.worker.ir.library_frames import library_files
from torch_mlir_lens.worker.ir.literals import mark_elided
from torch_mlir_lens.worker.ir.locations import UserFiles
from torch_mlir_lens.worker.rewrites.apply import made_by
from torch_mlir_lens.worker.stages.torch_export import FILE_LINE

_ASSIGN = re.compile(r"^\s*(\w+)(?:\s*:\s*\"[^\"]*\")?\s*=")


def fx_text_and_map(program: Any, users: UserFiles
                    ) -> tuple[str, list[IrLineMapping], FrameTable]:
    """The program's ATen graph as PyTorch prints it, each node line mapped via stack_trace
    (user frames in the map, chains through library code in the frame table)."""
    text = program.graph_module.print_readable(print_output=False)
    nodes = {n.name: n for n in program.graph.nodes}
    mapping: list[IrLineMapping] = []
    table = FrameTable()
    libraries = library_files()
    for index, line in enumerate(text.splitlines(), start=1):
        m = _ASSIGN.match(line)
        node = nodes.get(m.group(1)) if m else None
        if node is None:
            continue
        trace = node.meta.get("stack_trace") or ""
        frames = [(f, int(n)) for f, n in FILE_LINE.findall(trace) if f in users]
        for depth, (file, lineno) in enumerate(reversed(frames)):  # traceback: outer first
            mapping.append(IrLineMapping(index, file, lineno, depth))
        chain = [SourceFrame(f, int(n), f not in users) for f, n in reversed(
            FILE_LINE.findall(trace)) if f in users or libraries.is_library(f)]
        if any(f.library for f in chain):
            table.add(index, chain)
    return text, mapping, table


def fx_result(module_name: str, program: Any, users: UserFiles) -> LowerResult:
    """The `fx` target's result: the printed graph, its map and op counts (always ok)."""
    text, mapping, frames = fx_text_and_map(program, users)
    lines = {m.ir_line for m in mapping}
    assigns = sum(1 for ln in text.splitlines() if _ASSIGN.match(ln))
    stats = {"ops": assigns, "mapped_ops": len(lines), "unmapped_ops": assigns - len(lines),
             "unmapped_op_names": [], "ir_bytes": len(text.encode())}
    return LowerResult(module_name, "fx", True, text, mapping, [], stats, frames=frames)


def render(module_op: Any, users: UserFiles, *, keep_weights: bool,
           debug_info: bool) -> ir_text.RenderedIr:
    """The IR as the panes show it: weights elided unless kept, locations unless debug_info."""
    asm = ir_text.print_asm(module_op, keep_weights=keep_weights)
    if not keep_weights:  # say plainly which weights the text does not hold
        asm = mark_elided(asm)
    return ir_text.render(asm, users, strip_locations=not debug_info, mark=rewrite_note)


def rewrite_note(chains: tuple[Any, ...]) -> str | None:
    """"rewrite erfinv" for an op a rewrite made (its location has the rewrite's frame)."""
    name = made_by(frame for chain in chains for frame in chain)
    return f"rewrite {name}" if name else None


def lower_result(module_name: str, target: str, ok: bool, rendered: ir_text.RenderedIr | None,
                 diagnostics: list[LensDiagnostic], *, passes: list[PassIr] | None,
                 symbols: set[str] | None, module_file: str | None,
                 module_line: int | None) -> LowerResult:
    """A target's LowerResult. Diagnostics without a line go to the module's class line (when
    known); with `symbols` (rejected ops kept as calls) the IR is a partial lowering's:
    decorated with its header, and the calls mapped to their lines."""
    if module_file is not None:
        for d in diagnostics:
            if d.file is None:
                d.file, d.line = module_file, module_line
    if rendered is not None and symbols is not None:
        rendered = partial.decorate(rendered, diagnostics, target, symbols, module_file)
    return LowerResult(
        module=module_name, target=target, ok=ok,
        ir=rendered.text if rendered else "",
        map=rendered.map if rendered else [],
        frames=rendered.frames if rendered else FrameTable(),
        diagnostics=diagnostics, stats=rendered.stats if rendered else {},
        passes=passes, partial=symbols is not None,
    )


def module_bytes(module_op: Any, *, bytecode: bool, debug_info: bool) -> bytes:
    """What an export writes: MLIR bytecode, or the text with every weight (it must re-parse)."""
    if bytecode:
        buf = io.BytesIO()
        module_op.operation.write_bytecode(buf)
        return buf.getvalue()
    return str(module_op.operation.get_asm(enable_debug_info=debug_info)).encode()


def write_repro(source_op: Any, pipeline: str, output_dir: str, *, module_name: str,
                target: str, stage: str) -> dict[str, str]:
    """Write `source_op` (with locations) to `output_dir` and the command that lowers it."""
    os.makedirs(output_dir, exist_ok=True)
    safe = re.sub(r"[^\w.-]+", "_", module_name) or "module"
    path = os.path.join(output_dir, f"{safe}.{target}.{stage}.mlir")
    atomic_write(path, str(source_op.get_asm(enable_debug_info=True)).encode())
    command = f"torch-mlir-opt -pass-pipeline={shlex.quote(pipeline)} {shlex.quote(path)}"
    return {"mlir_path": path, "command": command}


def refuse_source(path: str, source: str | None = None) -> None:
    """LensError (write-error) for a write onto Python source or the module's own file.

    The language server and the CLI refuse these before sending the job; this is the same
    rule again where the bytes are written, so no other way in can replace a source."""
    try:
        write_policy.refuse_source(path, source=source)
    except write_policy.WriteRefused as err:
        raise LensError(ErrorKind.WRITE_ERROR, err.message) from None


def atomic_write(path: str, data: bytes) -> int:
    """Write `data` to `path` via a temp file in the same folder + os.replace; return size.

    Never over Python source or anything but a regular file (`refuse_source`)."""
    refuse_source(path)
    try:
        return write_atomically(path, data, sync=True)
    except OSError as exc:
        raise LensError(ErrorKind.WRITE_ERROR, f"cannot write {path}: {exc}") from exc
