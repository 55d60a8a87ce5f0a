"""``ptxds verify`` as one call: the verifier's run over a dataset folder (``verify.
verify_dataset`` with its ``VerifyOptions``), then the output folder published once (pairs,
by-shape configs, card). The CLI and a source's own commands (builders/commands.py) verify
through it."""
from __future__ import annotations

from builders import source_credits
from dataset_spec.store.dataset import Dataset
from dataset_spec.store.shards import part_files


def verify_and_publish(dataset, out_dir, options=None, executor=None, progress: bool = True):
    """Verify ``dataset`` into ``out_dir`` as ``options`` (``verify.VerifyOptions``; None:
    the defaults) say, on ``executor``'s GPU workers and assembly pool (None: local ones),
    then publish ``out_dir`` once. Returns the ``VerifySummary``."""
    from verify import verify_dataset
    means = {"start_workers": executor.gpu_workers, "assembly_pool": executor.assembly_pool} if executor else {}
    summary = verify_dataset(dataset, out_dir, options, progress=progress, **means)
    if part_files(out_dir, "kernels"):  # nothing written when no group matched
        Dataset(out_dir, credits=source_credits).publish(progress)
    return summary
