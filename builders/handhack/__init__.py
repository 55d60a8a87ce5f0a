"""The ``handhack`` source: hand-edited PTX. ``kernels.py`` holds the Triton Smith-Waterman
kernel, ``ptx_edit.py`` the edit that moves its ring buffers to shared memory, ``builder.py``
the built-in groups; ``ptxds add`` (ptxds/add.py) registers a hand-edited PTX into an
existing group."""
from .builder import HandhackBuilder

__all__ = ["HandhackBuilder"]
