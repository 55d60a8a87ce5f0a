"""The Triton source: the built-in @triton.jit suite (``kernels.py``) compiled for explicit
targets, and ingest of Triton cache / kernel-dump folders (``builder.py``)."""
from builders.triton.builder import (TritonBuilder, TritonDumpBuilder, compile_key, compile_kernel,
                                     specialize, suite_groups)

__all__ = ["TritonBuilder", "TritonDumpBuilder", "compile_key", "compile_kernel", "specialize",
           "suite_groups"]
