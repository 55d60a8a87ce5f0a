"""The GPU side of ptxds: run every group's members, prove equivalence, time them.

``verify_dataset`` is the entry point, ``VerifyOptions`` what a run does; the submodules
(driver, args, inputs, compare, outcome, worker, timing, assembly_pool) are usable on their
own.
"""
from .device.driver import DriverError, NoDriverError
from .options import VerifyOptions
from .runner import GroupSummary, VerifySummary, verify_dataset

__all__ = ["verify_dataset", "VerifyOptions", "VerifySummary", "GroupSummary", "DriverError", "NoDriverError"]
