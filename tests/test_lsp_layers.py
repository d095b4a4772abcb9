"""The language server's inner layers (`lsp/`): wire → document → state → checks → features →
the server, no import going up or sideways into a loop, and one writer per piece of state.

Type-only imports count here (`if TYPE_CHECKING:`): a feature that names the server's type
from the module that registers it ties the two together as much as a call would.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.harness import import_graph
from tests.harness.import_graph import PACKAGE_DIR

LSP = "torch_mlir_lens.lsp"

# prefix → layer; a module may import only from a lower layer (or its own package).
LAYERS = {
    f"{LSP}.wire": 0,  # lsprotocol/pygls-level helpers, no server state
    f"{LSP}.document": 1,  # a document's state, owned by `Document`; the store
    f"{LSP}.state": 2,  # the session: settings, workspace root, trust, documents
    f"{LSP}.checks": 3,  # the shared check: engine host, staging, findings, publishing
    f"{LSP}.features": 4,  # one LSP feature a module
    LSP: 5,  # the composition (`server.py`) and the start-up path (`front.py`)
}

LSP_DIR = PACKAGE_DIR / "lsp"
DOCUMENT_MODULE = LSP_DIR / "document" / "document.py"


def _lsp_graph() -> dict[str, set[str]]:
    everything = import_graph.graph(top_level_only=False, type_only=True)
    return {name: {d for d in deps if d == LSP or d.startswith(LSP + ".")}
            for name, deps in everything.items() if name == LSP or name.startswith(LSP + ".")}


def test_every_lsp_subpackage_has_a_layer() -> None:
    packages = sorted(f"{LSP}.{init.parent.name}" for init in LSP_DIR.glob("*/__init__.py"))
    assert packages, "no lsp subpackage found"
    assert [p for p in packages if p not in LAYERS] == []
    assert [p for p in LAYERS if p != LSP and p not in packages] == [], "a layer that is gone"


def test_no_lsp_import_crosses_a_layer() -> None:
    crossings = import_graph.crossings(_lsp_graph(), LAYERS)
    assert crossings == [], "\n".join(crossings)


def test_no_import_cycle_inside_lsp() -> None:
    cycles = [sorted(c) for c in import_graph.cycles(_lsp_graph())]
    assert cycles == [], f"import cycles: {cycles}"


def test_the_layer_check_sees_an_upward_import() -> None:
    """The check itself: a state module importing a feature is a crossing."""
    graph = {f"{LSP}.state.session": {f"{LSP}.features.hover"}, f"{LSP}.features.hover": set()}
    assert import_graph.crossings(graph, LAYERS) == [
        f"{LSP}.state.session imports {LSP}.features.hover"]


def test_only_the_engine_host_and_the_start_up_front_import_the_engine() -> None:
    """User code runs behind one door (`checks/engine_host.py`, the trust gate); the front
    only spawns the worker early, before pygls loads (`front.py`)."""
    everything = import_graph.graph(top_level_only=False, type_only=True)
    importers = sorted(name for name, deps in everything.items()
                       if name.startswith(LSP) and any(
                           d == "torch_mlir_lens.engine" or d.startswith("torch_mlir_lens.engine.")
                           for d in deps))
    assert importers == [f"{LSP}.checks.engine_host", f"{LSP}.front"]


# --- one writer per piece of state -----------------------------------------------------------

SESSION_STATE_MODULE = LSP_DIR / "state" / "session.py"
SESSION_MODULE = LSP_DIR / "checks" / "session.py"
# The names that hold a Document or the session, besides any annotated with these types.
DOCUMENT_HOLDERS = ({"doc", "document"}, {"Document"})
SESSION_HOLDERS = ({"session", "server"}, {"Session", "SessionState", "LensServer"})


def class_fields(path: Path, name: str) -> set[str]:
    """A class's attributes: what its methods assign on `self`, and its properties."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    fields: set[str] = set()
    for node in ast.walk(cls):
        for target in _assigned(node):
            if isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self":
                fields.add(target.attr)
        if isinstance(node, ast.FunctionDef) and any(
                ast.unparse(d) == "property" for d in node.decorator_list):
            fields.add(node.name)
    return fields


def _assigned(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        targets = [node.target]
    else:
        return []
    flat: list[ast.expr] = []
    while targets:  # `old, doc.version = ...` assigns too
        target = targets.pop()
        if isinstance(target, ast.Tuple | ast.List):
            targets.extend(target.elts)
        else:
            flat.append(target)
    return flat


# Methods that change a container in place.
_MUTATORS = {"append", "extend", "add", "update", "clear", "pop", "remove", "discard",
             "insert", "setdefault", "popitem"}


def _holder_names(tree: ast.AST, holders: tuple[set[str], set[str]]) -> set[str]:
    """The names that hold the object: the usual ones, and any annotated with its type."""
    names, types = set(holders[0]), holders[1]
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            annotation, name = node.annotation, node.arg
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            annotation, name = node.annotation, node.target.id
        else:
            continue
        if types & {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}:
            names.add(name)
    return names


def field_writes(source: str, fields: set[str],
                 holders: tuple[set[str], set[str]] = DOCUMENT_HOLDERS) -> list[str]:
    """Where `source` assigns a field of the object (on a name that holds one), or changes a
    field's value in place (`doc.notebook.spans.clear()`)."""
    tree = ast.parse(source)
    held = _holder_names(tree, holders)

    def on_holder(node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in held

    found = []
    for node in ast.walk(tree):
        for target in _assigned(node):
            if isinstance(target, ast.Attribute) and target.attr in fields \
                    and on_holder(target.value):
                found.append(f"line {getattr(node, 'lineno', 0)}: {ast.unparse(target)} = ...")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _MUTATORS:
            chain = node.func.value
            while isinstance(chain, ast.Attribute):
                if chain.attr in fields and on_holder(chain.value):
                    found.append(f"line {node.lineno}: {ast.unparse(node.func)}(...)")
                    break
                chain = chain.value
    return found


def _writes_outside(owners: set[Path], fields: set[str],
                    holders: tuple[set[str], set[str]]) -> dict[str, list[str]]:
    writes = {}
    for path in sorted(LSP_DIR.rglob("*.py")):
        if path in owners:
            continue
        found = field_writes(path.read_text(encoding="utf-8"), fields, holders)
        if found:
            writes[str(path.relative_to(PACKAGE_DIR))] = found
    return writes


def test_the_writer_scan_sees_a_field_assigned_outside() -> None:
    fields = class_fields(DOCUMENT_MODULE, "Document")
    assert {"version", "notebook", "published_cells", "uri", "path"} <= fields
    source = ("def f(doc, mine: Document | None, entry):\n    doc.version = 3\n"
              "    old, mine.notebook = doc.notebook, None\n    doc.notebook.spans.clear()\n"
              "    self.version = 1\n    entry.uri = ''\n")
    assert sorted(field_writes(source, fields)) == [
        "line 2: doc.version = ...", "line 3: mine.notebook = ...",
        "line 4: doc.notebook.spans.clear(...)"]


def test_only_the_document_writes_its_fields() -> None:
    """Every `Document` field is assigned in `Document`'s methods alone (features record
    through them, which is where freshness is decided)."""
    fields = class_fields(DOCUMENT_MODULE, "Document")
    assert _writes_outside({DOCUMENT_MODULE}, fields, DOCUMENT_HOLDERS) == {}


def test_only_the_session_writes_its_state() -> None:
    """Settings, workspace folders, trust, documents, engine host, client: set by the session
    alone (its state, and the session that adds the host); handlers call its methods."""
    fields = class_fields(SESSION_STATE_MODULE, "SessionState") | class_fields(
        SESSION_MODULE, "Session")
    assert {"settings", "workspace_root", "trust", "store", "host", "client"} <= fields
    assert field_writes("def f(session):\n    session.settings = 1\n", fields,
                        SESSION_HOLDERS) == ["line 2: session.settings = ..."]
    owners = {SESSION_STATE_MODULE, SESSION_MODULE}
    assert _writes_outside(owners, fields, SESSION_HOLDERS) == {}


def test_the_session_is_apart_from_the_transport() -> None:
    """The session is a plain object: no pygls class in its ancestry, no pygls import in the
    state, the checks or the features (the client adapter and the composition hold pygls)."""
    from torch_mlir_lens.lsp.checks.session import Session

    assert not any(c.__module__.startswith("pygls") for c in Session.__mro__)
    found = {}
    for package in ("state", "checks", "features"):
        for path in sorted((LSP_DIR / package).glob("*.py")):
            if imports := pygls_imports(path.read_text(encoding="utf-8")):
                found[f"{package}/{path.name}"] = imports
    assert found == {}


def pygls_imports(source: str) -> list[str]:
    """The pygls modules `source` imports, but its errors (a handler raises them)."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return [n for n in names if n.split(".")[0] == "pygls" and n != "pygls.exceptions"]


def test_the_pygls_scan_sees_an_import() -> None:
    assert pygls_imports("from pygls.lsp.server import LanguageServer\n"
                         "from pygls.exceptions import JsonRpcInvalidParams\n") == [
        "pygls.lsp.server"]


def test_every_handler_is_a_module_level_function_in_one_table() -> None:
    """`server.py`'s ROUTES: each method once, each handler a feature module's function of
    (session, params); no feature registers anything itself; ORDERED handlers never await."""
    import inspect

    from torch_mlir_lens.lsp import server

    methods = [r.method for r in server.ROUTES]
    assert len(methods) == len(set(methods))
    for route in server.ROUTES:
        assert route.handler.__module__.startswith(f"{LSP}.features."), route
        assert route.handler.__qualname__ == route.handler.__name__, route  # not a closure
        assert next(iter(inspect.signature(route.handler).parameters)) == "session", route
        if route.kind is server.ORDERED:
            assert not inspect.iscoroutinefunction(route.handler), route
    for path in (LSP_DIR / "features").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert ".feature(" not in text and ".command(" not in text, path.name
        assert "def register" not in text, path.name


def test_an_ordered_handler_that_awaits_is_refused() -> None:
    from torch_mlir_lens.lsp import server

    async def awaits(session: object, params: object) -> None:
        return None

    route = server.Route("x/y", awaits, server.ORDERED)
    import pytest

    with pytest.raises(TypeError, match="cannot await"):
        server.register(server.LensServer(), (route,))
