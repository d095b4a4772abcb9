"""A one-line progress bar on stderr, drawn only when stderr is a terminal."""

from __future__ import annotations

import shutil
import sys
from typing import TextIO


class Progress:
    """`[#####     ] 12/200 models/heads.py::QuantileHead`, redrawn in place."""

    def __init__(self, total: int, stream: TextIO | None = None,
                 enabled: bool | None = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._width = 0

    def step(self, label: str) -> None:
        """One more module done."""
        self.done += 1
        if not self.enabled or self.total == 0:
            return
        columns = shutil.get_terminal_size((80, 20)).columns
        bar_width = 20
        filled = bar_width * self.done // self.total
        text = f"[{'#' * filled}{' ' * (bar_width - filled)}] {self.done}/{self.total} {label}"
        text = text[:max(10, columns - 1)]
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def close(self) -> None:
        """Erase the bar, so the report starts on a clean line."""
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
