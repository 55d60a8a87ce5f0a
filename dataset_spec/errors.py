"""``PtxdsError``: the one base of every error a user can cause (a bad option, file, dataset
or machine). It carries a one-line ``message`` and an optional ``hint`` (the fix); the CLI
catches this class once and prints ``message; hint``. A leaf module: it imports nothing,
so every package of the project can raise under it."""
from __future__ import annotations


class PtxdsError(Exception):
    """An error the user can fix. ``str(error)`` is the message, then ``; hint`` when given."""

    def __init__(self, message: str = "", hint: str = ""):
        self.message, self.hint = str(message), hint
        super().__init__(f"{message}; {hint}" if hint else message)

    def one_line(self) -> str:
        """The first line of the message (a tool's log may follow it), for a terminal."""
        text = str(self)
        return text.splitlines()[0] if text else type(self).__name__
