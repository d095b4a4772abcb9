"""Check a whole repository, as a CI gate: `torch-mlir-lens check PATH…` and `merge`.

- `config`: `[tool.torch-mlir-lens]` in pyproject.toml (also read by the language server);
- `paths`, `ignore`: PATHs → Python files and notebooks (globs, `.gitignore`, `exclude`);
- `plan`: files → modules (the editor's discovery), shards;
- `notebooks`, `ipynb_lines`: a notebook's cells as one program, cell lines in reports, the
  .ipynb file lines review tools show them at;
- `runner`: N isolated workers side by side, per-module failures, results in order;
- `findings`, `baseline`, `report`: what failed, what is accepted, the exit code;
- `text_formats`, `listing`, `sarif`: text, JSON, SARIF 2.1.0 and GitHub annotations;
  `merge`.

Nothing here imports torch: user code runs only in the workers.
"""
