"""``VerifyOptions``: the settings of one verification run, typed and checked once, carried
from ``ptxds verify``'s flags (or a library caller) to ``verify_dataset`` and the runner.

Only what the user chooses lives here; the means of a run (a progress bar, the executor's
worker and assembly-pool factories) are ``verify_dataset``'s own keyword arguments.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from dataset_spec.errors import PtxdsError

from .trials.reference import BACKENDS

INPUTS = ("auto", "host")


class VerifyOptionError(PtxdsError, ValueError):
    """A verify setting of the wrong type or out of range (a usage error)."""
    usage = True


@dataclass(frozen=True)
class VerifyOptions:
    """What one ``ptxds verify`` run does (``verify_dataset`` says what each one means).

    ``groups``: fnmatch pattern on group_id; ``trials``: trials per problem (None: one per
    trial kind); ``timing``: time the passing members; ``workers``: GPU workers (None: one
    per GPU); ``kernel_timeout``: seconds a member may take before it counts as hung;
    ``assemble_jobs``: processes assembling PTX ahead of the GPU (None: all cores, 0: none);
    ``time_budget``: seconds of timing per passing row; ``reference``: where float64 work
    runs (auto, numpy, torch); ``sanitize``: every member under compute-sanitizer too;
    ``device_outputs``: judge outputs on the GPU where it can; ``inputs``: who draws trial
    inputs (auto, host); ``split``: spread a group's members over several GPUs;
    ``costs_from``: a verified dataset whose measured seconds schedule the GPUs;
    ``racecheck``: racecheck every passing member that uses shared memory; ``trial_salt``:
    mixed into every trial's seed ('' : seeds from the group alone)."""
    groups: Optional[str] = None
    trials: Optional[int] = None
    timing: bool = True
    workers: Optional[int] = None
    kernel_timeout: float = 20.0
    assemble_jobs: Optional[int] = None
    time_budget: float = 1.0
    reference: str = "auto"
    sanitize: bool = False
    device_outputs: bool = True
    inputs: str = "auto"
    split: bool = True
    costs_from: Optional[str] = None
    racecheck: bool = True
    trial_salt: str = ""

    def __post_init__(self):
        for name, kind in (("trials", int), ("workers", int), ("assemble_jobs", int), ("kernel_timeout", float),
                           ("time_budget", float)):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise VerifyOptionError(f"{name} must be a number, got {value!r}")
            try:
                converted = kind(value)
            except ValueError:
                raise VerifyOptionError(f"{name} must be a number, got {value!r}") from None
            object.__setattr__(self, name, converted)
        if self.trials is not None and self.trials < 1:
            raise VerifyOptionError(f"trials must be >= 1, got {self.trials}")
        if self.workers is not None and self.workers < 0:
            raise VerifyOptionError(f"workers must be >= 0, got {self.workers}")
        if self.kernel_timeout <= 0 or self.time_budget <= 0:
            raise VerifyOptionError(f"kernel_timeout and time_budget must be > 0 seconds, got "
                                    f"{self.kernel_timeout} and {self.time_budget}")
        if self.reference not in BACKENDS:
            raise VerifyOptionError(f"reference must be one of {BACKENDS}, got {self.reference!r}")
        if self.inputs not in INPUTS:
            raise VerifyOptionError(f"inputs must be one of {INPUTS}, got {self.inputs!r}: use auto or host")
        if self.costs_from is not None:
            object.__setattr__(self, "costs_from", str(self.costs_from))
        object.__setattr__(self, "trial_salt", str(self.trial_salt))

    def replace(self, **settings) -> "VerifyOptions":
        """These options with ``settings`` (field names) changed; an unknown name is an error
        naming the fields."""
        unknown = sorted(set(settings) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise VerifyOptionError(f"verify takes no setting {unknown[0]!r}; its settings: "
                                    + ", ".join(f.name for f in dataclasses.fields(self)))
        return dataclasses.replace(self, **settings) if settings else self
