"""Rewrites proven and offered, and a job's target lowered with the rewrites it asks for.

Above lowering/ and verify/: a proof lowers the rewritten module and verifies it against eager.
The rewrites themselves, and how they are applied at export, are in rewrites/.

- `proof`: a rewrite is offered only when it lowers alone, matches the op and the module verifies
- `offers`: a module's culprits, each with its proven rewrites or why none
- `variants`: the rewrites a job asks for (`rewrites=` comment, job) → its lowerer
- `rewriting`: the worker's `rewrites` job and the lowerer of a lower/verify target
"""
