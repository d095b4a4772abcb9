"""The defaults every part shares: one place, so the CLI, the engine, the worker client, the
language server's settings, the repository check and the extension manifest (package.json,
checked by a test) cannot drift apart."""

TIMEOUT_S = 60.0  # one lowering job
MEMORY_LIMIT_MB = 8192  # the worker's resident memory
CACHE_SIZE_MB = 1024  # the persistent result cache's folder
CACHE_DIR_ENV = "TORCH_MLIR_LENS_CACHE_DIR"  # that folder (empty: no persistent cache)
# The most source text read or analysed: a Python file, a notebook's program, an open
# document. Real sources are far smaller (large generated files: a few MB); past it a file is
# refused with a message, and an open document is kept in sync but not analysed.
MAX_SOURCE_BYTES = 8_000_000
MAX_NOTEBOOK_BYTES = 64_000_000  # a notebook file, outputs (images) included
# The largest open document the language server analyses (finds modules in, lowers, checks):
# parsing holds the event loop, about 1 s per MB of dense code, and must not hold up the
# requests of other documents. The largest hand-written model files are a few hundred KB.
MAX_ANALYSED_BYTES = 1_000_000
# The architecture each IREE target compiles for unless a setting names another
# (rules/iree_targets.py): the machine's own CPU, an A100, an MI300; Vulkan: IREE's portable
# default target (no flag).
IREE_ARCHS: dict[str, str] = {"iree-cpu": "host", "iree-cuda": "sm_80", "iree-rocm": "gfx942"}
