"""What a trial runs on: seeded inputs on the host (``inputs``) or on the device (``device_prepare``, ``device_rng``),
the float64 reference (``reference``, ``custom_reference``, ``reference_cache``) and a witness's inputs drawn again
(``witness``)."""
