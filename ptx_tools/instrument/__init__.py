"""Instrumented copies of a kernel's PTX that the verifier runs beside it: the coverage
probe of a mutated site (``probe``), the divergence and ordering probes, delayed warps
(``delays``), asynchronous copies made visible to racecheck (``sync_copies``) and the
sample of blocks racecheck watches in a large launch (``block_sample``)."""
