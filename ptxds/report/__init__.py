"""``ptxds report``: a static HTML page of a dataset (gather -> plots -> html), and the same
numbers as text for ``ptxds info``."""
from .build import DEFAULT_MAX_GROUPS, ReportResult, UnknownKnobError, build_report
from .gather import KNOBS, EmptyDatasetError, gather

__all__ = ["build_report", "ReportResult", "UnknownKnobError", "DEFAULT_MAX_GROUPS", "KNOBS",
           "EmptyDatasetError", "gather"]
