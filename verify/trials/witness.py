"""Regenerate a verified negative's witness on the host: the trial's inputs come back from
its seed (inputs.make_trial_inputs), the float64 reference is recomputed with numpy, and
the element the witness names is read from it. No GPU is needed: a trial drawn by the
device generator (the row's ``provenance.verify.input_generators``) is redrawn by the same counter-based
generator with torch on the CPU, which gives the same values."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from dataset_spec.errors import PtxdsError
from dataset_spec.model import KernelRecord
from dataset_spec.ops import get_op

from .inputs import make_trial_inputs, HOST_GENERATOR
from .reference import reference_outputs


class WitnessError(PtxdsError, ValueError):
    """The row has no witness that names an element."""


@dataclass
class RegeneratedWitness:
    kernel_id: str
    trial: int
    kind: str
    seed: int
    seed_matches: bool          # the seed drawn now equals the stored one
    output: str
    flat_index: int
    index: tuple                # the element's index in the output's shape
    stored_reference: Optional[float]
    reference: float            # recomputed now
    bound: Optional[float]
    value: Optional[float]      # the wrong member's value
    consensus_kernel_id: Optional[str]
    consensus_value: Optional[float]

    def lines(self) -> list:
        out = [f"kernel {self.kernel_id}: trial {self.trial} ({self.kind}), seed {self.seed}"
               + ("" if self.seed_matches else " (the seed drawn now differs: the problem changed)"),
               f"output {self.output}[{', '.join(map(str, self.index))}] (flat index {self.flat_index})",
               f"  reference (recomputed)   {self.reference!r}",
               f"  reference (stored)       {self.stored_reference!r}",
               f"  this member              {self.value!r}"]
        if self.consensus_kernel_id:
            out.append(f"  consensus {self.consensus_kernel_id}  {self.consensus_value!r}")
        if self.value is not None and self.bound is not None:
            out.append(f"  |member - reference| = {abs(self.value - self.reference):.6g}, bound {self.bound:.6g}")
        return out


def regenerate(record: KernelRecord, witness: Optional[dict] = None) -> RegeneratedWitness:
    """The witness of ``record`` (or the given one) with its reference recomputed."""
    witness = witness or record.witness
    if not witness or witness.get("flat_index") is None or witness.get("trial") is None:
        reason = (witness or {}).get("reason") or f"status {record.status}"
        raise WitnessError(f"kernel {record.kernel_id} has no element witness ({reason}); "
                           "only wrong results and disagreements name an element")
    problem = record.problem
    trial, reference = _redraw(record, int(witness["trial"]), trial_generator(record, int(witness["trial"])))
    name, flat = witness["output"], int(witness["flat_index"])
    shape = problem.buffer(name).shape
    values = np.asarray(reference[name], dtype=np.float64).reshape(-1)
    return RegeneratedWitness(
        kernel_id=record.kernel_id, trial=trial.trial, kind=trial.kind, seed=trial.seed,
        seed_matches=witness.get("seed") in (None, trial.seed), output=name, flat_index=flat,
        index=tuple(int(i) for i in np.unravel_index(flat, shape)),
        stored_reference=witness.get("reference"), reference=float(values[flat]), bound=witness.get("bound"),
        value=witness.get("value"), consensus_kernel_id=witness.get("consensus_kernel_id"),
        consensus_value=witness.get("consensus_value"))


def trial_generator(record: KernelRecord, trial: int) -> str:
    """The generator that drew ``trial``'s inputs, as the verifier recorded it (rows verified
    before it was recorded: the host generator)."""
    generators = ((record.provenance or {}).get("verify") or {}).get("input_generators") or []
    return generators[trial] if 0 <= trial < len(generators) else HOST_GENERATOR


def trial_salt(record: KernelRecord) -> str:
    """The salt of the verify run that drew the record's trials ('' for an unsalted run)."""
    return ((record.provenance or {}).get("verify") or {}).get("trial_salt") or ""


def _redraw(record: KernelRecord, trial_number: int, generator: str) -> tuple:
    """(TrialInputs, float64 reference per output as numpy) of one trial, drawn by ``generator``."""
    from . import device_rng
    problem = record.problem
    if generator == HOST_GENERATOR:
        trial = make_trial_inputs(problem, record.group_id, trial_number, trial_salt(record))
        return trial, reference_outputs(get_op(problem.op), dict(trial.values), problem, "numpy")
    if generator != device_rng.GENERATOR:
        raise WitnessError(f"kernel {record.kernel_id}: its inputs came from generator {generator!r}, which this "
                           f"version cannot redraw; use the ptxds version that verified it")
    try:
        import torch
    except ImportError:
        raise WitnessError(f"kernel {record.kernel_id}: its inputs came from {generator}, which needs torch to "
                           "redraw; pip install torch") from None
    from .device_prepare import make_trial_inputs_device
    trial = make_trial_inputs_device(problem, record.group_id, trial_number, torch.device("cpu"), trial_salt(record))
    reference = get_op(problem.op).reference(dict(trial.values), problem)
    return trial, {name: value.double().numpy() for name, value in reference.items()}
