"""Exceptions raised by ptx_tools; each carries what a user needs to act on it."""
from __future__ import annotations

from dataset_spec.errors import PtxdsError


class PtxError(PtxdsError, ValueError):
    """Malformed PTX. ``line`` is the 1-based line where the problem was found."""

    def __init__(self, line: int, reason: str):
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


class ToolchainError(PtxdsError, RuntimeError):
    """A CUDA tool is missing or unusable; the message says what to install."""


class ToolRunError(PtxdsError, RuntimeError):
    """A CUDA tool ran and failed. ``log`` holds its full output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class CompileError(ToolRunError):
    """nvcc rejected the source (or timed out); ``log`` holds the compiler output."""


class AssemblyError(ToolRunError):
    """ptxas rejected the PTX (or timed out); ``log`` holds the assembler output."""


def first_lines(log: str, limit: int = 15) -> str:
    """The first non-empty lines of a tool log, for an exception message."""
    lines = [line for line in log.splitlines() if line.strip()]
    text = "\n".join(lines[:limit])
    if len(lines) > limit:
        text += f"\n... ({len(lines) - limit} more lines)"
    return text
