"""`python -m torch_mlir_lens` is the `torch-mlir-lens` command."""

from torch_mlir_lens.cli import main

raise SystemExit(main())
