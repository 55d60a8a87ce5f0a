"""Instrumented copies of a kernel's PTX that the verifier runs beside it: the coverage
probe of a mutated site (``probe``), the divergence and ordering probes, delayed warps
(``delays``) and asynchronous copies made visible to racecheck (``sync_copies``)."""
