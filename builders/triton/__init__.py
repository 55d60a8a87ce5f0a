"""The Triton source: the built-in @triton.jit suite (``kernels.py``) compiled for explicit
targets (``builder.py``), with the compile helpers other sources share (``compile.py``) and
the problem spec expressions, evaluated without ``eval`` (``expressions.py``). Ingest of
Triton cache / kernel-dump folders is the ``triton-dump`` source, ``builders/triton_dump/``."""
from builders.triton.builder import TritonBuilder, specialize, suite_groups
from builders.triton.compile import compile_key, compile_kernel

__all__ = ["TritonBuilder", "compile_key", "compile_kernel", "specialize", "suite_groups"]
