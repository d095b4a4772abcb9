"""How much of what user code prints in the worker reaches the client's log.

A module may print 100 MB; forwarding all of it as `window/logMessage` would flood the editor
(and the protocol) with noise. Each window of time forwards a bounded number of bytes and then
one line saying how much was left out.
"""

from __future__ import annotations

import time
from collections.abc import Callable

BUDGET_BYTES = 64 * 1024
WINDOW_S = 10.0


class OutputBudget:
    """Forward at most `budget` bytes of worker output per `window` seconds to `emit`."""

    def __init__(self, emit: Callable[[str], None], *, budget: int = BUDGET_BYTES,
                 window: float = WINDOW_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._emit = emit
        self._budget = budget
        self._window = window
        self._clock = clock
        self._window_start = clock()
        self._used = 0
        self._suppressed = 0

    def feed(self, stream: str, text: str) -> None:
        """Pass on the lines of `text` that fit the budget; count the rest."""
        self._roll_window()
        for line in text.rstrip().splitlines():
            size = len(line) + 1
            if self._used + size <= self._budget:
                self._used += size
                self._emit(f"[worker {stream}] {line}")
            else:
                if not self._suppressed:
                    self._emit(f"[worker {stream}] … output beyond {self._budget // 1024} KB "
                               f"in {self._window:g} s is not forwarded")
                self._suppressed += size

    def _roll_window(self) -> None:
        now = self._clock()
        if now - self._window_start < self._window:
            return
        if self._suppressed:
            self._emit(f"[worker] {self._suppressed} bytes of output were not forwarded")
        self._window_start, self._used, self._suppressed = now, 0, 0
