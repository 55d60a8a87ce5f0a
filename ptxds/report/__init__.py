"""``ptxds report``: a static HTML page of a dataset (gather -> plots -> html), and the same
numbers as text for ``ptxds info``.

Only ``gather`` and the text summary load here: the page and its plots (``build_report``,
which needs matplotlib from the ``report`` extra) load on first use, so ``ptxds info``
works with the base install."""
from .gather import KNOBS, EmptyDatasetError, gather

__all__ = ["build_report", "ReportResult", "UnknownKnobError", "DEFAULT_MAX_GROUPS", "KNOBS",
           "EmptyDatasetError", "gather"]

_PAGE_NAMES = ("build_report", "ReportResult", "UnknownKnobError", "DEFAULT_MAX_GROUPS")


def __getattr__(name: str):
    if name in _PAGE_NAMES:
        from . import build
        return getattr(build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
