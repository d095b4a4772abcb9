"""Check a whole repository, as a CI gate: `torch-mlir-lens check PATH…` and `merge`.

- `paths`, `ignore`: PATHs → Python files and notebooks (globs, `.gitignore`, `exclude`);
  the project's `[tool.torch-mlir-lens]` is `project/config.py`'s;
- `plan`: files → modules (the editor's discovery), shards;
- `notebook_modules`, `ipynb_lines`: a notebook's modules, cell lines in reports, the .ipynb
  file lines review tools show them at;
- `runner`: N isolated workers side by side, per-module failures, results in order;
- `findings`, `baseline`, `report`, `assemble`: what failed, what is accepted, the exit code;
- `text_formats`, `listing`, `sarif`, `render`: text, JSON, SARIF 2.1.0 and GitHub
  annotations; `outputs`: reports written atomically; `run_identity`: the shards of one run
  (`merge`); `progress`: the lines a long run prints.

Nothing here imports torch: user code runs only in the workers.
"""
