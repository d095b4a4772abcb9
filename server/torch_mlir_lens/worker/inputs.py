"""Find the example inputs (and constructor arguments) of a module, and instantiate it.

Precedence, first match wins (the README quotes this list):

1. **Given from outside for this run**: `--inputs EXPR` / `--inputs-file PATH` (and `--init
   EXPR`) on the CLI, `inputs`/`inputs_file`/`init` in a worker job. Source "cli" or
   "inputs-file". These beat the file's own comment on purpose: a one-off run with other
   shapes should not require editing the file, and whoever passes them explicitly means them.
2. **The comment** right above the class/def: `# torch-mlir-lens: inputs=...` (and `init=...`,
   `dynamic=...`). Source "comment".
3. **Conventions** already in use, checked in this order: an `example_inputs()` method, an
   `example_input_array` attribute (class attribute, or set in `__init__`: the module is then
   instantiated), torch-mlir's `@annotate_args([None, ([2, 16], torch.float32, True), ...])` on
   `forward` (read from the source when the decorator is not importable; a -1 dim becomes 4),
   and a module-level `example_inputs()` function. The module-level function may return a dict
   keyed by class/function name (`{"Pooler": (x,)}`) to serve several modules; a result that is
   not keyed that way serves only the top-level modules of the file (those no other module of
   the file uses), so blocks inside them still get derived inputs. Source "convention:<which>"
   (`example_inputs`, `example_input_array`, `annotate_args`, `module_example_inputs`).
4. **Settings**: `torchMlirLens.exampleInputs` `{"rel/path.py::Name" or "Name": "EXPR" or
   "@path/to/inputs.pt"}` (the path-qualified key wins; "@" paths are relative to the
   workspace). Source "settings".
5. **Derived**: a class used inside another module of the file whose inputs are known (by 1–4 or
   6) gets the arguments it actually received, recorded with forward pre-hooks during one eager
   forward pass of that parent (the first call wins); its constructor arguments are recorded the
   same way. Nearest parents are tried first, then their parents, then module classes of sibling
   files (same folder) that import this class and have inputs of their own (`model.py` using
   blocks from `layers.py`). Recordings are cached per (file content, parent). Source
   "derived:<Parent>" (or "derived:<file.py>::<Parent>" for a sibling file's).
6. **Inferred**: `forward` takes exactly one required argument and the first layer it calls
   (else the first registered one) is a Linear / Conv / Embedding / RNN / norm layer: a small
   tensor of the fitting shape. Source "inferred".

None applies → `LensError("inputs-missing")` naming the module, why, and the comment to add.

Expressions are evaluated in the user's module namespace with `torch` available. An inputs
value that is a tuple (or list) gives positional arguments, a dict keyword arguments, anything
else one positional argument. `init` likewise. `dynamic` strings such as "batch" become
`torch.export.Dim("batch")` (the same name gives the same Dim); the comment's `dynamic=` applies
whatever the inputs' source (they name `forward`'s parameters, not particular tensors). Init:
`--init` beats the comment's `init=`, which beats recorded constructor arguments (derived).
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import os
import pickle
import sys
import types
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from torch_mlir_lens.discovery import (
    INFERABLE_LAYERS,
    ModuleInfo,
    find_modules,
    input_template,
    layer_inputs_expr,
    settings_key_for,
)
from torch_mlir_lens.fingerprint import fingerprint
from torch_mlir_lens.results import ErrorKind, LensError
from torch_mlir_lens.worker import construct, loader


@dataclass
class ResolvedInputs:
    """Example inputs and constructor arguments of one module, and where they came from."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    init_args: tuple[Any, ...]
    init_kwargs: dict[str, Any]
    dynamic_shapes: dict[str, Any] | tuple[Any, ...] | None
    source: str  # "cli", "inputs-file", "comment", "convention:<which>", "settings", ...
    detail: str = ""  # how, for people: the expression, the file, the parent, the layer
    # An instance already built while resolving (conventions, inference): reused by instantiate().
    instance: Any = field(default=None, repr=False, compare=False)


# ---------------------------------------------------------------------------------------------
# Small helpers


def lookup(mod: types.ModuleType, name: str) -> Any:
    """The class or function `name` (dotted for nested classes) of the loaded module."""
    obj: Any = mod
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise LensError(
                ErrorKind.UNKNOWN_MODULE,
                f"no module or function named {name!r} in {os.path.basename(mod.__file__ or '')}",
                file=mod.__file__,
            )
    return obj


def _namespace(mod: types.ModuleType) -> dict[str, Any]:
    """Globals for evaluating expressions: the user's module, plus `torch`."""
    ns = dict(vars(mod))
    ns.setdefault("torch", torch)
    return ns


def _evaluate(expr: str, ns: dict[str, Any], what: str, path: str, line: int | None) -> Any:
    """Evaluate an inputs/init/dynamic expression; failures become bad-inputs."""
    try:
        code = compile(expr.strip(), f"<torch-mlir-lens {what}>", "eval")
        return eval(code, dict(ns))
    except Exception as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise LensError(
            ErrorKind.BAD_INPUTS,
            f"{what} expression `{expr.strip()}` failed: {type(exc).__name__}"
            + (f": {detail}" if detail else ""),
            file=path, line=line,
        ) from None


def as_call_args(value: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """tuple/list → positional, dict → keyword, anything else → one positional argument."""
    if isinstance(value, tuple):
        return value, {}
    if isinstance(value, list):
        return tuple(value), {}
    if isinstance(value, dict):
        return (), dict(value)
    return (value,), {}


def _to_dims(spec: Any, dims: dict[str, Any]) -> Any:
    """Replace dim names ("batch") by `torch.export.Dim`s, recursively."""
    if isinstance(spec, str):
        if spec not in dims:
            dims[spec] = torch.export.Dim(spec)
        return dims[spec]
    if isinstance(spec, dict):
        return {k: _to_dims(v, dims) for k, v in spec.items()}
    if isinstance(spec, list | tuple):
        return type(spec)(_to_dims(v, dims) for v in spec)
    return spec


def _load_inputs_file(file: str, path: str, what: str) -> Any:
    """torch.load a saved tuple/dict of tensors (weights_only first: it cannot run code)."""
    if not os.path.isfile(file):
        raise LensError(ErrorKind.BAD_INPUTS, f"{what} {file} does not exist", file=path)
    try:
        try:
            return torch.load(file, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError:
            # Not plain tensors/containers. The workspace is trusted (its code runs anyway).
            return torch.load(file, map_location="cpu", weights_only=False)
    except Exception as exc:
        raise LensError(
            ErrorKind.BAD_INPUTS, f"cannot load {what} {file}: {type(exc).__name__}: {exc}",
            file=path,
        ) from None


class _Instance:
    """Builds the module once, on demand (several precedence levels may need it)."""

    def __init__(self, obj: Any, name: str, init: tuple[tuple[Any, ...], dict[str, Any]],
                 info: ModuleInfo | None, path: str, init_src: str) -> None:
        self.obj, self.name, self.init, self.info, self.path = obj, name, init, info, path
        self.init_src = init_src
        self.value: Any = None

    def get(self) -> Any:
        if self.value is None:
            self.value = _construct(self.obj, self.name, *self.init, self.info, self.path,
                                    self.init_src)
        return self.value


# ---------------------------------------------------------------------------------------------
# Entry points


def resolve_inputs(
    mod: types.ModuleType,
    name: str,
    *,
    path: str,
    text: str,
    inputs_expr: str | None = None,
    inputs_file: str | None = None,
    init_expr: str | None = None,
    settings_inputs: dict[str, str] | None = None,
    workspace: str | None = None,
) -> ResolvedInputs:
    """Example inputs for `name` in the loaded file, by the precedence in the module docstring.

    Raises LensError: "unknown-module", "bad-inputs" (an expression or file failed),
    "inputs-missing" (nothing applies; the message holds the comment to add).
    """
    return _resolve(mod, name, path=os.path.abspath(path), text=text, inputs_expr=inputs_expr,
                    inputs_file=inputs_file, init_expr=init_expr,
                    settings=settings_inputs or {}, workspace=workspace, allow_derived=True)


def instantiate(mod: types.ModuleType, name: str, resolved: ResolvedInputs) -> Any:
    """The module in eval() mode (built with the resolved constructor arguments), or the function
    itself. Reuses the instance built while resolving, if any."""
    obj = lookup(mod, name)
    if not isinstance(obj, type):
        return obj
    instance = resolved.instance
    if instance is None:
        instance = _construct(obj, name, resolved.init_args, resolved.init_kwargs, None,
                              mod.__file__ or "", "init")
    if isinstance(instance, torch.nn.Module):
        instance.eval()
    return instance


# ---------------------------------------------------------------------------------------------
# Resolution


def _find_info(text: str, path: str, name: str, settings: dict[str, str],
               workspace: str | None) -> tuple[ModuleInfo | None, dict[str, ModuleInfo]]:
    infos = find_modules(text, path, settings_inputs=settings, workspace=workspace)
    by_name = {i.name: i for i in infos}
    return by_name.get(name), by_name


def _resolve(
    mod: types.ModuleType, name: str, *, path: str, text: str, inputs_expr: str | None,
    inputs_file: str | None, init_expr: str | None, settings: dict[str, str],
    workspace: str | None, allow_derived: bool,
) -> ResolvedInputs:
    obj = lookup(mod, name)
    info, by_name = _find_info(text, path, name, settings, workspace)
    ns = _namespace(mod)
    ann = info.annotation if info else None
    init_src = "--init" if init_expr else "init"
    init_args, init_kwargs = _resolve_init(init_expr, info, ns, path)
    dynamic = None
    if ann is not None and ann.dynamic:
        line = ann.key_lines.get("dynamic")
        raw = _evaluate(ann.dynamic, ns, "dynamic", path, line)
        try:
            dynamic = _to_dims(raw, {})
        except Exception as exc:  # e.g. a dim name that is not an identifier
            raise LensError(ErrorKind.BAD_INPUTS, f"dynamic `{ann.dynamic}`: {exc}", file=path,
                            line=line) from None
    instance = _Instance(obj, name, (init_args, init_kwargs), info, path, init_src)

    def done(value: Any, source: str, detail: str) -> ResolvedInputs:
        args, kwargs = as_call_args(value)
        return ResolvedInputs(args, kwargs, init_args, init_kwargs, dynamic, source, detail,
                              instance.value)

    if inputs_expr:
        return done(_evaluate(inputs_expr, ns, "--inputs", path, None), "cli", inputs_expr)
    if inputs_file:
        file = _locate(inputs_file, path, workspace)
        return done(_load_inputs_file(file, path, "inputs file"), "inputs-file", file)
    if ann is not None and ann.inputs:
        value = _evaluate(ann.inputs, ns, "inputs", path, ann.key_lines.get("inputs"))
        return done(value, "comment", ann.inputs)
    found = _convention(mod, obj, name, info, by_name, ns, instance, path)
    if found is not None:
        return done(found[1], f"convention:{found[0]}", found[0])
    key = settings_key_for(name, path, settings, workspace)
    if key is not None:
        return done(_settings_value(settings[key], ns, path, workspace, key), "settings", key)
    if allow_derived and info is not None:
        derived = _derived(mod, name, info, by_name, path=path, text=text, settings=settings,
                           workspace=workspace)
        if derived is not None:
            if init_expr or (ann is not None and ann.init):
                derived.init_args, derived.init_kwargs = init_args, init_kwargs
                derived.instance = None
            derived.dynamic_shapes = dynamic
            return derived
    inferred = _inferred(obj, info, instance)
    if inferred is not None:
        return done(_evaluate(inferred[0], ns, "inferred inputs", path, None), "inferred",
                    inferred[1])
    raise _missing(name, obj, info, text, path)


def _resolve_init(init_expr: str | None, info: ModuleInfo | None, ns: dict[str, Any],
                  path: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Constructor arguments: --init beats the comment's init=; none by default."""
    if init_expr:
        return as_call_args(_evaluate(init_expr, ns, "--init", path, None))
    ann = info.annotation if info else None
    if ann is not None and ann.init:
        return as_call_args(_evaluate(ann.init, ns, "init", path, ann.key_lines.get("init")))
    return (), {}


def _locate(file: str, path: str, workspace: str | None) -> str:
    """A relative inputs file: from the current folder, else the workspace, else the file's
    folder (the worker's current folder need not be the caller's)."""
    file = os.path.expanduser(file)
    if os.path.isabs(file):
        return file
    for base in (os.getcwd(), workspace, os.path.dirname(path)):
        if base and os.path.exists(os.path.join(base, file)):
            return os.path.abspath(os.path.join(base, file))
    return os.path.abspath(file)


def _settings_value(value: str, ns: dict[str, Any], path: str, workspace: str | None,
                    key: str) -> Any:
    """A settings entry: "@file" (relative to the workspace, else the file's folder) or EXPR."""
    if value.startswith("@"):
        base = workspace or os.path.dirname(path)
        file = os.path.join(base, os.path.expanduser(value[1:]))
        return _load_inputs_file(os.path.abspath(file), path, f"settings[{key!r}] file")
    return _evaluate(value, ns, f"settings[{key!r}]", path, None)


# ---------------------------------------------------------------------------------------------
# Conventions


def _convention(
    mod: types.ModuleType, obj: Any, name: str, info: ModuleInfo | None,
    by_name: dict[str, ModuleInfo], ns: dict[str, Any], instance: _Instance, path: str,
) -> tuple[str, Any] | None:
    """(which convention, its value) or None."""
    if isinstance(obj, type):
        if callable(getattr(obj, "example_inputs", None)):
            return "example_inputs", _call_user(lambda: instance.get().example_inputs(),
                                                f"{name}.example_inputs()", path)
        class_value = getattr(obj, "example_input_array", None)
        if class_value is not None:
            return "example_input_array", class_value
        if info is not None and info.convention == "example_input_array":
            value = getattr(instance.get(), "example_input_array", None)
            if value is not None:
                return "example_input_array", value
        annotated = _annotate_args_inputs(obj, info, ns, path)
        if annotated is not None:
            return "annotate_args", annotated
    fn = getattr(mod, "example_inputs", None)
    if callable(fn) and not isinstance(fn, type):
        value = _call_user(fn, "example_inputs()", path)
        if isinstance(value, dict) and name in value:
            return "module_example_inputs", value[name]
        keyed = isinstance(value, dict) and value and all(k in by_name for k in value)
        top_level = info is None or not info.parent_candidates
        if not keyed and top_level:
            return "module_example_inputs", value
    return None


def _call_user(fn: Callable[[], Any], what: str, path: str) -> Any:
    try:
        return fn()
    except LensError:
        raise
    except Exception as exc:
        line = _user_line(exc, path)
        raise LensError(ErrorKind.BAD_INPUTS, f"{what} failed: {type(exc).__name__}: {exc}",
                        file=path, line=line) from None


def _annotate_args_inputs(obj: type, info: ModuleInfo | None, ns: dict[str, Any],
                          path: str) -> tuple[Any, ...] | None:
    """Inputs built from `@annotate_args([None, (shape, dtype, value_tensor), ...])`."""
    forward = getattr(obj, "forward", None)
    spec = getattr(forward, "_torch_mlir_arg_annotations", None)
    if spec is None and info is not None and info.annotate_args:
        spec = _evaluate(info.annotate_args, ns, "annotate_args", path, info.forward_line)
    if not isinstance(spec, list | tuple):
        return None
    tensors = []
    for entry in list(spec)[1:]:  # the first entry stands for `self`
        if not isinstance(entry, list | tuple) or len(entry) < 2:
            return None
        shape = [4 if d == -1 else int(d) for d in entry[0]]
        dtype = entry[1]
        if dtype.is_floating_point or dtype.is_complex:
            tensors.append(torch.randn(shape, dtype=dtype))
        elif dtype == torch.bool:
            tensors.append(torch.randint(0, 2, shape).to(torch.bool))
        else:
            tensors.append(torch.randint(0, 10, shape, dtype=dtype))
    return tuple(tensors)


# ---------------------------------------------------------------------------------------------
# Derived inputs: record what a submodule receives inside a parent


@dataclass
class _Recorded:
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    init: tuple[tuple[Any, ...], dict[str, Any]] | None
    instance: Any  # kept only when the constructor arguments are unknown
    file: str | None  # the file defining the recorded class (same name in two files)
    shapes_only: bool = False  # recorded in a parent built without weights: zeros, right shapes


# Set while resolving for a job that elides weights (the construction policy, "auto" or
# "meta"): a parent recorded for derived inputs is then built and run without its weights
# (fake tensors: shapes only); with "auto" only when they are big.
_WITHOUT_WEIGHTS: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "torch_mlir_lens_without_weights", default=None)


@contextlib.contextmanager
def recording_without_weights(policy: str | None = "auto") -> Iterator[None]:
    """Within: derived inputs may be recorded in a parent built without its weights
    (`policy` "auto": when they are big; "meta": always; None: never)."""
    token = _WITHOUT_WEIGHTS.set(policy)
    try:
        yield
    finally:
        _WITHOUT_WEIGHTS.reset(token)


# (path, parent's fingerprint, parent, settings, workspace) → what the parent's submodules received.
_recordings: OrderedDict[tuple[str, ...], dict[str, _Recorded] | LensError] = OrderedDict()
_MAX_RECORDINGS = 16


def _ancestors(info: ModuleInfo, by_name: dict[str, ModuleInfo]) -> Iterator[str]:
    """Parents first, then their parents (breadth first), each once."""
    queue, seen = list(info.parent_candidates), {info.name}
    while queue:
        parent = queue.pop(0)
        if parent in seen:
            continue
        seen.add(parent)
        yield parent
        if parent in by_name:
            queue.extend(by_name[parent].parent_candidates)


def _derived(
    mod: types.ModuleType, name: str, info: ModuleInfo, by_name: dict[str, ModuleInfo], *,
    path: str, text: str, settings: dict[str, str], workspace: str | None,
) -> ResolvedInputs | None:
    """Inputs recorded inside a parent: this file's ancestors first, then sibling files'."""
    qualname = lookup(mod, name).__qualname__
    for parent in _ancestors(info, by_name):
        recording = _recording(mod, parent, path=path, text=text, settings=settings,
                               workspace=workspace)
        found = _pick(recording, qualname, path, parent)
        if found is not None:
            return found
    for entry in info.sibling_parents:
        fname, _, parent = entry.partition("::")
        sibling = os.path.join(os.path.dirname(path), fname)
        try:
            sib_text = _read_text(sibling)
            sib_mod = loader.load_definitions(sibling, sib_text)
        except LensError:
            continue
        recording = _recording(sib_mod, parent, path=sibling, text=sib_text, settings=settings,
                               workspace=workspace)
        found = _pick(recording, qualname, path, entry)
        if found is not None:
            return found
    return None


def _pick(recording: dict[str, _Recorded] | LensError, qualname: str, path: str,
          parent: str) -> ResolvedInputs | None:
    """The recorded call of the class `qualname` defined in `path`, as resolved inputs."""
    if isinstance(recording, LensError):
        return None
    rec = recording.get(qualname)
    if rec is None or (rec.file is not None and os.path.abspath(rec.file) != path):
        return None
    init_args, init_kwargs = rec.init if rec.init is not None else ((), {})
    instance = rec.instance if rec.init is None else None
    how = " built without weights (shapes only)" if rec.shapes_only else ""
    return ResolvedInputs(
        _clone(rec.args), _clone(rec.kwargs), init_args, init_kwargs, None,
        f"derived:{parent}", f"recorded in one forward pass of {parent}{how}", instance,
    )


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _recording(
    mod: types.ModuleType, parent: str, *, path: str, text: str, settings: dict[str, str],
    workspace: str | None,
) -> dict[str, _Recorded] | LensError:
    """What each user class inside `parent` received at its first call (cached)."""
    # Keyed by the parent's fingerprint: an edit elsewhere in the file keeps the recording.
    fp = fingerprint(text, parent, path, settings_inputs=settings, workspace=workspace)
    key = (path, fp, parent, repr(sorted(settings.items())), workspace or "",
           str(_WITHOUT_WEIGHTS.get()))
    if key in _recordings:
        _recordings.move_to_end(key)
        return _recordings[key]
    try:
        resolved = _resolve(mod, parent, path=path, text=text, inputs_expr=None,
                            inputs_file=None, init_expr=None, settings=settings,
                            workspace=workspace, allow_derived=False)
        result: dict[str, _Recorded] | LensError = _record(mod, parent, resolved, path)
    except LensError as exc:
        result = exc
    _recordings[key] = result
    while len(_recordings) > _MAX_RECORDINGS:
        _recordings.popitem(last=False)
    return result


def _user_classes(mod: types.ModuleType) -> list[type]:
    """nn.Module classes reachable from the user's module: its own, nested ones, imported ones
    and the classes of the modules those come from (blocks a sibling's block uses)."""
    found: list[type] = []
    seen_modules: set[str] = {mod.__name__}

    def visit(obj: Any) -> None:
        if (isinstance(obj, type) and issubclass(obj, torch.nn.Module) and obj not in found
                and obj.__module__.split(".")[0] != "torch"):
            found.append(obj)
            for inner in list(vars(obj).values()):
                visit(inner)
            home = sys.modules.get(obj.__module__)
            if home is not None and obj.__module__ not in seen_modules:
                seen_modules.add(obj.__module__)
                for value in list(vars(home).values()):
                    visit(value)

    for value in list(vars(mod).values()):
        visit(value)
    return found


def _record(mod: types.ModuleType, parent: str, resolved: ResolvedInputs,
            path: str) -> dict[str, _Recorded]:
    """What `parent`'s submodules receive: without its weights when allowed and they are big
    (shapes are what lowering needs), else (or when that fails) with them."""
    if _WITHOUT_WEIGHTS.get():
        try:
            calls = _record_once(mod, parent, resolved, path, construct.new_fake_mode())
        except Exception:  # anything the fake run cannot do: record with real weights
            calls = None
        if calls is not None:
            return calls
    recorded = _record_once(mod, parent, resolved, path, None)
    assert recorded is not None
    return recorded


def _record_once(mod: types.ModuleType, parent: str, resolved: ResolvedInputs, path: str,
                 fake_mode: Any) -> dict[str, _Recorded] | None:
    """Build `parent` (constructors watched) and run it once with pre-hooks on user classes.

    With `fake_mode`, both happen under it (no weights, no arithmetic) and the recorded tensors
    become zeros of their shapes; None if the parent is too small for that to pay.
    """
    classes = _user_classes(mod)
    inits: dict[int, tuple[tuple[Any, ...], dict[str, Any]]] = {}
    within = fake_mode if fake_mode is not None else contextlib.nullcontext()
    restore = _watch_constructors(classes, inits)
    try:
        with torch.device("meta") if fake_mode is not None else contextlib.nullcontext():
            model = _construct(lookup(mod, parent), parent, resolved.init_args,
                               resolved.init_kwargs, None, path, "init")
    finally:
        restore()
    if fake_mode is not None:
        construct.to_fake(model, fake_mode)
    if (fake_mode is not None and _WITHOUT_WEIGHTS.get() == "auto"
            and construct.weight_bytes(model) < construct.META_OVER_BYTES):
        return None
    model.eval()
    calls: dict[str, _Recorded] = {}
    keep = _clone if fake_mode is None else (lambda value: value)

    def hook(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        name = type(module).__qualname__
        if name not in calls:
            init = inits.get(id(module))
            home = sys.modules.get(type(module).__module__)
            calls[name] = _Recorded(keep(args), keep(kwargs), init,
                                    module if init is None else None,
                                    getattr(home, "__file__", None), fake_mode is not None)

    handles = [
        m.register_forward_pre_hook(hook, with_kwargs=True)
        for m in model.modules() if type(m) in classes and m is not model
    ]
    try:
        with torch.no_grad(), within:
            model(*resolved.args, **resolved.kwargs)
    except Exception as exc:
        raise LensError(
            ErrorKind.BAD_INPUTS,
            f"running {parent} to record its submodules' inputs failed: "
            f"{type(exc).__name__}: {exc}", file=path, line=_user_line(exc, path),
        ) from None
    finally:
        for h in handles:
            h.remove()
    if fake_mode is not None:  # outside the mode: real zeros of the recorded shapes
        for rec in calls.values():
            rec.args, rec.kwargs = construct.zeros_for(rec.args), construct.zeros_for(rec.kwargs)
    return calls


def _watch_constructors(
    classes: list[type], inits: dict[int, tuple[tuple[Any, ...], dict[str, Any]]],
) -> Callable[[], None]:
    """Wrap each class's own `__init__` to record its arguments; returns the undo."""
    originals: list[tuple[type, Any]] = []
    for cls in classes:
        original = cls.__dict__.get("__init__")
        if original is None:
            continue
        cls.__init__ = _recording_init(cls, original, inits)  # type: ignore[misc]
        originals.append((cls, original))

    def restore() -> None:
        for cls, original in originals:
            cls.__init__ = original  # type: ignore[misc]

    return restore


def _recording_init(cls: type, original: Any,
                    inits: dict[int, tuple[tuple[Any, ...], dict[str, Any]]]) -> Any:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if type(self) is cls:
            inits.setdefault(id(self), (args, dict(kwargs)))
        original(self, *args, **kwargs)

    return __init__


def _clone(value: Any) -> Any:
    """Detached copies of the tensors in nested tuples/lists/dicts (later in-place ops of the
    parent's forward must not change what was recorded)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, tuple):
        return tuple(_clone(v) for v in value)
    if isinstance(value, list):
        return [_clone(v) for v in value]
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------------------------
# Inferred inputs


def _required_forward_args(obj: Any) -> int | None:
    fn = getattr(obj, "forward", None) if isinstance(obj, type) else obj
    if fn is None:
        return None
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if isinstance(obj, type):
        params = params[1:]
    return sum(
        1 for p in params
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    )


def _layer_kind(layer: torch.nn.Module) -> str | None:
    """The torch.nn class (from the layer's MRO) whose input shape is known."""
    for cls in type(layer).__mro__:
        if cls.__module__.startswith("torch.nn") and cls.__name__ in INFERABLE_LAYERS:
            return cls.__name__
    return None


def _first_layer(model: torch.nn.Module, attr: str | None) -> torch.nn.Module | None:
    """The first layer used (the statically found attribute), followed into containers."""
    module = getattr(model, attr, None) if attr else None
    if not isinstance(module, torch.nn.Module):
        module = next((m for m in model.modules() if _layer_kind(m)), None)
    while module is not None and _layer_kind(module) is None:
        module = next(iter(module.children()), None)
    return module


_LAYER_ATTRS = ("in_features", "in_channels", "num_embeddings", "input_size", "batch_first",
                "normalized_shape", "num_features")


def _inferred(obj: Any, info: ModuleInfo | None, instance: _Instance) -> tuple[str, str] | None:
    """(expression, explanation) of an input shaped for the first layer, or None."""
    if not isinstance(obj, type) or _required_forward_args(obj) != 1:
        return None
    if info is not None and info.init_required and not instance.init[0] and not instance.init[1]:
        return None  # constructor arguments unknown
    try:
        model = instance.get()
    except LensError:
        return None
    attr = info.first_layer.attr if info is not None and info.first_layer else None
    layer = _first_layer(model, attr)
    kind = _layer_kind(layer) if layer is not None else None
    if layer is None or kind is None:
        return None
    params = {k: getattr(layer, k) for k in _LAYER_ATTRS if hasattr(layer, k)}
    expr = layer_inputs_expr(kind, params)
    if expr is None:
        return None
    return expr, f"first layer {kind}: {expr}"


# ---------------------------------------------------------------------------------------------
# Construction and errors


def _construct(obj: Any, name: str, init_args: tuple[Any, ...], init_kwargs: dict[str, Any],
               info: ModuleInfo | None, path: str, init_src: str) -> Any:
    """`obj(*init_args, **init_kwargs)` with failures explained."""
    try:
        return obj(*init_args, **init_kwargs)
    except Exception as exc:
        no_init = not init_args and not init_kwargs
        if no_init and isinstance(exc, TypeError) and "argument" in str(exc):
            needed = _required_init_params(obj)
            raise LensError(
                ErrorKind.INPUTS_MISSING,
                f"{name} needs constructor arguments ({', '.join(needed) or str(exc)}): add "
                f"`# torch-mlir-lens: init=(...)` above the class or pass --init",
                file=path, line=info.line if info else None,
            ) from None
        raise LensError(
            ErrorKind.BAD_INPUTS,
            f"constructing {name} failed ({init_src}): {type(exc).__name__}: {exc}",
            file=path, line=_user_line(exc, path),
        ) from None


def _required_init_params(obj: Any) -> list[str]:
    try:
        params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return []
    return [p.name for p in params
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _user_line(exc: BaseException, path: str) -> int | None:
    """The line of the innermost traceback frame in the user's file."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _missing(name: str, obj: Any, info: ModuleInfo | None, text: str, path: str) -> LensError:
    """The inputs-missing error: which module, why, and the exact comment to add."""
    kind = "class" if isinstance(obj, type) else "def"
    reasons = ["no `# torch-mlir-lens: inputs=` comment, convention or setting"]
    if info is not None and info.kind == "class":
        if info.parent_candidates:
            reasons.append(f"its parents ({', '.join(info.parent_candidates)}) have no inputs "
                           "either or never call it")
        else:
            reasons.append("no module of this file uses it")
        required = _required_forward_args(obj)
        needs = info.init_required and not (info.annotation and info.annotation.init)
        if required != 1:
            reasons.append(f"forward takes {required} tensors, so none can be inferred")
        elif needs:
            reasons.append(f"its constructor needs ({', '.join(info.init_required)})")
        else:
            reasons.append("its first layer gives no input shape")
    comment = input_template(info, text).strip() if info is not None else (
        "# torch-mlir-lens: inputs=(torch.randn(2, 16),)"
    )
    line = info.line if info is not None else None
    where = f"above `{kind} {name.rsplit('.', 1)[-1]}`" + (f" (line {line})" if line else "")
    return LensError(
        ErrorKind.INPUTS_MISSING,
        f"no example inputs for {name}: {'; '.join(reasons)}. Add {where}: {comment}",
        file=path, line=line,
    )
