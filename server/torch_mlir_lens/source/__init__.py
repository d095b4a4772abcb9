"""Reading the user's source, torch-free: the `# torch-mlir-lens:` comments
(`annotations.py`, `dynamic_dims.py`), a notebook as one program (`notebook_program.py`), and
a file's bytes decoded as Python decodes them (`decoding.py`)."""
