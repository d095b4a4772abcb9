"""`workspace/executeCommand`: export a module, export a reproducer, explain inputs, verify.

Arguments and answers are typed in `protocol.lsp` (`COMMANDS`): one argument object each,
structured here by the server's converter. Where an export or a reproducer may go is
`project/write_policy.py`'s, checked here before any job is sent: never over a source, only
inside the workspace folders unless `chosenByUser` (the path came from the client's dialog),
relative paths against the source file's folder; an IREE target exports its compiled module
(`.vmfb`, for the `ireeArchs` architecture). An export never replaces an existing file
unless `overwrite` is true (the client asks the user first); without `output` the file goes
next to the source under a name that is not taken yet. Verify's verdict also becomes the
module's Verify lens and, when it fails, diagnostics. (`torchMlirLens.showIr` is the client's
own command: the server does not register it.)
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from torch_mlir_lens.lsp.checks.requested_module import document_and_module, module_job
from torch_mlir_lens.lsp.checks.verify_run import verify
from torch_mlir_lens.lsp.document import Document
from torch_mlir_lens.lsp.features import inputs_explained
from torch_mlir_lens.lsp.wire import convert
from torch_mlir_lens.lsp.wire.request_io import REQUEST_FAILED, lens_error, single_arg
from torch_mlir_lens.project import write_policy
from torch_mlir_lens.protocol import lsp as lens_types
from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.rules.iree_targets import is_iree_target
from torch_mlir_lens.rules.targets import TARGETS

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

log = logging.getLogger(__name__)

EXPORT = lens_types.EXPORT_MODULE
EXPORT_REPRO = lens_types.EXPORT_REPRO
EXPLAIN_INPUTS = lens_types.EXPLAIN_INPUTS
VERIFY = lens_types.VERIFY_COMMAND


async def export_module(session: Session, *args: Any) -> lens_types.ExportModuleResponse:
    """`torchMlirLens.exportModule`: write a module's IR to a file."""
    return await export(session, single_arg(session.client, args, lens_types.ExportModuleArgs))


async def export_repro(session: Session, *args: Any) -> lens_types.ExportReproResponse:
    """`torchMlirLens.exportRepro`: write a reproducer of a failing step."""
    return await repro(session, single_arg(session.client, args, lens_types.ExportReproArgs))


def explain_inputs(session: Session, *args: Any) -> lens_types.ExplainInputsResponse:
    """`torchMlirLens.explainInputs`: where a module's inputs come from, or how to give some."""
    return explain(session, single_arg(session.client, args, lens_types.ModuleArgs))


async def verify_module(session: Session, *args: Any) -> lens_types.VerifyResponse:
    """`torchMlirLens.verify`: run Verify and show its verdict."""
    return await verify(session, single_arg(session.client, args, lens_types.VerifyParams))


def _target(session: Session, target: str | None) -> str:
    target = target or session.settings.default_target
    if target not in TARGETS or target == "fx":
        raise JsonRpcInvalidParams(f"unknown target {target!r}")
    return target


def workspace_roots(session: Session) -> list[str]:
    """The workspace folders as paths (the first one alone if the client sent none)."""
    return list(session.workspace_folders)


def refused(err: write_policy.WriteRefused) -> JsonRpcException:
    """A write the policy refuses, as the command's JSON-RPC error (nothing was written)."""
    return JsonRpcException(message=err.message, code=REQUEST_FAILED,
                            data={"kind": "write-refused", "path": err.path,
                                  "reason": err.reason})


def _as_path(value: str) -> str:
    """A `file:` URI's path, else the value (a path; other schemes the policy refuses)."""
    if value.startswith("file:"):
        path = convert.uri_to_path(value)
        if path:
            return path
    return value


def _default_folder(doc: Document, roots: list[str], argument: str) -> str:
    """Where a write without a destination goes: beside the source, else the first folder."""
    folder = os.path.dirname(doc.path) if doc.path else (roots[0] if roots else None)
    if folder is None:
        raise JsonRpcInvalidParams(f"`{argument}` is required for an unsaved file")
    return folder


def _default_stem(doc: Document, module: str, target: str) -> str:
    """`<file stem>.<module>.<target>`: the name of a write without a destination."""
    return f"{os.path.splitext(os.path.basename(doc.path or module))[0]}.{module}.{target}"


def free_path(folder: str, stem: str, suffix: str) -> str:
    """`folder/stem.suffix`, or `stem-2.suffix`, … : the first name not taken."""
    candidate = os.path.join(folder, stem + suffix)
    n = 2
    while os.path.exists(candidate):
        candidate = os.path.join(folder, f"{stem}-{n}{suffix}")
        n += 1
    return candidate


async def export(session: Session,
                 args: lens_types.ExportModuleArgs) -> lens_types.ExportModuleResponse:
    """Write the module's IR at a target to a file (atomic; no silent overwrite)."""
    doc, _info, module = document_and_module(session, args.uri, args.module)
    target = _target(session, args.target)
    compiled = is_iree_target(target)  # IREE's compiled module (.vmfb), not IR
    bytecode = args.bytecode and not compiled
    roots = workspace_roots(session)
    if args.output:
        requested = _as_path(args.output)
    else:
        stem = _default_stem(doc, module, target)
        requested = free_path(_default_folder(doc, roots, "output"), stem,
                              ".vmfb" if compiled else ".mlirbc" if bytecode else ".mlir")
    try:
        output = write_policy.check_export(requested, source=doc.path, roots=roots,
                                           chosen_by_user=args.chosen_by_user,
                                           compiled=compiled)
    except write_policy.WriteRefused as err:
        raise refused(err) from None
    if os.path.exists(output) and not args.overwrite:
        raise JsonRpcException(
            message=f"{output} exists; pass overwrite: true to replace it",
            code=REQUEST_FAILED, data={"kind": "exists", "path": output},
        )
    job = module_job(session, doc, module)
    arch = session.settings_for(doc.path).iree_archs.get(target) if compiled else None
    try:
        result = await session.host.call(
            f"exporting {module}",
            lambda engine: engine.export(job, target, output, bytecode, iree_arch=arch),
            target=target)
    except LensError as err:
        raise lens_error(err) from None
    path = result.path
    log.info("exported %s (%s) to %s", module, target, path)
    left_out = f"; {result.left_out}" if result.left_out else ""
    session.show(f"Exported {module} ({TARGETS[target].title}) to {path}{left_out}")
    return lens_types.ExportModuleResponse(path=path, uri=convert.path_to_uri(path),
                                           bytes=result.bytes, left_out=result.left_out)


async def repro(session: Session,
                args: lens_types.ExportReproArgs) -> lens_types.ExportReproResponse:
    """Write the `.mlir` input and the `torch-mlir-opt` command reproducing a lowering."""
    doc, _info, module = document_and_module(session, args.uri, args.module)
    target = _target(session, args.target)
    roots = workspace_roots(session)
    if args.output_dir:
        requested = _as_path(args.output_dir)
    else:
        # Beside the source, in a new folder: the repro holds every weight, which must not
        # pile up in the system temp folder, and no existing file may be replaced.
        stem = _default_stem(doc, module, target)
        requested = free_path(_default_folder(doc, roots, "outputDir"), stem, ".repro")
    try:
        output_dir = write_policy.check_repro_dir(requested, source=doc.path, roots=roots,
                                                  chosen_by_user=args.chosen_by_user)
    except write_policy.WriteRefused as err:
        raise refused(err) from None
    job = module_job(session, doc, module)

    try:
        result = await session.host.call(f"writing a reproducer for {module}",
                                        lambda engine: engine.repro(job, target, output_dir))
    except LensError as err:
        raise lens_error(err) from None
    return lens_types.ExportReproResponse(mlir_path=result.mlir_path,
                                          mlir_uri=convert.path_to_uri(result.mlir_path),
                                          command=result.command)


def explain(session: Session,
            args: lens_types.ModuleArgs) -> lens_types.ExplainInputsResponse:
    """Where the module's example inputs come from, or how to give it some (with the comment
    to paste), judged on the text the server holds now (`inputs_explained`)."""
    doc, info, module = document_and_module(session, args.uri, args.module)
    said = inputs_explained.explain(info, module, doc.text)
    session.show(said.message)
    return lens_types.ExplainInputsResponse(message=said.message, template=said.template,
                                            inputs=said.inputs)

