"""The project's own settings: `[tool.torch-mlir-lens]` of its pyproject.toml (`config.py`),
read alike by `check` and the language server, and the one validation of their numbers
(`limits.py`), which the command line shares; and where an export or a reproducer may be
written in the project (`write_policy.py`), for the server, the command line and the worker."""
