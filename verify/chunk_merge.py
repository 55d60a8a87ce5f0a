"""One group's chunks, verified on several GPUs, merged back into the group.

Each chunk (schedule.Chunk: contiguous members of one group) is checked and timed on one
GPU against the same seeded inputs and float64 references, and clusters its passing
members by agreement (outcome.Consensus) as the whole group would. ``merge_chunks`` puts
the chunks back in row order: rows and statuses concatenated, racecheck counts joined, and
one Consensus for the group (``merge_consensus``), which replays each chunk's cluster
representatives in row order against the clusters before them, so every member's outputs
take part in the group's agreement check through its cluster's representative. Pure: the
merge moves kept outputs to one device and compares them; it launches nothing (the runner
holds the quiet locks of ``chunk_devices`` meanwhile: no GPU it reads or writes is timing).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .device.device_outputs import is_tensor
from .judge.judge import device_of
from .judge.outcome import Consensus


@dataclass
class ChunkResult:
    """What verifying one chunk gave: its rows (verified, in row order), row statuses by
    build key, racecheck hazard counts, the prepared problems it judged against (digest ->
    (prepared, judged)) and its passing members' consensus per problem digest.
    ``refused``: the group was refused whole (its rows carry different problems).
    ``chunks``: the chunks merged into it; ``devices``: the GPUs its consensus lives on."""
    rows: list
    results: dict
    race_counts: dict = field(default_factory=dict)
    problems: dict = field(default_factory=dict)
    consensus: dict = field(default_factory=dict)
    refused: bool = False
    chunks: int = 1
    devices: list = field(default_factory=list)


def _outputs_on(outputs: list, device) -> list:
    """Per-trial outputs with every tensor on ``device`` (host arrays stay as they are)."""
    if device is None:
        return outputs
    return [{name: (value.to(device) if is_tensor(value) else value) for name, value in trial.items()}
            for trial in outputs]


def _specs_device(specs: list):
    """The device the agreement bounds of ``specs`` live on (None: the host)."""
    return device_of(*[bound for spec in specs for bound in spec.agreement_bounds])


def chunk_devices(chunks: list) -> list:
    """The devices (torch devices, host excluded) holding the chunks' agreement bounds and
    kept outputs: each chunk's judging GPU."""
    found = []
    for chunk in chunks:
        for consensus in chunk.consensus.values():
            device = _specs_device(consensus.specs)
            if device is not None and device not in found:
                found.append(device)
    return found


def merge_consensus(parts: list) -> Consensus:
    """One Consensus for a group from its chunks' (in row order). Representatives of each
    chunk's live clusters are added in the order their clusters were made (each compared
    with every cluster already merged, on the first chunk's device); the other members of a
    cluster follow their representative, keeping their measured disagreement with it; a
    member that found no room in its chunk (more than MAX_CLUSTERS clusters) stays outside.
    One chunk: itself."""
    if len(parts) == 1:
        return parts[0]
    merged = Consensus(parts[0].specs)
    device = _specs_device(merged.specs)
    for part in parts:
        placed = {}  # the chunk's cluster id -> merged cluster id (or -1)
        representatives = {cluster.representative: (cid, cluster) for cid, cluster in part.clusters.items()}
        for key, home in part.home.items():  # insertion order: the chunk's row order
            if key in representatives:
                cid, cluster = representatives[key]
                merged.add(key, _outputs_on(cluster.outputs, device), cluster.reference_ratio)
                placed[cid] = merged.home[key]
                continue
            target = placed.get(home, -1)
            merged.home[key] = target if target in merged.clusters else -1
            ratio = part.ratios[key].get(home)
            merged.ratios[key] = {target: ratio} if ratio is not None and target >= 0 else {}
            merged.messages[key] = {target: ""} if target >= 0 else {}
            if target in merged.clusters:
                merged.clusters[target].members.append(key)
    return merged


def merge_chunks(chunks: list) -> ChunkResult:
    """The group's result from its chunks' (in row order): rows and statuses in row order,
    racecheck counts joined, the first chunk's prepared problem per digest (every chunk
    prepared the same seeded inputs), and one Consensus per problem digest."""
    rows, results, race_counts, problems, parts = [], {}, {}, {}, {}
    for chunk in chunks:
        rows += chunk.rows
        results.update(chunk.results)
        race_counts.update(chunk.race_counts)
        for digest, prepared in chunk.problems.items():
            problems.setdefault(digest, prepared)
        for digest, consensus in chunk.consensus.items():
            parts.setdefault(digest, []).append(consensus)
    merged = {digest: merge_consensus(found) for digest, found in parts.items()}
    return ChunkResult(rows, results, race_counts, problems, merged, refused=any(chunk.refused for chunk in chunks),
                       chunks=len(chunks), devices=chunk_devices([ChunkResult([], {}, consensus=merged)]))
