"""Rewrites: a way past an op a backend rejects, proven against eager before it is offered.

    model.py       Rewrite: decomposition-table entries answering some culprit ops
    library/       the rewrites kept here (erfinv, histc, zero-sized tensors), plain PyTorch
    candidates.py  a culprit's candidates: the library's, then torch._decomp's and torch._refs'
    capture.py     the values reaching an op on the example inputs; an op cut out alone
    proof.py       (a) lowers alone, (b) matches the op on those values and edge cases,
                   (c) the module rewritten lowers and matches eager (Verify)
    offers.py      a module's culprits, each with its proven rewrites or why none
    apply.py       a program decomposed again with rewrites; which rewrite made an op
    variants.py    the rewrites a job asks for (`rewrites=` comment, job) → its lowerer
    jobs.py        the worker's `rewrites` job and the lowerer of a lower/verify target
    snippet.py     standalone Python that reproduces the IR with plain torch-mlir
    reasons.py     why a backend refuses an op (the rules are rules/refusals.py)

Rewrites are applied as entries of the decomposition table at export time, as torch-mlir's
own decompositions are: the user's code is never edited.
"""
