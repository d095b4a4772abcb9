"""What the server's commands and custom requests share at the wire: a command's one argument
object structured in, an engine error sent out as the request's JSON-RPC error."""

from __future__ import annotations

from typing import Any, TypeVar

import cattrs
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from torch_mlir_lens.lsp.wire import convert
from torch_mlir_lens.lsp.wire.client import Client
from torch_mlir_lens.protocol.results import ErrorKind, LensError

REQUEST_FAILED = -32803  # LSP ErrorCodes.RequestFailed
CONTENT_MODIFIED = -32801

_Args = TypeVar("_Args")


def single_arg(client: Client, args: tuple[Any, ...], cls: type[_Args]) -> _Args:
    """The command's one argument object, structured as `cls` (camelCase on the wire).

    Not pygls's own structuring of annotated command parameters: that answers a bad argument
    with the converter's bare exception text; this one names the field.
    """
    arg = args[0] if args else None
    if not isinstance(arg, dict):  # lsprotocol hands the arguments (LSPAny) as parsed JSON
        raise JsonRpcInvalidParams("expected one object argument: {uri, module, ...}")
    try:
        structured: _Args = client.structure(arg, cls)
    except cattrs.ClassValidationError as exc:
        details = "; ".join(cattrs.transform_error(exc, path="argument"))
        raise JsonRpcInvalidParams(f"invalid command argument: {details}") from None
    return structured


def lens_error(err: LensError) -> JsonRpcException:
    """A LensError as the JSON-RPC error of a request: message plus {kind, uri, line}."""
    code = CONTENT_MODIFIED if err.kind == ErrorKind.CANCELLED else REQUEST_FAILED
    data = {
        "kind": err.kind,
        "uri": convert.path_to_uri(err.file) if err.file else None,
        "line": err.line,
    }
    return JsonRpcException(message=err.message, code=code, data=data)
