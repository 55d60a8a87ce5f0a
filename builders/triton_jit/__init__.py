"""The triton-jit source: any @triton.jit kernel importable from a module, compiled ahead of
time for explicit targets from a call description (docs/triton-jit.md). ``description.py``
reads the file, ``kernel_ref.py`` imports the kernel, ``specialize.py`` mirrors the JIT's
argument specialisation, ``builder.py`` compiles and makes the rows."""
from builders.triton_jit.builder import TritonJitBuilder, TritonJitOptions
from builders.triton_jit.description import CallDescriptionError, load_description

__all__ = ["TritonJitBuilder", "TritonJitOptions", "CallDescriptionError", "load_description"]
