"""ptxds: build, verify and publish datasets of PTX equivalence groups."""
from ._layout import alias_installed_packages

__version__ = "0.1.0"

alias_installed_packages()  # installed: ``verify`` etc. are ptxds.verify etc. (setup.py)
