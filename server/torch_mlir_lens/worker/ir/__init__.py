"""The bottom of the worker: MLIR text, locations and diagnostics, and passes run in a fork.

Nothing here knows about jobs, culprits or targets; every other worker package builds on it.

- `locations`: MLIR locations → the user's source frames
- `library_frames`: which frames of a call chain are library code
- `library_diags`: those library lines added to an unsupported-op diagnostic
- `ir_text`: IR text for people, and the map from printed IR lines to source lines
- `ir_constants`: reading and replacing constant operands of Torch-dialect ops
- `literals`: weights into MLIR without Python lists, or without values at all
- `mlir_diagnostics`: MLIR diagnostics captured instead of printed to fd 2
- `op_aliases`: which aten ops torch documents as aliases of each other
- `crash_guard`: a step that can kill the process (an MLIR pass that aborts) run in a fork
"""
