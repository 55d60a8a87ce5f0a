"""ptxds: build, verify and publish datasets of PTX equivalence groups."""
__version__ = "0.1.0"
