"""JSON-RPC rules pygls leaves to the server: life-cycle gates, typed custom messages.

- Before `initialize`, every request but `initialize` is answered ServerNotInitialized
  (-32002) and notifications other than `exit` are dropped.
- After `shutdown`, requests are answered InvalidRequest (-32600) instead of going
  unanswered, so a client never waits for a reply that cannot come.
- A request whose params do not fit its method (or a custom request without params, which
  pygls 2.1 cannot structure) is answered InvalidParams (-32602); pygls would only log it.
- A JSON value that is not a JSON-RPC 2.0 message (not an object, a batch array, an id that
  is not an integer or a string, no method, ...) is answered InvalidRequest (-32600), with
  its id when it has a valid one, else id null (`receive`, the stdio transport's entry).
- A second `initialize` is answered InvalidRequest; the first one's state stands.
- Error answers carry no Python traceback (pygls puts one in an internal error's `data`; it
  goes to stderr instead).
- The custom requests and notifications (`protocol.lsp`) are structured into their typed
  params by the same converter as the standard ones: their message types are made here and
  handed to pygls through its public hooks (`converter_factory`, `get_message_type`); their
  typed answers are written camelCase by the same converter.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import types as types_module
import typing
from collections.abc import Callable
from typing import Any

import attrs
import cattrs
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import LanguageServerProtocol, default_converter

from torch_mlir_lens.lsp.wire.answers import camel
from torch_mlir_lens.protocol import lsp as lens_types

log = logging.getLogger(__name__)


def lens_converter() -> Any:
    """pygls's converter, built faster, writing the custom answers' big lists faster.

    Start-up: lsprotocol resolves the type annotations of all ~560 of its classes before the
    first message (55-90 ms, on the way to the first code lenses; this converter: ~7 ms);
    here each class is resolved when cattrs first makes a hook for it, i.e. only the few a
    session uses.

    Plain dicts inside a result (`data` fields, an open-ended map) pass as they are: cattrs
    would copy them key by key before `json.dumps` walks them again. Anything else inside
    such a dict (an lsprotocol object, an enum) still reaches pygls's serializer, which
    `json.dumps` calls for every value it cannot encode.
    """
    from lsprotocol import _hooks

    # The one class whose resolved field type lsprotocol's hook registration reads.
    _resolved(types.NotebookCellTextDocumentFilter)
    # Skip the resolve-everything step for this converter only: another one made in the same
    # process (a client's, in tests) still gets it. Why a private flag: neither lsprotocol
    # (2025.0.0, the latest release) nor pygls (2.1.1) has a public way to build the LSP
    # converter without it: `lsprotocol.converters.get_converter` (which pygls's
    # `default_converter` calls) always runs `_hooks.register_hooks`, whose first step resolves
    # every class unless this module flag says it was done; the hook registrations after it
    # are private functions too. (Registering the custom methods' types needs nothing private:
    # `converter_factory` and `get_message_type` below are pygls's public hooks.) Should a
    # release drop the flag, the converter is built the ordinary (slower) way.
    flag = "_resolved_forward_references"
    skipped = getattr(_hooks, flag, None)
    if skipped is not None:
        setattr(_hooks, flag, True)
    try:
        converter = default_converter()
    finally:
        if skipped is not None:
            setattr(_hooks, flag, skipped)
    # Only for a class not resolved yet: resolve it, then let the converter pick the hook it
    # would have picked anyway (lsprotocol's renaming / omitting ones included).
    converter.register_structure_hook_factory(
        _unresolved, lambda cls: converter.get_structure_hook(_resolved(cls)))
    converter.register_unstructure_hook_factory(
        _unresolved, lambda cls: converter.get_unstructure_hook(_resolved(cls)))
    converter.register_unstructure_hook(dict, lambda value: value)
    _register_answer_hooks(converter)
    _register_strict_params(converter)
    for message in _CUSTOM_MESSAGES.values():
        # Every field of a message is sent, defaults included (`jsonrpc`, `method`):
        # lsprotocol omits defaults of fields it does not list as special.
        converter.register_unstructure_hook(
            message, cattrs.gen.make_dict_unstructure_fn(message, converter))
    return converter


def _register_answer_hooks(converter: Any) -> None:
    """Hooks for the big parts of the custom answers, writing the JSON cattrs would write.

    A lowering's answer holds ~12,000 source-map entries and a frame table as large: lists
    of plain values (`list[int]`, `list[str]`, `list[list[int]]`, `list[tuple[int, int]]`)
    are JSON already (`json.dumps` writes a tuple as an array) and pass as they are, not
    copied element by element; a list of the answers' own classes is one
    comprehension over the class's generated hook, not cattrs's generator.
    """
    def identity(value: Any) -> Any:
        return value

    for plain in (list[int], list[str], list[list[int]], list[tuple[int, int]]):
        converter.register_unstructure_hook_func(lambda t, plain=plain: t == plain, identity)

    def list_of_answer_class(t: Any) -> bool:
        args = typing.get_args(t)
        return (typing.get_origin(t) is list and len(args) == 1 and attrs.has(args[0])
                and args[0].__module__ == lens_types.__name__)

    def list_hook(t: Any) -> Any:
        element = converter.get_unstructure_hook(typing.get_args(t)[0])
        return lambda values: [element(v) for v in values]

    converter.register_unstructure_hook_factory(list_of_answer_class, list_hook)


def _register_strict_params(converter: Any) -> None:
    """The custom params and command arguments take JSON values of their declared types only.

    cattrs converts primitives the lenient way (`{"uri": 42}` becomes the string "42", a
    handler then fails on it with a vaguer message); these are refused as InvalidParams
    naming the field. The standard LSP messages keep lsprotocol's own rules. The strict
    converter and each class's hook are made when a custom message first arrives, not at
    start-up (on the way to the first code lenses).
    """
    classes = {params for params, _answer in lens_types.REQUESTS.values()}
    classes |= set(lens_types.NOTIFICATIONS.values())
    classes |= {args for args, _answer in lens_types.COMMANDS.values()}
    made: list[Any] = []

    def hook(cls: type) -> Any:
        if not made:
            made.append(_strict_copy(converter))
        # Not lsprotocol's factory (it would build the hook with its own, lenient converter):
        # the same camelCase names, each field through the strict copy.
        names: dict[str, Any] = {f.name: cattrs.gen.override(rename=camel(f.name))
                                 for f in attrs.fields(_resolved(cls)) if camel(f.name) != f.name}
        return cattrs.gen.make_dict_structure_fn(cls, made[0], **names)

    def ours(t: Any) -> bool:
        try:
            return t in classes
        except TypeError:  # an unhashable type annotation: not one of ours
            return False

    converter.register_structure_hook_factory(ours, hook)


def _strict_copy(converter: Any) -> Any:
    """A copy of `converter` whose primitives are never converted (str, int, bool exactly;
    a number for a float; unions of primitives checked member by member)."""
    strict = converter.copy()

    def exact(kind: type) -> Any:
        def structure(value: Any, _type: Any) -> Any:
            if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
                raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
            return value
        return structure

    for kind in (str, int, bool):
        strict.register_structure_hook(kind, exact(kind))

    def number(value: Any, _type: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"expected a number, got {type(value).__name__}")
        return float(value)

    strict.register_structure_hook(float, number)

    def primitive_union(t: Any) -> bool:  # e.g. a work-done token: int | str | None
        if not isinstance(t, types_module.UnionType) and typing.get_origin(t) is not typing.Union:
            return False
        return all(a in (str, int, bool, float, type(None)) for a in typing.get_args(t))

    def one_of(value: Any, t: Any) -> Any:
        kinds = typing.get_args(t)
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            return float(value)  # JSON does not tell 1 from 1.0
        if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
            names = " | ".join("null" if k is type(None) else k.__name__ for k in kinds)
            raise TypeError(f"expected {names}, got {type(value).__name__}")
        return value

    strict.register_structure_hook_func(primitive_union, one_of)

    def a_list(t: Any) -> bool:  # cattrs would take any iterable: a string as its characters
        return typing.get_origin(t) is list

    def list_of(value: Any, t: Any) -> list[Any]:
        if not isinstance(value, list):
            raise TypeError(f"expected an array, got {type(value).__name__}")
        (item,) = typing.get_args(t) or (Any,)
        return [strict.structure(v, item) for v in value]

    strict.register_structure_hook_func(a_list, list_of)
    return strict


_resolve_tried: set[type] = set()


def _unresolved(cls: Any) -> bool:
    return (attrs.has(cls) and cls not in _resolve_tried
            and getattr(cls, "__attrs_types_resolved__", None) is not cls)


def _resolved(cls: Any) -> Any:
    """`cls` with its annotations resolved (lsprotocol's against lsprotocol's types).

    Tried once per class: one that cannot be resolved stays as declared, as it would with
    pygls's converter, instead of sending the hook lookup round again.
    """
    _resolve_tried.add(cls)
    with contextlib.suppress(Exception):
        if cls.__module__ == types.__name__:
            attrs.resolve_types(cls, types.ALL_TYPES_MAP, {})
        else:
            attrs.resolve_types(cls)
    return cls


def _message_class(method: str, params: type, request: bool) -> type:
    """An lsprotocol-style message class of a custom method, with its typed params."""
    fields: dict[str, Any] = {}
    if request:
        fields["id"] = attrs.field(type=int | str)  # type: ignore[arg-type]
    # Params may be omitted (JSON-RPC) only where every field has a default: then the
    # handler gets None; otherwise a missing field is refused as InvalidParams.
    optional = all(f.default is not attrs.NOTHING for f in attrs.fields(params))
    fields["params"] = attrs.field(
        type=params | None if optional else params)  # type: ignore[arg-type]
    fields["method"] = attrs.field(type=str, default=method)
    fields["jsonrpc"] = attrs.field(type=str, default="2.0")
    suffix = "Request" if request else "Notification"
    return attrs.make_class(params.__name__.removesuffix("Params") + suffix, fields)


_CUSTOM_MESSAGES: dict[str, type] = {
    **{method: _message_class(method, params, True)
       for method, (params, _result) in lens_types.REQUESTS.items()},
    **{method: _message_class(method, params, False)
       for method, params in lens_types.NOTIFICATIONS.items()},
}


def _params_problem(method: Any, exc: BaseException) -> str:
    """`invalid params for M: <what and where>` from the converter's validation error."""
    cause = exc.__cause__ if isinstance(exc.__cause__, cattrs.ClassValidationError) else exc
    if isinstance(cause, cattrs.ClassValidationError):
        # Field names as on the wire (camelCase), not as in Python.
        details = "; ".join(re.sub(r"(?<=\.)[a-z0-9]+(?:_[a-z0-9]+)+", lambda m: camel(m[0]), d)
                            for d in cattrs.transform_error(cause, path="$"))
        return f"invalid params for {method}: {details}"
    return f"invalid params for {method}"


def protocol_of(server: Any) -> LensProtocol:
    """The `LensProtocol` a server runs (TypeError for another protocol)."""
    protocol = server.protocol
    if not isinstance(protocol, LensProtocol):
        raise TypeError(f"{type(server).__name__} does not run LensProtocol")
    return protocol


def converter_of(server: Any) -> cattrs.Converter:
    """The converter of a server running `LensProtocol` (the one pygls reads messages with)."""
    protocol = server.protocol
    if not isinstance(protocol, LensProtocol):
        raise TypeError(f"{type(server).__name__} does not run LensProtocol")
    return protocol.converter


def envelope_problem(data: Any) -> str | None:
    """Why `data` (a decoded JSON value) is not a JSON-RPC 2.0 request, notification or
    response; None when it is one. LSP ids are integers or strings; LSP has no batches."""
    if isinstance(data, list):
        return "batch messages are not supported" if data else "an empty batch"
    if not isinstance(data, dict):
        return f"a message is a JSON object, not {_json_kind(data)}"
    if data.get("jsonrpc") != "2.0":
        return 'a message needs "jsonrpc": "2.0"'
    msg_id = data.get("id")
    if "id" in data and not _valid_id(msg_id) and not (msg_id is None and "error" in data):
        return f'an "id" is an integer or a string, not {_json_kind(msg_id)}'
    if "method" in data:
        if not isinstance(data["method"], str):
            return f'"method" is a string, not {_json_kind(data["method"])}'
        params = data.get("params")
        if params is not None and not isinstance(params, dict | list):
            return f'"params" is an object or an array, not {_json_kind(params)}'
        return None
    if "result" not in data and "error" not in data:
        return 'the message has no "method"'
    if "id" not in data:
        return 'a response needs an "id"'
    if "result" in data and "error" in data:
        return 'a response has "result" or "error", not both'
    return None


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _json_kind(value: Any) -> str:
    """`value`'s JSON type, for a message about it."""
    kinds: tuple[tuple[type | tuple[type, ...], str], ...] = (
        (bool, "a boolean"), (int, "an integer"), (float, "a non-integer number"),
        (str, "a string"), (list, "an array"), (dict, "an object"))
    return next((name for kind, name in kinds if isinstance(value, kind)), "null")


def _reply_id(data: Any) -> Any:
    """The id an error answer to `data` carries: its own if valid, else null (JSON-RPC).
    Null too for a response (our request's id: the client did not ask anything with it)."""
    if not isinstance(data, dict) or ("method" not in data and ("result" in data
                                                                 or "error" in data)):
        return None
    msg_id = data.get("id")
    return msg_id if _valid_id(msg_id) else None


class _Answered:
    """Stands for a message that was already answered (with an error) while being parsed."""

    jsonrpc = None


class LensProtocol(LanguageServerProtocol):
    """pygls' protocol plus the initialize/shutdown gates."""

    def __init__(self, server: Any, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        # pygls (2.1) keeps the converter it was given private; the features structure
        # command arguments with it, so the protocol keeps its own reference.
        self.converter = converter
        self._initialize_seen = False
        # The start-up front (front.py): the request it answered already (pygls's own
        # answer is dropped), and who keeps pygls's answer to `initialize` for the next start.
        self._dropped_response: Any = None
        self._initialize_id: Any = None
        self.on_initialize_answer: Callable[[dict[str, Any]], None] | None = None

    def drop_response_to(self, msg_id: Any) -> None:
        """Do not send the answer to request `msg_id`: the front answered it."""
        self._dropped_response = msg_id

    def receive(self, data: Any) -> None:
        """One JSON value read from the client (the transport's entry): refused -32600 if it
        is not a JSON-RPC message, else structured and handled as pygls would."""
        problem = envelope_problem(data)
        if problem is not None:
            self.refuse(data, JsonRpcInvalidRequest.CODE, f"Invalid Request: {problem}")
            return
        if data.get("method") == types.INITIALIZE and not self._initialize_seen:
            self._initialize_id = data.get("id")
        try:
            message = self.structure_message(data)
        except Exception as exc:  # a notification or response that does not fit its type
            if "method" in data:
                log.warning("ignored a notification: %s", _params_problem(data["method"], exc))
            else:
                log.warning("ignored a response to %r: %s", data.get("id"), exc)
            return
        self.handle_message(message)

    def refuse(self, data: Any, code: int, reason: str) -> None:
        """Answer `data` (a decoded JSON value, or None) with the error `code`."""
        log.warning("refused a message: %s", reason)
        self.send_error(_reply_id(data), code, reason)

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        """A JSON-RPC error response; `msg_id` None is written as `"id": null`, which
        JSON-RPC asks for (lsprotocol's converter would leave the member out)."""
        self._send_data({"jsonrpc": "2.0", "id": msg_id,
                         "error": {"code": code, "message": message}})

    def _send_response(self, msg_id: Any, result: Any = None,
                       error: types.ResponseError | None = None) -> None:
        if msg_id is not None and msg_id == self._dropped_response:
            self._dropped_response = None
            return
        # pygls puts a handler's traceback in its internal error's `data`; pygls has logged
        # it to stderr already, and the client gets the exception's one line.
        if error is not None and isinstance(error.data, dict) and "traceback" in error.data:
            error = types.ResponseError(code=error.code, message=error.message)
        if (error is None and msg_id is not None and msg_id == self._initialize_id
                and self.on_initialize_answer is not None):
            with contextlib.suppress(Exception):  # a nicety for the next start
                self.on_initialize_answer(
                    json.loads(json.dumps(result, default=self._serialize_message)))
        super()._send_response(msg_id, result, error)

    def get_message_type(self, method: str) -> Any:  # type: ignore[override]
        custom = _CUSTOM_MESSAGES.get(method)
        return custom if custom is not None else super().get_message_type(method)

    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" in data and "method" in data and "params" not in data:
            data = {**data, "params": None}  # JSON-RPC allows omitting params
        try:
            return super().structure_message(data)
        except Exception as exc:
            msg_id = data.get("id") if isinstance(data, dict) else None
            if "jsonrpc" not in data or "method" not in data or msg_id is None:
                raise
            log.warning("bad params for %s: %s", data.get("method"), exc)
            error = JsonRpcInvalidParams(_params_problem(data.get("method"), exc))
            assert isinstance(error, JsonRpcException)
            self._send_response(msg_id, None, error.to_response_error())
            return _Answered()

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Answered):
            return
        method = getattr(message, "method", None)
        msg_id: Any = getattr(message, "id", None)
        is_request = method is not None and msg_id is not None
        if method == types.INITIALIZE:
            if self._initialize_seen:  # the LSP: initialize is sent once
                if is_request:
                    self.send_error(msg_id, JsonRpcInvalidRequest.CODE,
                                    "Invalid Request: initialize may be sent only once")
                return
            self._initialize_seen = True
        elif not self._initialize_seen and method not in (None, types.EXIT):
            if is_request:
                self._send_response(
                    msg_id, None,
                    JsonRpcServerNotInitialized("the server is not initialized yet")
                    .to_response_error(),
                )
            return
        if self._shutdown and is_request:
            self._send_response(
                msg_id, None,
                JsonRpcInvalidRequest("the server is shutting down").to_response_error(),
            )
            return
        super().handle_message(message)
