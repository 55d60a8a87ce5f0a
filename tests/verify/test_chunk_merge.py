"""A group verified in chunks on several GPUs, merged: the agreement check over the merged
chunks gives every member the verdict one Consensus over the whole group gives (all
agree; an odd member out; a skewed cluster listed first loses to the members nearest the
reference wherever they fall), rows and statuses come back in row order, and outputs kept
as torch tensors are compared on one device."""
from __future__ import annotations

import numpy as np
import pytest

from verify.chunk_merge import ChunkResult, merge_chunks, merge_consensus
from verify.trials.inputs import float_to_bits
from verify.judge.outcome import Consensus, OutputSpec

REFS = [{"out": np.linspace(-1, 1, 8) * (t + 1)} for t in range(2)]


def _specs(bound: float) -> list:
    return [OutputSpec("out", "float32", [np.full(8, bound)] * 2, [np.full(8, bound)] * 2)]


def _outputs(delta: float) -> list:
    return [{"out": float_to_bits(r["out"] + delta, "float32")} for r in REFS]


def _one_and_split(members: list, cuts: list, bound: float = 3e-5) -> tuple:
    """(verdicts of one Consensus over ``members`` [(key, delta, reference ratio)], verdicts
    of chunks cut at ``cuts`` and merged)."""
    whole = Consensus(_specs(bound))
    for key, delta, ratio in members:
        whole.add(key, _outputs(delta), ratio)
    parts, edges = [], [0] + cuts + [len(members)]
    for a, b in zip(edges, edges[1:]):
        part = Consensus(_specs(bound))
        for key, delta, ratio in members[a:b]:
            part.add(key, _outputs(delta), ratio)
        parts.append(part)
    return whole.verdicts(), merge_consensus(parts).verdicts()


def _agrees(verdicts: dict) -> dict:
    return {key: agrees for key, (agrees, _, _) in verdicts.items()}


def test_members_that_all_agree_agree_after_the_merge():
    members = [(f"m{i}", (i % 3 - 1) * 1e-6, 0.1) for i in range(10)]
    whole, split = _one_and_split(members, [4, 7])
    assert _agrees(whole) == _agrees(split) and all(_agrees(split).values())
    assert list(split) == [key for key, _, _ in members]
    for key in ("m0", "m1", "m2", "m3"):  # the first chunk measures exactly what one GPU does
        assert split[key][1] == whole[key][1]
    assert all(ratio < 1 for _, ratio, _ in split.values())


@pytest.mark.parametrize("odd_at", [0, 3, 5, 9])
def test_the_odd_member_out_disagrees_wherever_its_chunk_is(odd_at):
    members = [(f"m{i}", 1e-6 * (i % 2), 0.1) for i in range(10)]
    members[odd_at] = ("odd", 5e-5, 0.2)  # 5e-5 from the others: beyond the 3e-5 agreement bound
    whole, split = _one_and_split(members, [3, 6])
    assert _agrees(whole) == _agrees(split)
    assert [key for key, agrees in _agrees(split).items() if not agrees] == ["odd"]
    assert "consensus" in split["odd"][2] and split["odd"][1] > 1


def test_the_cluster_nearest_the_reference_wins_across_chunks():
    # a skewed pair first (within their error bound, 6e-5 from the correct members), the
    # correct members only in the later chunks
    members = [("skewed", 6e-5, 0.9), ("skewed_twin", 5.9e-5, 0.88), ("correct", 0.0, 0.01),
               ("correct_2", 1e-6, 0.02), ("skewed_3", 6.1e-5, 0.9), ("correct_3", -1e-6, 0.02)]
    whole, split = _one_and_split(members, [2, 4])
    assert _agrees(whole) == _agrees(split)
    assert {k for k, a in _agrees(split).items() if a} == {"correct", "correct_2", "correct_3"}


def test_merged_chunks_keep_row_order_statuses_and_racecheck_counts():
    specs = _specs(3e-5)
    first, second = Consensus(specs), Consensus(specs)
    first.add("a", _outputs(0.0), 0.1)
    second.add("c", _outputs(5e-5), 0.5)
    chunks = [ChunkResult(["row a", "row b"], {"a": "passed", "b": "crashed"}, {"a": 0}, {"d": ("p0", "j0")},
                          {"d": first}),
              ChunkResult(["row c"], {"c": "passed"}, {"c": 2}, {"d": ("p1", "j1")}, {"d": second})]
    merged = merge_chunks(chunks)
    assert merged.rows == ["row a", "row b", "row c"]
    assert merged.results == {"a": "passed", "b": "crashed", "c": "passed"}
    assert merged.race_counts == {"a": 0, "c": 2}
    assert merged.problems == {"d": ("p0", "j0")}  # every chunk prepared the same seeded trials
    verdicts = merged.consensus["d"].verdicts()
    assert verdicts["a"][0] and not verdicts["c"][0]
    assert not merged.refused and merge_chunks([ChunkResult([], {}, refused=True)]).refused


def test_outputs_kept_as_tensors_are_compared_on_the_first_chunk_device():
    torch = pytest.importorskip("torch")
    bound = torch.full((8,), 3e-5, dtype=torch.float64)
    specs = [OutputSpec("out", "float32", [bound] * 2, [bound] * 2)]

    def tensors(delta):
        return [{"out": torch.tensor(r["out"] + delta, dtype=torch.float32)} for r in REFS]
    parts = []
    for members in ([("a", 0.0), ("b", 1e-6)], [("c", -1e-6), ("odd", 5e-5)]):
        part = Consensus(specs)
        for key, delta in members:
            part.add(key, tensors(delta), 0.1)
        parts.append(part)
    verdicts = merge_consensus(parts).verdicts()
    assert {k: v[0] for k, v in verdicts.items()} == {"a": True, "b": True, "c": True, "odd": False}
