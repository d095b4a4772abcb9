"""Culprits: every op a backend rejects, at the Python line and call that made it, and the
partial lowering around them.

- `illegal_ops`: every op a backend cannot lower, each at its user line
- `reasons`: why a backend refuses an op (its own message, else a rule's)
- `op_isolation`: does an op lower alone? (verdicts cached for the worker's life)
- `line_context`: does an op lower with the rest of its source line?
- `partial`: the target IR for everything a backend accepts, rejected ops kept in place
- `crash_locate`: the pass and op a crashed pipeline died on
- `fx_origins`: the Python call (FX node) an op of the Torch IR came from
- `forward_site`: where `forward` returns, for a failure no op carries
- `scalar_boundary`: scalars at the function's boundary, the culprit behind a rejected `func.func`
- `culprit_diags`: rejected ops → one diagnostic per cause and line
- `failures`: what a failed lowering shows: partial IR and one diagnostic per cause
"""
