"""Library lines in unsupported-op diagnostics: where inside library code an op was made.

An op rejected by a backend is reported at the user's line; when it was made inside library
code (library_frames.py says which files are), the diagnostic also names those library lines
and lists each as a related location, innermost first.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch_mlir_lens.protocol.frames import SourceFrame, short_path
from torch_mlir_lens.protocol.results import LensDiagnostic, RelatedLocation
from torch_mlir_lens.rules.culprits import short_op
from torch_mlir_lens.worker.ir.locations import LocationResolver

MAX_RELATED = 6  # library frames listed per chain
MAX_NAMED = 3  # library lines named in a message
ORIGIN = " comes from here"  # the related message of the frame that made the op


def related_frames(chain: Sequence[SourceFrame], op: str) -> list[RelatedLocation]:
    """The library frames inside the chain's innermost user frame, as related locations:
    where the op is made, then each library call on the way out to the user's line."""
    part: list[SourceFrame] = []
    for frame in chain:
        if not frame.library:
            break
        part.append(frame)
    out = []
    for i, frame in enumerate(part[:MAX_RELATED]):
        message = f"{op}{ORIGIN}" if i == 0 else "called from here"
        out.append(RelatedLocation(frame.file, frame.line, message))
    return out


def add_library_frames(diags: list[LensDiagnostic], locations: Sequence[tuple[str, str]],
                       resolver: LocationResolver) -> None:
    """Name the library lines behind unsupported-op diagnostics found inside library code.

    `locations` are the (op name, location text) of the ops found, in any number; each
    diagnostic of the same op at the same user line gets the library frames of every such
    op in `related` (several library lines may reach the backend through one user line), and
    its message names where the ops were made.
    """
    by_key: dict[tuple[str, str | None, int | None], list[RelatedLocation]] = {}
    for name, loc in locations:
        frames = resolver.user_frames(loc)
        key = (short_op(name), frames[0][0] if frames else None, frames[0][1] if frames else None)
        found = by_key.setdefault(key, [])
        for chain in resolver.full_chains(loc):
            for rel in related_frames(chain, name):
                if rel not in found:
                    found.append(rel)
    for d in diags:
        # A diagnostic names one cause: its primary op and the other ops of that cause.
        related = []
        for op in dict.fromkeys(short_op(o) for o in [d.op or "", *(d.ops or [])]):
            related += [r for r in by_key.get((op, d.file, d.line), []) if r not in related]
        if not related:
            continue
        d.related = list(related)
        d.message += origins_text(related)


def origins_text(related: Sequence[RelatedLocation]) -> str:
    """` (in resample.py:7)`: where a diagnostic's ops were made in library code, as its
    message ends; "" when `related` names none."""
    origins = [f"{short_path(r.file)}:{r.line}" for r in related
               if r.message.endswith(ORIGIN)][:MAX_NAMED]
    return f" (in {', '.join(origins)})" if origins else ""

