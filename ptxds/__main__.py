"""``python -m ptxds``: the same as the ``ptxds`` command."""
from .cli import main

main()
