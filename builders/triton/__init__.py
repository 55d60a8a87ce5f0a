"""The Triton source: the built-in @triton.jit suite (``kernels.py``) compiled for explicit
targets, and ingest of Triton cache / kernel-dump folders (``builder.py``; a dump folder's
launch facts come from recompiling its IR, ``recover.py``; ``dump_example.py`` writes a small
dump tree to try it on)."""
from builders.triton.builder import (TritonBuilder, TritonDumpBuilder, compile_key, compile_kernel,
                                     specialize, suite_groups)

__all__ = ["TritonBuilder", "TritonDumpBuilder", "compile_key", "compile_kernel", "specialize",
           "suite_groups"]
