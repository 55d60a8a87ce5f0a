"""Install layout: one top-level package, ``ptxds``. The checkout keeps its five folders
(``builders``, ``dataset_spec``, ``ptx_tools``, ``verify`` beside ``ptxds``); installed,
the four are subpackages of ``ptxds`` (``ptxds.verify``, ...), so a distribution that
installs a top-level ``verify`` or ``builders`` neither overwrites nor shadows them.
``import ptxds`` makes the short names import those subpackages (ptxds/_layout.py).
Everything else is in setup.cfg."""
from setuptools import find_packages, setup

INNER = ("builders", "dataset_spec", "ptx_tools", "verify")

setup(
    package_dir={f"ptxds.{name}": name for name in INNER},
    packages=find_packages(include=["ptxds", "ptxds.*"])
    + [f"ptxds.{p}" for p in find_packages(include=[f"{name}{tail}" for name in INNER for tail in ("", ".*")])],
)
