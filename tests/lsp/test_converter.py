"""The server's converter sends plain dicts as they are, with the same JSON as pygls's."""

from __future__ import annotations

import enum
import json
from typing import Any

from lsprotocol import types
from pygls.protocol import JsonRPCResponseMessage, default_converter

from torch_mlir_lens.lsp.protocol import lens_converter


def _wire(converter: Any, message: Any) -> str:
    """What pygls writes: unstructure, then json.dumps with its serializer as the default."""
    def default(value: Any) -> Any:
        if hasattr(value, "__attrs_attrs__"):
            return converter.unstructure(value)
        if isinstance(value, enum.Enum):
            return value.value
        return value.__dict__

    return json.dumps(converter.unstructure(message), default=default, sort_keys=True)


def test_same_json_as_pygls_for_lsp_objects_and_plain_dicts() -> None:
    rng = types.Range(start=types.Position(line=3, character=0),
                      end=types.Position(line=3, character=0))
    fix = types.CodeAction(
        title="Set example inputs", kind=types.CodeActionKind.QuickFix,
        edit=types.WorkspaceEdit(changes={"file:///m.py": [types.TextEdit(range=rng,
                                                                          new_text="# x\n")]}),
        data={"uri": "file:///m.py", "module": "M"},
    )
    lowered = {"ir": "func.func @main()", "map": [[1, "/m.py", 4, 0]],
               "nested": {"range": rng, "severity": types.DiagnosticSeverity.Error}}
    message = JsonRPCResponseMessage(id=7, jsonrpc="2.0", result=[fix, lowered])
    assert _wire(lens_converter(), message) == _wire(default_converter(), message)


def test_a_plain_dict_result_is_not_copied() -> None:
    result = {"ir": "x", "map": [[1, "/m.py", 2, 0]]}
    unstructured = lens_converter().unstructure(
        JsonRPCResponseMessage(id=1, jsonrpc="2.0", result=result))
    assert unstructured["result"] is result
