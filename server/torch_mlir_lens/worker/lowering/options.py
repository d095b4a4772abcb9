"""What to lower and how to print it: the options every lowering step reads."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LowerOptions:
    """How to lower and print."""

    keep_weights: bool = False  # False: dense_resource blobs elided when printing
    debug_info: bool = False  # True: locations stay in the printed IR
    print_after_all: bool = False  # fill LowerResult.passes with the IR after each pass
    list_unsupported: bool = True  # on failure, list every unsupported op, not just the first
    strict: bool = False  # torch.export strict mode (used by lower_module)
