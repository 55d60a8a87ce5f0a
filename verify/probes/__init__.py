"""Checks beyond the trials: compute-sanitizer's memcheck and racecheck (``sanitize``, ``racecheck_server``,
``race_focus``), delayed warps (``race_delays``) and the coverage probes of a mutated site (``coverage``)."""
