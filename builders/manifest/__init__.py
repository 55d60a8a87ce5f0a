"""The "bring your own kernels" source, ``ptx``: a JSON or YAML manifest naming one problem
and the PTX or CUDA C files that claim to compute it (``read.py`` reads and checks it), one
row per member and target arch (``builder.py``). The format is documented in
docs/manifest.md."""
from builders.manifest.builder import ManifestBuilder, ManifestOptions
from builders.manifest.read import (EXPECTATIONS, Manifest, ManifestError, Member, load_manifest, read_problem,
                                    resolve_launches)

__all__ = ["ManifestBuilder", "ManifestOptions", "ManifestError", "Manifest", "Member", "load_manifest",
           "read_problem", "resolve_launches", "EXPECTATIONS"]
