"""The stages of a lowering, each kept by the lowerer (lowering/): torch.export and the FX
import, pass pipelines, printed IR and files, the LLVM target.

- `torch_export`: torch.export a module, then import it into MLIR (weights frozen in)
- `export_errors`: how a torch.export failure reads, and where it is located
- `dynamic_spec`: which example tensor dim each entry of a `dynamic_shapes` spec names
- `pipeline`: pass pipelines run with diagnostics captured, the IR after each pass
- `artifacts`: printed IR with its source map, the fx target, files written to disk
- `llvm`: the `llvm` target, linalg-on-tensors → LLVM dialect for the JIT
- `half_floats`: 16-bit float conversions as integer arithmetic (no runtime builtins needed)
"""
