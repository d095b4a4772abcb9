"""The one error of the check gate's inputs: a setting, a PATH, a baseline or an output that
cannot be used, said before (or instead of) a run; the command line prints it as
`FILE: message` and exits 2."""

from __future__ import annotations


class CheckInputError(Exception):
    """A bad input of `check` or `merge` (exit 2), with the file it is about when there is one."""

    def __init__(self, message: str, file: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
