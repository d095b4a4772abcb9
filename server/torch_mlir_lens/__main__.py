"""`python -m torch_mlir_lens` is the `torch-mlir-lens` command."""

from torch_mlir_lens.system.safe_path import drop_working_directory

drop_working_directory()  # before anything else is imported: see system/safe_path.py

from torch_mlir_lens.cli import main  # noqa: E402

raise SystemExit(main())
