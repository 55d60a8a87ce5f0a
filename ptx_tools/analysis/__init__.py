"""What PTX alone shows about a kernel: which barriers order shared memory (``barriers``),
where a mutant differs from its base (``sites``), and why a surviving mutant may still
compute its base's function (``equivalence``)."""
