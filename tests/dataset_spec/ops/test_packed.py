"""Packed sub-byte buffers (int4/uint4/int2/uint2): packing in CUTLASS's order, sizes,
input drawing, poisons, the unwritten-output check and the judge on packed outputs."""
from __future__ import annotations

import numpy as np
import pytest

from dataset_spec.model import Buffer, Problem, SpecError
from dataset_spec.packed import PACKED_DTYPES, element_range, pack, packed_nbytes, unpack
from verify.trials.inputs import (exact_values, float_to_bits, from_storage, make_trial_inputs, poison_array,
                           poison_words, storage_shape, unwritten_count, unwritten_mask)
from verify.judge.outcome import CheckResult, TrialRun, classify
from verify.runner import prepare_problem


@pytest.mark.parametrize("dtype", sorted(PACKED_DTYPES))
@pytest.mark.parametrize("count", [1, 2, 3, 7, 8, 9, 1001])
def test_pack_round_trip_every_value_and_odd_counts(dtype, count):
    low, high = element_range(dtype)
    values = np.arange(count) % (high - low) + low
    packed = pack(values, dtype)
    assert packed.dtype == np.uint8 and packed.size == packed_nbytes(dtype, count)
    assert np.array_equal(unpack(packed, dtype, count), values)


def test_low_bits_first_as_cutlass_stores_int4b_t():
    # cutlass::int4b_t arrays: element i at bit 4 * i of the storage, two's complement
    assert pack([1, -1], "int4").tolist() == [0xF1]
    assert pack([1, 2, 3], "uint4").tolist() == [0x21, 0x03]  # odd count: the last high nibble is 0
    assert pack([1, -2, 0, -1], "int2").tolist() == [0b11_00_10_01]
    assert unpack(np.array([0x8F], np.uint8), "int4", 2).tolist() == [-1, -8]
    assert unpack(np.array([0x8F], np.uint8), "uint4", 2).tolist() == [15, 8]


def test_pack_refuses_values_outside_the_element_range():
    with pytest.raises(ValueError, match=r"int4 values must lie in \[-8, 7\]"):
        pack([8], "int4")
    with pytest.raises(ValueError, match="uint2"):
        pack([-1], "uint2")


def test_buffer_bytes_are_packed():
    assert Buffer("A", "int4", (3, 5)).nbytes == 8      # 15 nibbles
    assert Buffer("A", "uint2", (7,)).nbytes == 2
    assert Buffer("A", "int4", (4096, 14336)).nbytes == 4096 * 14336 // 2
    assert storage_shape("int4", (3, 5)) == (8,)
    assert storage_shape("float16", (3, 5)) == (3, 5)
    with pytest.raises(SpecError, match="int3"):
        Buffer("A", "int3", (4,))


def _gemm_s4(m=8, n=6, k=13, out="int32"):
    return Problem("s4", "gemm", [Buffer("A", "int4", (m, k)), Buffer("B", "int4", (n, k)),
                                  Buffer("D", out, (m, n), "out")],
                   {"M": m, "N": n, "K": k, "layout_a": "row", "layout_b": "col", "layout_c": "row",
                    "accumulator": "int32"})


def test_inputs_draw_the_element_range_and_pack_it():
    problem = _gemm_s4()
    seen = set()
    for trial in range(5):
        inputs = make_trial_inputs(problem, "g", trial)
        a = inputs.storage["A"]
        assert a.dtype == np.uint8 and a.shape == (packed_nbytes("int4", 8 * 13),)
        assert inputs.values["A"].shape == (8, 13)
        assert np.array_equal(from_storage(a, "int4", (8, 13)), inputs.values["A"])
        assert inputs.values["A"].min() >= -8 and inputs.values["A"].max() <= 7
        seen |= set(inputs.values["A"].reshape(-1).tolist())
    assert {-8, 7} <= seen  # the full element range is drawn (edge/stress trials reach the ends)
    # out-of-range values saturate, halves round to even
    assert float_to_bits([9.0, -9.0, 2.5], "int4").tolist() == pack([7, -8, 2], "int4").tolist()


def test_from_storage_of_a_packed_buffer_needs_its_shape():
    with pytest.raises(ValueError, match="packed sub-byte buffer needs its shape"):
        from_storage(np.zeros(2, np.uint8), "int4")


def test_packed_poisons_differ_per_byte_and_unwritten_counts_elements():
    shape = (3, 3)  # 9 nibbles in 5 bytes
    words = poison_words("int4", 11)
    assert words[0][0] == words[1][0] == 1 and words[0][1] != words[1][1]
    first, second = (poison_array("int4", shape, w) for w in words)
    assert first.shape == second.shape == (5,)
    assert unwritten_count(first, second, "int4", words, shape) == 9
    # a kernel writes bytes: the first two (elements 0..3) written with the same value twice
    written = pack([1, 2, 3, 4], "int4")
    first[:2], second[:2] = written, written
    assert unwritten_mask(first, second, "int4", words).tolist() == [False, False, True, True, True]
    assert unwritten_count(first, second, "int4", words, shape) == 5
    # a written byte that happens to equal poison 1 in run 1 is still written (run 2 differs)
    first[2] = words[0][1]
    second[2] = words[0][1]
    assert unwritten_count(first, second, "int4", words, shape) == 3


def _packed_member(prepared, change=lambda t, bits: bits):
    runs = []
    for trial, ref in zip(prepared.trials, prepared.references):
        bits = float_to_bits(ref["D"], "int4")
        runs.append(TrialRun(trial.trial, {"D": change(trial.trial, bits.copy())}))
    return CheckResult(runs)


def test_judge_unpacks_packed_outputs_and_catches_one_wrong_nibble():
    problem = _gemm_s4(m=8, n=7, k=5, out="int4")  # 56 outputs; small K keeps most inside int4
    prepared = prepare_problem(problem, "s4", None)
    assert not prepared.refusal
    assert classify(_packed_member(prepared), prepared.specs, prepared.references).status == "passed"

    def high_nibble(t, bits):  # element 3 is the high nibble of byte 1: flip one of its bits
        bits[1] ^= 0x10
        return bits
    verdict = classify(_packed_member(prepared, high_nibble), prepared.specs, prepared.references)
    assert verdict.status == "wrong_result" and "1 of 56" in verdict.message
    assert verdict.witness["flat_index"] == 3

    def low_nibble(t, bits):
        bits[0] ^= 0x01
        return bits
    verdict = classify(_packed_member(prepared, low_nibble), prepared.specs, prepared.references)
    assert verdict.status == "wrong_result" and verdict.witness["flat_index"] == 0


def test_judge_reports_unwritten_packed_elements():
    problem = _gemm_s4(m=4, n=5, k=3, out="int4")  # 20 outputs in 10 bytes
    prepared = prepare_problem(problem, "s4u", 1)
    seed = prepared.trials[0].seed
    words = poison_words("int4", seed)
    good = float_to_bits(prepared.references[0]["D"], "int4")
    first, second = good.copy(), good.copy()
    first[-2:] = words[0][1]
    second[-2:] = words[1][1]
    result = CheckResult([TrialRun(0, {"D": first}, second_outputs={"D": second}, poisons={"D": words})])
    verdict = classify(result, prepared.specs, prepared.references)
    assert verdict.status == "unwritten_output" and "4 of 20 elements of D" in verdict.message


def test_exact_values_unpack_to_the_buffer_shape():
    bits = pack(np.arange(-3, 3), "int4")
    assert exact_values(bits, "int4", (2, 3)).tolist() == [[-3, -2, -1], [0, 1, 2]]
