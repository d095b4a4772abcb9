"""The worker's subpackages are layers: a module imports only from the layers below its own.

The graph is the source's (ast), with imports inside functions and under `if TYPE_CHECKING:`
counted: a lazy or annotation-only import still ties two modules into one, and an import loop
between two subpackages is what this order exists to prevent.
"""

from __future__ import annotations

from tests.harness import import_graph
from tests.harness.import_graph import PACKAGE_DIR

WORKER = "torch_mlir_lens.worker"
WORKER_DIR = PACKAGE_DIR / "worker"

# Bottom up (worker/__init__.py says what each holds). Packages on one layer do not import
# each other; the worker's own top-level modules (`main`, the job handlers) are the top.
LAYERS = {
    f"{WORKER}.process": 0,
    f"{WORKER}.ir": 1,
    f"{WORKER}.shims": 2,
    f"{WORKER}.loading": 2,
    f"{WORKER}.rewrites": 3,
    f"{WORKER}.inputs": 3,
    f"{WORKER}.culprits": 4,
    f"{WORKER}.stages": 5,
    f"{WORKER}.blocks": 6,
    f"{WORKER}.lowering": 7,
    f"{WORKER}.verify": 8,
    f"{WORKER}.graph": 8,
    f"{WORKER}.rewrite_jobs": 9,
    f"{WORKER}.iree": 9,
    f"{WORKER}.onnx": 10,  # an ONNX model's IREE targets are compiled by iree/
    WORKER: 11,
}

# What sits at worker/'s top, subpackages and modules together: a newcomer reads this many
# names before finding anything.
MAX_TOP_LEVEL_ENTRIES = 17


def _worker_graph() -> dict[str, set[str]]:
    """Each worker module → the worker modules it imports (lazily, or for types only too)."""
    full = import_graph.graph(top_level_only=False, type_only=True)
    return {name: {d for d in deps if d == WORKER or d.startswith(WORKER + ".")}
            for name, deps in full.items() if name == WORKER or name.startswith(WORKER + ".")}


def test_every_worker_subpackage_has_a_layer() -> None:
    subpackages = {f"{WORKER}.{init.parent.name}" for init in WORKER_DIR.glob("*/__init__.py")}
    assert sorted(subpackages - LAYERS.keys()) == [], "worker subpackages with no layer"
    assert sorted(LAYERS.keys() - subpackages - {WORKER}) == [], "layers that are gone"


def test_each_worker_module_imports_only_the_layers_below_it() -> None:
    crossings = import_graph.crossings(_worker_graph(), LAYERS)
    assert crossings == [], "worker layer crossings:\n" + "\n".join(crossings)


def test_no_import_cycle_inside_the_worker() -> None:
    cycles = [sorted(c) for c in import_graph.cycles(_worker_graph())]
    assert cycles == [], f"import cycles in worker/: {cycles}"


def test_the_worker_keeps_few_top_level_entries() -> None:
    """Subpackages count as much as modules: eleven subpackages and twelve modules were once
    "twelve at the top"."""
    modules = [p.stem for p in WORKER_DIR.glob("*.py") if p.name != "__init__.py"]
    packages = [p.parent.name for p in WORKER_DIR.glob("*/__init__.py")]
    top = sorted(modules + packages)
    assert packages and modules, "the count must see both kinds"
    assert len(top) <= MAX_TOP_LEVEL_ENTRIES, f"{len(top)} entries at worker/'s top: {top}"


def test_the_order_reversed_is_seen_as_crossings() -> None:
    """The check judges real imports: with the layers upside down, the lowerer's import of the
    export stage (and the job handlers' imports of everything) become crossings."""
    top = max(LAYERS.values())
    upside_down = {prefix: top - layer for prefix, layer in LAYERS.items()}
    crossings = import_graph.crossings(_worker_graph(), upside_down)
    assert f"{WORKER}.lowering.lowerer imports {WORKER}.stages.torch_export" in crossings
    assert any(c.startswith(f"{WORKER}.job_handlers imports ") for c in crossings)
