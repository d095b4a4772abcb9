"""IREE targets: a module's Linalg IR compiled by IREE, run, verified, timed and exported.

A layer above `verify/` (it runs what IREE compiled as Verify runs what the JIT compiled);
the job handlers call it for the targets of `rules/iree_targets.py`.

    tools.py           IREE's versions and tools, found without importing it; what to install
    compile_input.py   the Linalg module as iree-compile reads it (locations kept, weights in it
                       or left outside as named parameters)
    compiler.py        one iree-compile run: the module, its dispatch-region IR, its errors
    compile_errors.py  IREE's errors at the user's lines, with the failing pass
    build.py           one compile per program, target and architecture, kept while it lives
    dispatches.py      the dispatch regions and the lines fused into each (the IR pane)
    lowering.py        an IREE target's LowerResult
    runtime.py         the compiled module run with iree.runtime
    timing.py          compiled against eager, per dispatch, per line
    verify.py          Verify on IREE's runtime
    export.py          the .vmfb written, and Python that runs it without this product
"""
