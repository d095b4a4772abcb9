"""The language server: `torch-mlir-lens serve` (see `server.run_server`)."""
