"""Rewrites: a way past an op a backend rejects, proven against eager before it is offered.

    table.py       Rewrite: decomposition-table entries answering some culprit ops
    library/       the rewrites kept here (erfinv, histc, zero-sized tensors), plain PyTorch
    candidates.py  a culprit's candidates: the library's, then torch._decomp's and torch._refs'
    capture.py     the values reaching an op on the example inputs; an op cut out alone
    apply.py       a program decomposed again with rewrites; which rewrite made an op
    snippet.py     standalone Python that reproduces the IR with plain torch-mlir

Their proof, offers and the `rewrites` job lower and verify, so they sit above lowering/ and
verify/ in rewrite_jobs/; why a backend refuses an op is culprits/reasons.py.

Rewrites are applied as entries of the decomposition table at export time, as torch-mlir's
own decompositions are: the user's code is never edited.
"""
