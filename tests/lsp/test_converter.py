"""The server's converter sends plain dicts as they are, with the same JSON as pygls's."""

from __future__ import annotations

import enum
import json
from typing import Any

from lsprotocol import types
from pygls.protocol import JsonRPCResponseMessage, default_converter

from torch_mlir_lens.lsp.wire.json_rpc import lens_converter


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


INITIALIZE = {
    "processId": 1, "rootUri": "file:///w", "trace": "off",
    "workspaceFolders": [{"uri": "file:///w", "name": "w"}],
    "initializationOptions": {"trusted": True, "settings": {"diagnostics": {"mode": "onSave"}}},
    "capabilities": {
        "workspace": {"configuration": True, "workspaceFolders": True,
                      "codeLens": {"refreshSupport": True},
                      "executeCommand": {"dynamicRegistration": False}},
        "window": {"workDoneProgress": True, "showMessage": {}},
        "textDocument": {
            "hover": {"contentFormat": ["markdown", "plaintext"]},
            "publishDiagnostics": {"versionSupport": True, "tagSupport": {"valueSet": [1, 2]}},
            "codeAction": {"codeActionLiteralSupport": {
                "codeActionKind": {"valueSet": ["quickfix", "refactor"]}}},
            "synchronization": {"didSave": True, "willSave": False},
        },
        "notebookDocument": {"synchronization": {"dynamicRegistration": False}},
    },
}


def test_lazily_resolved_types_read_messages_as_pygls_does() -> None:
    from lsprotocol import _hooks

    flag = _hooks._resolved_forward_references
    lens = lens_converter()
    assert _hooks._resolved_forward_references == flag  # no effect on other converters
    plain = default_converter()
    ours = lens.structure(INITIALIZE, types.InitializeParams)
    theirs = plain.structure(INITIALIZE, types.InitializeParams)
    assert ours == theirs
    assert tuple(ours.capabilities.text_document.hover.content_format) == (
        types.MarkupKind.Markdown, types.MarkupKind.PlainText)
    assert _wire(lens, ours) == _wire(plain, theirs)


def test_a_class_whose_annotations_cannot_be_resolved_fails_as_with_pygls() -> None:
    # Lazy resolution must not change how such a class ends: as with pygls's converter.
    import attrs as attrs_lib
    import pytest

    @attrs_lib.define
    class Odd:
        name: str
        later: NoSuchType | None = None  # type: ignore[name-defined]  # noqa: F821

    for converter in (default_converter(), lens_converter()):
        with pytest.raises(NameError):
            converter.unstructure(Odd("x"))
