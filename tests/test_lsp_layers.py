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

SESSION_MODULE = LSP_DIR / "state" / "session.py"
CHECKING_SERVER_MODULE = LSP_DIR / "checks" / "checking_server.py"
# The names that hold a Document or the server, besides any annotated with these types.
DOCUMENT_HOLDERS = ({"doc", "document"}, {"Document"})
SERVER_HOLDERS = ({"server"}, {"Session", "CheckingServer", "LensServer"})


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


def test_only_the_session_writes_the_server_state() -> None:
    """Settings, workspace root, trust, documents, engine host: set by the session (and the
    checking server that adds the host) alone; features call their methods."""
    fields = class_fields(SESSION_MODULE, "Session") | class_fields(
        CHECKING_SERVER_MODULE, "CheckingServer")
    assert {"settings", "workspace_root", "trust", "store", "host"} <= fields
    assert field_writes("def f(server):\n    server.settings = 1\n", fields,
                        SERVER_HOLDERS) == ["line 2: server.settings = ..."]
    owners = {SESSION_MODULE, CHECKING_SERVER_MODULE}
    assert _writes_outside(owners, fields, SERVER_HOLDERS) == {}
