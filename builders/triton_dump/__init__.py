"""The triton-dump source: rows from an existing Triton cache or kernel-dump folder
(``builder.py``), mapped to problems by a problem spec file (``specs.py``), with messages in
the kernel's own terms (``messages.py``); a dump folder's launch facts come from recompiling
its IR (``recover.py``); ``example.py`` writes a small dump tree to try it on."""
from builders.triton_dump.builder import TritonDumpBuilder, TritonDumpOptions

__all__ = ["TritonDumpBuilder", "TritonDumpOptions"]
