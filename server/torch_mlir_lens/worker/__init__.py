"""The worker side of Torch-MLIR Lens: the only package that imports torch and torch-mlir.

Its subpackages are layers, bottom first: a module imports only from layers below its own
(tests/test_worker_layers.py checks it).

- `process/`: what the worker keeps between jobs, with one owner (`WORKER`): no module of
  the worker holds mutable state of its own, and every bounded cache is one utility
- `ir/`: MLIR text, locations, diagnostics, constants; passes that may crash run in a fork
- `shims/`, `loading/`: upstream shims; user files loaded definitions-only, their hygiene
- `rewrites/`, `inputs/`: the rewrites and how export applies them; a module's example inputs
- `culprits/`: the ops a backend rejects, at their lines, and partial lowering
- `stages/`: torch.export and the FX import, pass pipelines, printed IR and files, LLVM
- `blocks/`: repeated blocks traced once and stitched as one function each
- `lowering/`: a job's exported program, held (`programs.py`, the pipeline load → inputs →
  construct → export), and `ProgramLowerer`, any target from the kept stages
- `verify/`: the compiled module run and compared with eager, the first diverging line
- `rewrite_jobs/`: rewrites proven and offered, a job's target with the rewrites it asks for
- `graph/`: the graph view's data (FX nodes, their lines and their IR)
- `onnx/`, `iree/`: an ONNX file's graph imported and lowered; the IREE targets: the Linalg IR
  compiled by IREE, run, verified, timed, exported
- `job_handlers`, `main`: the table of jobs, the process
"""
