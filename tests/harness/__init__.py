"""The harness the tests and the benchmark share: how a real server is started and driven over
LSP (`lsp_session.py`) and how to wait on a condition with a time-out (`waiting.py`).

Imported as `tests.harness` by both (the repository root is on `sys.path`: `tests/conftest.py`
puts it there, and `python -m bench.run` runs from it).
"""
