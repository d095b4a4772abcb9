"""The defaults every part shares: one place, so the CLI, the engine, the worker client, the
language server's settings, the repository check and the extension manifest (package.json,
checked by a test) cannot drift apart."""

TIMEOUT_S = 60.0  # one lowering job
MEMORY_LIMIT_MB = 8192  # the worker's resident memory
CACHE_SIZE_MB = 1024  # the persistent result cache's folder
CACHE_DIR_ENV = "TORCH_MLIR_LENS_CACHE_DIR"  # that folder (empty: no persistent cache)
