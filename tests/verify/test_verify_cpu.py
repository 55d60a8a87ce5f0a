"""CPU tests of the verifier: arg packing, dtype conversion, poisoning, tolerance,
trivial references, outcome classification, timing statistics, and a GPU-free dry path."""
import math
import struct

import numpy as np
import pytest

from dataset_spec.model import Arg, Buffer, Distribution, KernelRecord, Launch, Patch, Problem
from verify.member.args import ArgError, entry_params, pack_args, scalar_bytes
from verify.device.assembly_pool import assemble_for_gpu, runnable_reason, target_arch
from verify.judge.compare import agreement, agreement_bound, error_stats, trivial_reason
from verify.trials.inputs import (bf16_bits, bf16_to_float, draw, float_to_bits, from_storage, guard_fill, make_trial_inputs,
                           poison_words,
                           poison_array, trial_seed, unwritten_count)
from verify.judge.outcome import CheckResult, OutputSpec, TrialRun, classify, float_atomics, inputs_changed
from verify.runner import apply_verdict, prepare_problem, select_groups
from verify.timing.timing import batch_size, median_rse, should_stop, summarise

PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(
	.param .u64 .ptr .global .align 4 k_param_0,
	.param .u32 k_param_1,
	.param .align 16 .b8 k_param_2[48],
	.param .u16 k_param_3,
	.param .b32 k_param_4[3]
)
{ ret; }
.visible .entry other() { ret; }
"""

ADDR = {"a": 0x7F0000001000, "b": 0x7F0000002000}


# ---- args ---------------------------------------------------------------------------

def test_entry_params_sizes_and_alignment():
    params = entry_params(PTX, "k")
    assert [(p.size, p.align) for p in params] == [(8, 8), (4, 4), (48, 16), (2, 2), (12, 4)]
    assert entry_params(PTX, "other") == []
    assert entry_params(PTX, "missing") is None


def test_pack_args_alignment_and_blob_patching():
    blob = bytes(range(48))
    launch = Launch("k", 1, 32, [
        Arg.buf("a"), Arg.scalar("u32", 7),
        Arg("blob", blob=blob, patches=[Patch(0, "b"), Patch(16, "a", addend=256)]),
        Arg.scalar("u16", 65535), Arg("blob", blob=b"\x01" * 12)])
    packed = pack_args(launch, ADDR, entry_params(PTX, "k"))
    assert packed.offsets == [0, 8, 16, 64, 68]
    buf = packed.buffer
    assert struct.unpack_from("<Q", buf, 0)[0] == ADDR["a"]
    assert struct.unpack_from("<I", buf, 8)[0] == 7
    assert struct.unpack_from("<Q", buf, 16)[0] == ADDR["b"]
    assert struct.unpack_from("<Q", buf, 32)[0] == ADDR["a"] + 256
    assert buf[16 + 8:16 + 16] == blob[8:16]          # unpatched bytes kept
    assert struct.unpack_from("<H", buf, 64)[0] == 65535
    assert len(buf) == 80


def test_pack_args_checks_against_declaration():
    launch = Launch("k", 1, 32, [Arg.buf("a"), Arg.scalar("u64", 1)])
    with pytest.raises(ArgError, match="declares 5 params"):
        pack_args(launch, ADDR, entry_params(PTX, "k"))
    launch = Launch("k", 1, 32, [Arg.buf("a"), Arg.scalar("u64", 1), Arg("blob", blob=bytes(48)),
                                 Arg.scalar("u16", 1), Arg("blob", blob=bytes(12))])
    with pytest.raises(ArgError, match="param 1"):
        pack_args(launch, ADDR, entry_params(PTX, "k"))
    with pytest.raises(ArgError, match="buffer 'zz'"):
        pack_args(Launch("other", 1, 1, [Arg.buf("zz")]), ADDR)


def test_pack_args_without_declaration_uses_natural_alignment():
    launch = Launch("x", 1, 1, [Arg.scalar("u8", 1), Arg.null(), Arg.scalar("f16", 1.5), Arg.scalar("f64", 2.0)])
    packed = pack_args(launch, ADDR)
    assert packed.offsets == [0, 8, 16, 24]
    assert packed.buffer[8:16] == bytes(8)
    assert np.frombuffer(packed.buffer[16:18], "<f2")[0] == 1.5


def test_scalar_bytes():
    assert scalar_bytes("s32", "-1") == b"\xff\xff\xff\xff"
    assert scalar_bytes("u64", str(2 ** 64 - 1)) == b"\xff" * 8
    assert scalar_bytes("u32", "0x10") == b"\x10\x00\x00\x00"
    assert scalar_bytes("f32", "0.5") == struct.pack("<f", 0.5)
    assert scalar_bytes("bf16", "1.0") == b"\x80\x3f"
    with pytest.raises(ArgError):
        scalar_bytes("u8", "256")


# ---- inputs ---------------------------------------------------------------------------

def test_bf16_round_trip_and_rounding():
    exact = np.array([0.0, 1.0, -2.5, 0.15625, 3.0e38, -1.0e-30])
    exact = bf16_to_float(bf16_bits(exact))  # representable values
    assert np.array_equal(bf16_to_float(bf16_bits(exact)), exact)
    one = 1.0
    assert bf16_to_float(bf16_bits([one + 2 ** -8]))[0] == 1.0                 # tie -> even
    assert bf16_to_float(bf16_bits([one + 3 * 2 ** -8]))[0] == 1.0 + 2 ** -6   # tie -> even (up)
    assert bf16_to_float(bf16_bits([one + 2 ** -8 + 2 ** -12]))[0] == 1.0 + 2 ** -7
    assert math.isnan(bf16_to_float(bf16_bits([float("nan")]))[0])
    assert bf16_bits([1.0]).dtype == np.dtype("<u2") and bf16_bits([1.0])[0] == 0x3F80


def test_bf16_bits_round_every_float32_binade_as_torch_does():
    """A sweep over float32 bit patterns (every binade, both signs, ties and the values next to
    them, infinities, NaN) converted by bf16_bits and by torch's float32 -> bfloat16 cast:
    the same bits, NaN aside (bf16_bits writes every NaN as 0x7FC0)."""
    import torch
    sweep = np.arange(0, 1 << 32, 4099, dtype=np.uint64)
    ties = (np.arange(0, 1 << 16, 7, dtype=np.uint64) << np.uint64(16)) | np.uint64(0x8000)
    specials = np.array([0x7F800000, 0xFF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x00000001, 0x80000000],
                        dtype=np.uint64)  # +-inf, +-largest finite (it rounds up to inf), a tie there, subnormal, -0
    words = np.concatenate([sweep, ties, ties - np.uint64(1), ties + np.uint64(1), specials]).astype(np.uint32)
    values = words.view(np.float32)
    ours = bf16_bits(values.astype(np.float64))
    theirs = torch.from_numpy(values.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    nan = np.isnan(values)
    assert nan.any() and np.isinf(values).any()
    assert np.array_equal(ours[~nan], theirs[~nan])
    assert (ours[nan] == 0x7FC0).all()


def test_float16_and_int_conversion():
    values = np.array([0.1, -3.3, 65504.0, 1e-5])
    f16 = float_to_bits(values, "float16")
    assert f16.dtype == np.float16
    assert np.array_equal(from_storage(f16, "float16"), f16.astype(np.float64))
    ints = float_to_bits(np.array([1.5, 2.5, -1e12, 300.0]), "int8")
    assert ints.tolist() == [2, 2, -128, 127]


ALL_DTYPES = ["float16", "bfloat16", "float32", "float64", "float8_e4m3", "float8_e5m2", "int8", "uint8", "int16",
              "int32", "uint32", "int64"]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_two_poisons_per_trial(dtype):
    """Poison 1 is a NaN (floats), poison 2 a large finite value; both are seeded by the
    trial and change with the seed; for integers they are two different words."""
    first, second = poison_words(dtype, 7)
    assert poison_words(dtype, 7) == (first, second)
    assert first != second
    assert {poison_words(dtype, seed) for seed in range(20)} != {(first, second)}
    one, two = poison_array(dtype, (4,), first), poison_array(dtype, (4,), second)
    assert not np.array_equal(one.view(np.uint8), two.view(np.uint8))
    if dtype.startswith("float"):
        values_one, values_two = from_storage(one, dtype), from_storage(two, dtype)
        assert np.isnan(values_one).all()
        assert np.isfinite(values_two).all() and (np.abs(values_two) >= 400).all()
        if dtype in ("float32", "float64"):  # far beyond any value a kernel is expected to write
            assert (np.abs(values_two) > 1e37).all()


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_unwritten_is_poison_1_then_poison_2(dtype):
    words = poison_words(dtype, 3)
    first, second = poison_array(dtype, (4, 5), words[0]), poison_array(dtype, (4, 5), words[1])
    assert unwritten_count(first, second, dtype, words) == 20
    assert unwritten_count(first, None, dtype, words) == 0  # run 2 equal to run 1: all written
    written = float_to_bits(np.arange(7.0), dtype)
    first.reshape(-1)[:7], second.reshape(-1)[:7] = written, written
    assert unwritten_count(first, second, dtype, words) == 13


@pytest.mark.parametrize("dtype,value", [("int8", -1), ("int32", -1), ("uint8", 255), ("int16", -1),
                                         ("uint32", 2 ** 32 - 1)])
def test_integer_outputs_equal_to_any_poison_are_checked_for_being_written(dtype, value):
    """Class 4 of issue 18: an integer output that rightly holds -1 or 255 is written (both
    runs hold it), and an unwritten one is caught even where the reference is -1/255."""
    for seed in range(50):
        words = poison_words(dtype, seed)
        run1 = float_to_bits(np.array([value, 3.0, value, 5.0]), dtype)
        run2 = run1.copy()
        assert unwritten_count(run1, run2, dtype, words) == 0
        run1[2], run2[2] = poison_array(dtype, (1,), words[0])[0], poison_array(dtype, (1,), words[1])[0]
        assert unwritten_count(run1, run2, dtype, words) == 1
    # a poison word of all ones (the old fixed poison) on run 1 alone is not unwritten
    words = ((1, 0xFF), (1, 0x11))
    run = float_to_bits(np.array([-1.0, -1.0]), "int8")
    assert unwritten_count(run, run.copy(), "int8", words) == 0


def test_guard_fills_are_random_per_run_and_hold_specials():
    fill1, fill2 = guard_fill(11, 1), guard_fill(11, 2)
    assert fill1.dtype == np.uint8 and fill1.size == 1 << 16
    assert np.array_equal(fill1, guard_fill(11, 1)) and not np.array_equal(fill1, fill2)
    assert (fill1 != fill2).mean() > 0.5
    words = fill1.view(np.uint32)
    as_f32 = words.view(np.float32)
    assert (words == 0).mean() > 0.2 and np.isnan(as_f32).mean() > 0.2
    assert (np.abs(as_f32[np.isfinite(as_f32)]) > 1e37).mean() > 0.2
    assert np.unique(words[np.isnan(as_f32)]).size > 1000  # NaN payloads vary
    assert guard_fill(11, 1, 100).size == 100


def test_trial_inputs_are_seeded_and_alternate_kinds():
    problem = Problem("p", "vector_add", [Buffer("x", "float32", (64,)), Buffer("y", "float32", (64,)),
                                          Buffer("out", "float32", (64,), role="out")],
                      trial_kinds=["normal", "uniform", "large"])
    t0, t0b = make_trial_inputs(problem, "g", 0), make_trial_inputs(problem, "g", 0)
    t1, t2 = make_trial_inputs(problem, "g", 1), make_trial_inputs(problem, "g", 2)
    assert np.array_equal(t0.storage["x"], t0b.storage["x"]) and t0.seed == t0b.seed
    assert not np.array_equal(t0.storage["x"], t1.storage["x"])
    assert (t0.kind, t1.kind, t2.kind) == ("normal", "uniform", "large")
    assert np.abs(t1.values["x"]).max() <= math.sqrt(3) + 1e-6        # uniform with the normal's spread
    assert np.abs(t1.values["x"] - np.round(t1.values["x"])).max() > 0  # non-integer
    assert np.abs(t2.values["x"]).max() > 20                            # large magnitude
    assert set(t0.storage) == {"x", "y"}
    assert trial_seed("g", "d", 0) != trial_seed("g", "d", 1)


def test_draw_keeps_integer_distributions():
    rng = np.random.default_rng(0)
    values = draw(Distribution("randint", {"low": 0, "high": 4}), (100,), rng, kind="large")
    assert set(np.unique(values)) <= {0, 1, 2, 3}


# ---- compare ---------------------------------------------------------------------------

def test_error_stats_bound_and_nonfinite():
    ref = np.array([1.0, -2.0, 0.0, 100.0])
    bound = np.array([1e-3, 1e-3, 1e-3, 0.1])
    ok = error_stats(ref + np.array([1e-3, 0, 1e-3, 0.05]), ref, bound)
    assert ok.ok and ok.max_abs_err == pytest.approx(0.05) and ok.max_err_ratio == pytest.approx(1.0)
    bad = error_stats(ref + np.array([0, 0, 0, 0.2]), ref, bound)
    assert bad.n_bad == 1 and bad.worst_index == (3,) and bad.max_err_ratio == pytest.approx(2.0)
    nan_out = error_stats(np.array([1.0, np.nan, 0.0, 100.0]), ref, bound)
    assert nan_out.n_bad == 1 and math.isinf(nan_out.max_abs_err)
    inf_ref = np.array([np.inf, 1.0])
    assert error_stats(np.array([np.inf, 1.0]), inf_ref, 0.0).ok
    assert not error_stats(np.array([-np.inf, 1.0]), inf_ref, 0.0).ok
    # relative error is floored at the bound, not divided by ~0
    assert error_stats(np.array([1e-9]), np.array([0.0]), 1e-6).max_rel_err == pytest.approx(1e-3)


def test_non_finite_reference_must_be_matched_whatever_the_bound():
    """A wrong value where the reference is infinite fails, even under an infinite bound
    (inf - inf is NaN, which compares false: the check must not rely on it)."""
    from dataset_spec.numerics import bound_terms
    ref = np.array([np.inf, -np.inf, np.nan, 1.0])
    bound = bound_terms("float32", 1).bound(ref, np.abs(ref))
    assert list(bound[:3]) == [0.0, 0.0, 0.0] and bound[3] > 0
    assert error_stats(ref.copy(), ref, bound).ok
    for wrong in ([np.nan, -np.inf, np.nan, 1.0], [np.inf, np.inf, np.nan, 1.0], [np.inf, -np.inf, 0.0, 1.0]):
        stats = error_stats(np.array(wrong), ref, np.full(4, np.inf))
        assert stats.n_bad == 1 and math.isinf(stats.max_abs_err), wrong


def test_trivial_reference_refused():
    assert "within its error bound" in trivial_reason(np.zeros(10), 1e-5)
    assert "near-constant" in trivial_reason(np.full(10, 3.0), 1e-5)
    assert trivial_reason(np.array([3.0]), 1e-5) == ""      # a full reduction
    assert trivial_reason(np.linspace(-1, 1, 10), 1e-5) == ""
    assert "no finite" in trivial_reason(np.array([np.nan]), 1e-5)
    # an attention mask: 0 where attended, -inf elsewhere; a constant matches neither half
    assert trivial_reason(np.array([0.0, 0.0, -np.inf, 0.0]), 1e-5) == ""


def test_agreement_bound_allows_one_ulp_but_not_two_bounds():
    from dataset_spec.numerics import bound_terms
    terms = bound_terms("float32", 64)
    ref = np.array([1.0, 3.0])
    scale = np.array([10.0, 10.0])
    bound = terms.bound(ref, scale)
    limit = agreement_bound(ref, bound, terms)
    # two members each within the reference bound, on opposite sides, are 2x apart:
    # beyond the agreement bound, so the check can fire
    assert np.all(limit < 2 * bound)
    assert not agreement(ref + 0.9 * bound, ref - 0.9 * bound, limit).ok
    ulp = np.spacing(ref.astype(np.float32)).astype(np.float64)
    assert agreement(ref + ulp, ref, limit).ok


# ---- outcome classification ------------------------------------------------------------

def _specs(bound=1e-5, n=2):
    return [OutputSpec("out", "float32", [np.full(8, bound)] * n, [np.full(8, bound)] * n)]


def _refs(n=2):
    return [{"out": np.linspace(-1, 1, 8) * (t + 1)} for t in range(n)]


def _runs(refs, mutate=None, **kwargs):
    runs = []
    for t, ref in enumerate(refs):
        out = float_to_bits(ref["out"], "float32")
        if mutate:
            out = mutate(t, out.copy())
        runs.append(TrialRun(t, {"out": out}, **kwargs))
    return runs


def test_classify_passed_and_wrong_result():
    refs = _refs()
    v = classify(CheckResult(_runs(refs)), _specs(), refs)
    assert v.status == "passed" and v.deterministic is True and v.trials == 2
    assert v.max_abs_err < 1e-6 and v.max_err_ratio < 0.1 and len(v.output_hash) == 16

    def corrupt(t, out):
        out[3] += 0.5
        return out
    v = classify(CheckResult(_runs(refs, corrupt)), _specs(), refs)
    assert v.status == "wrong_result" and "1 of 8" in v.message and v.max_abs_err == pytest.approx(0.5, rel=1e-3)
    assert v.max_err_ratio > 1e4


def test_classify_unwritten_modified_input_and_out_of_bounds():
    refs = _refs()
    words = poison_words("float32", 5)

    def half(poison):
        def mutate(t, out):
            out[4:] = poison_array("float32", (4,), words[poison])
            return out
        return mutate
    runs = _runs(refs, half(0), poisons={"out": words})
    for run, second in zip(runs, _runs(refs, half(1))):
        run.second_outputs = second.outputs
    v = classify(CheckResult(runs), _specs(), refs)
    assert v.status == "unwritten_output" and "4 of 8" in v.message
    v = classify(CheckResult(_runs(refs, modified_inputs=["x"])), _specs(), refs)
    assert v.status == "modified_input" and "x" in v.message
    hit = {"buffer": "out", "offset": 32, "bytes": 256, "size": 32}
    v = classify(CheckResult(_runs(refs, modified_inputs=["x"], out_of_bounds=[hit])), _specs(), refs)
    assert v.status == "out_of_bounds_write" and "buffer out at byte 32" in v.message
    before = {"buffer": "y", "offset": -16, "bytes": 4, "size": 32}
    v = classify(CheckResult(_runs(refs, out_of_bounds=[before])), _specs(), refs)
    assert "16 bytes before its start" in v.message


def test_classify_diagnosis_of_runs_that_disagree():
    refs = _refs()
    runs = _runs(refs, varies_with="poison", variation="run 1 repeated with the second poison differs")
    v = classify(CheckResult(runs), _specs(), refs)
    assert v.status == "wrong_result" and "reads its own output" in v.message
    v = classify(CheckResult(_runs(refs, varies_with="guard")), _specs(), refs)
    assert v.status == "out_of_bounds_read" and "guard" in v.message
    # the fence faults the parent attributed
    for status in ("modified_input", "out_of_bounds_write"):
        v = classify(CheckResult(error=status, message="faults", fatal=True), _specs(), refs)
        assert v.status == status
    # unwritten outranks the diagnosis: the poison it holds is why run 2 differs
    words = poison_words("float32", 1)
    runs = _runs(refs, lambda t, out: poison_array("float32", (8,), words[0]), poisons={"out": words},
                 varies_with="poison")
    for run in runs:
        run.second_outputs = {"out": poison_array("float32", (8,), words[1])}
    assert classify(CheckResult(runs), _specs(), refs).status == "unwritten_output"


def test_nondeterminism_is_a_race_unless_the_ptx_has_float_atomics():
    refs = _refs()

    def schedule_runs(shift):
        runs = _runs(refs, varies_with="schedule", variation="a plain repeat of run 1 differs")
        runs[0].rerun_outputs = {"out": float_to_bits(refs[0]["out"] + shift, "float32")}
        return runs
    v = classify(CheckResult(schedule_runs(1e-6)), _specs(), refs)
    assert v.status == "race_detected" and "no floating-point atomics" in v.message
    v = classify(CheckResult(schedule_runs(1e-6), float_atomics=True), _specs(), refs)
    assert v.status == "passed" and v.deterministic is False
    # with atomics, every differing run is judged against the bound
    v = classify(CheckResult(schedule_runs(1.0), float_atomics=True), _specs(), refs)
    assert v.status == "wrong_result" and "(rerun)" in v.message
    runs = _runs(refs, varies_with="schedule")
    runs[1].second_outputs = {"out": float_to_bits(refs[1]["out"] + 1.0, "float32")}
    v = classify(CheckResult(runs, float_atomics=True), _specs(), refs)
    assert v.status == "wrong_result" and "(run 2)" in v.message
    assert classify(CheckResult(_runs(refs)[:1]), _specs(), refs).status == "crashed"


@pytest.mark.parametrize("line,expected", [
    ("atom.global.add.f32 %f1, [%rd1], %f2;", True),
    ("red.global.add.f32 [%rd1], %f2;", True),
    ("red.relaxed.gpu.global.add.noftz.bf16x2 [%rd1], %r2;", True),
    ("atom.add.noftz.f16 %h1, [%rd1], %h2;", True),
    ("red.global.add.f64 [%rd1], %fd2;", True),
    ("atom.global.v4.f32.add %f1, [%rd1], %f2;", True),
    ("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%rd1, {%r1, %r2}], [%r3];", False),
    ("atom.global.add.u32 %r1, [%rd1], 1;", False),
    ("atom.global.max.f32 %f1, [%rd1], %f2;", False),
    ("atom.shared.cas.b32 %r1, [%r2], %r3, %r4;", False),
    ("add.f32 %f1, %f2, %f3;", False),
])
def test_float_atomics_are_found_in_ptx(line, expected):
    assert float_atomics(f"  {line}\n") is expected


@pytest.mark.parametrize("error,status", [("jit_failed", "jit_failed"), ("launch_failed", "launch_failed"),
                                          ("crashed", "crashed"), ("timeout", "timeout"), ("died", "crashed"),
                                          ("arg_error", "launch_failed")])
def test_classify_worker_errors(error, status):
    v = classify(CheckResult(error=error, message="boom", fatal=True), _specs(), _refs())
    assert v.status == status and v.message == "boom"


def test_consensus_flags_the_odd_member_out():
    from verify.judge.outcome import Consensus
    refs = _refs()
    specs = _specs(bound=3e-5)
    consensus = Consensus(specs)

    def shifted(delta):
        return [{"out": float_to_bits(r["out"] + delta, "float32")} for r in refs]
    consensus.add("a", shifted(0.0))
    consensus.add("odd", shifted(5e-5))   # 5e-5 from the others: beyond the 3e-5 agreement bound
    consensus.add("b", shifted(1e-6))
    consensus.add("c", shifted(-1e-6))
    verdicts = consensus.verdicts()
    assert [k for k, (agrees, _, _) in verdicts.items() if not agrees] == ["odd"]
    assert verdicts["odd"][1] > 1 and verdicts["b"][1] < 1
    assert "consensus" in verdicts["odd"][2]


def test_inputs_changed():
    a = {"x": np.arange(3.0), "y": np.ones(2)}
    b = {"x": np.arange(3.0), "y": np.array([1.0, 2.0])}
    assert inputs_changed(a, b) == ["y"]


# ---- timing statistics -----------------------------------------------------------------

def test_timing_statistics():
    steady = np.full(50, 10.0) + np.random.default_rng(0).normal(0, 0.01, 50)
    stats = summarise(steady)
    assert stats.samples == 50 and stats.converged and abs(stats.median_us - 10) < 0.01
    assert median_rse([1.0]) == math.inf
    assert not should_stop(list(steady[:5]), 10.0, 1.0)           # min samples first
    assert should_stop(list(steady), 0.0, 1.0)                    # converged
    noisy = list(np.random.default_rng(1).uniform(5, 15, 60))  # past MIN_SAMPLES, far from converged
    assert not should_stop(noisy, 0.1, 1.0) and should_stop(noisy, 1.1, 1.0)
    assert should_stop([1.0] * 2000, 0.0, 1.0)
    assert batch_size(1e-5, 1000) == 200 and batch_size(0.1, 5) == 1


# ---- arch / assembly --------------------------------------------------------------------

def test_runnable_arch():
    assert runnable_reason("sm_80", (9, 0)) == ""
    assert "only on compute capability 9.0" in runnable_reason("sm_90a", (8, 0))
    assert runnable_reason("sm_90a", (9, 0)) == ""
    assert "or newer" in runnable_reason("sm_90", (8, 6))
    assert runnable_reason("sm_100f", (10, 3)) == "" and runnable_reason("sm_100f", (12, 0))
    assert target_arch("sm_80", (9, 0)) == "sm_90" and target_arch("sm_90a", (9, 0)) == "sm_90a"


VECTOR_ADD = r"""
extern "C" __global__ void vadd(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
"""


def _compile(source, arch="sm_80"):
    ptx_tools = pytest.importorskip("ptx_tools")
    try:
        return ptx_tools.compile_cuda(source, arch)
    except ptx_tools.ToolchainError as exc:
        pytest.skip(f"no nvcc: {exc}")


def test_assemble_for_gpu_cpu_paths():
    ptx = _compile(VECTOR_ADD)
    result = assemble_for_gpu(ptx, "sm_90")
    # ptxas, never nvJitLink: its relocatable link misplaces over-aligned extern shared memory
    assert result.path == "ptxas" and result.cubin[:4] == b"\x7fELF"
    broken = assemble_for_gpu(ptx.replace("add.f32", "bogus.f32"), "sm_90")
    assert broken.cubin is None and broken.path == "driver_jit" and "ptxas" in broken.message


# ---- dry path: everything but the driver -------------------------------------------------

def _vector_add_record(ptx, n=1000, name="vadd", variant=None):
    problem = Problem("vadd_1000", "vector_add", [
        Buffer("x", "float32", (n,)), Buffer("y", "float32", (n,)), Buffer("out", "float32", (n,), role="out")])
    launch = Launch("vadd", ((n + 255) // 256,), (256,),
                    [Arg.buf("x"), Arg.buf("y"), Arg.buf("out"), Arg.scalar("s32", n)])
    return KernelRecord("vadd_1000", "test", variant or {"v": 0}, name, "sm_80", ptx, [launch], problem)


def test_dry_path_vector_add():
    ptx = _compile(VECTOR_ADD)
    record = KernelRecord.from_json(_vector_add_record(ptx).to_json())  # what a worker receives
    prepared = prepare_problem(record.problem, record.group_id, 3)
    assert prepared.refusal == "" and len(prepared.references) == 3
    addresses = {b.name: 0x10000 * (i + 1) for i, b in enumerate(record.buffers())}
    for launch in record.launches:
        packed = pack_args(launch, addresses, entry_params(record.ptx, launch.entry))
        assert packed.offsets == [0, 8, 16, 24]
    # a correct kernel would write the float32 sum of the float32 inputs
    runs = [TrialRun(t.trial, {"out": (t.storage["x"] + t.storage["y"]).astype(np.float32)})
            for t in prepared.trials]
    verdict = classify(CheckResult(runs, load_path="ptxas"), prepared.specs, prepared.references)
    assert verdict.status == "passed", verdict.message
    row = apply_verdict(record, verdict, prepared, {"name": "cpu", "driver_version": "0"}, "ptxas")
    assert row.status == "passed" and row.trials == 3 and len(row.provenance["verify"]["seeds"]) == 3
    assert row.max_err_ratio <= 1 and row.catches_rel_err < 1e-5 and row.atol is None
    assert record.status == "built"  # the input row is not changed


def test_verified_row_round_trips_through_shards(tmp_path):
    from dataset_spec.store.shards import ShardWriter, done_keys, read_records
    ptx = _compile(VECTOR_ADD)
    record = _vector_add_record(ptx)
    prepared = prepare_problem(record.problem, record.group_id, 2)
    runs = [TrialRun(t.trial, {"out": (t.storage["x"] + t.storage["y"]).astype(np.float32)},
                     rerun_outputs={"out": (t.storage["x"] + t.storage["y"]).astype(np.float32)})
            for t in prepared.trials]
    verdict = classify(CheckResult(runs), prepared.specs, prepared.references)
    row = apply_verdict(record, verdict, prepared, {"name": "gpu", "driver_version": "13.0"}, "ptxas")
    row.time_us_median, row.time_samples = 9.5, 120
    ShardWriter(tmp_path).write([row])
    back = read_records(tmp_path)[0]
    assert back.status == "passed" and back.deterministic is False and back.time_samples == 120
    assert back.provenance["verify"]["load"] == "ptxas"
    assert done_keys(tmp_path) == {record.build_key}


def test_trivial_problem_refused_by_prepare():
    problem = Problem("z", "vector_add", [
        Buffer("x", "float32", (16,), init=Distribution("zeros")), Buffer("y", "float32", (16,), init=Distribution("zeros")),
        Buffer("out", "float32", (16,), role="out")])
    prepared = prepare_problem(problem, "g", 2)
    assert prepared.refusal_status == "trivial_reference" and "out" in prepared.refusal


def test_select_groups_pattern_and_order():
    ptx = "// none"
    rows = [_vector_add_record(ptx, variant={"v": i}) for i in range(2)]
    other = _vector_add_record(ptx, variant={"v": 9})
    other.group_id = "gemm_x"
    groups = select_groups(rows + [other], "vadd*")
    assert [g for g, _ in groups] == ["vadd_1000"] and len(groups[0][1]) == 2


def test_verify_dataset_without_driver_is_one_clear_error(tmp_path):
    from helpers import gpu_unavailable_reason
    if gpu_unavailable_reason() is None:
        pytest.skip("a CUDA driver is present")
    from dataset_spec.store.shards import ShardWriter
    from verify import NoDriverError, verify_dataset
    ShardWriter(tmp_path / "in").write([_vector_add_record("// ptx")])
    with pytest.raises(NoDriverError) as info:
        verify_dataset(tmp_path / "in", tmp_path / "out", progress=False)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "out").exists()


TMA_PTX = """
.version 8.7
.target sm_90a
.address_size 64
.visible .entry tma(
	.param .align 64 .b8 tma_param_0[320]
)
{ ret; }
"""


def fake_tensormap_encoder(calls):
    """Stands in for the driver: 128 bytes spelling the address and the box, and a log."""
    def encode(params, address):
        calls.append((params, address))
        return struct.pack("<QQ", address, params["box_dim"][0]) + bytes(112)
    return encode


def test_pack_args_encodes_tensormap_patches_at_their_offsets():
    from dataset_spec.model import TENSORMAP_KEYS
    params = {key: 0 for key in TENSORMAP_KEYS}
    params.update(rank=2, global_dim=[64, 32], global_strides=[128], box_dim=[64, 8], element_strides=[1, 1])
    blob = bytes(range(256)) + bytes(64)
    launch = Launch("tma", 1, 384, [Arg("blob", blob=blob, patches=[
        Patch(0, "a", kind="tensormap", tensormap=params), Patch(128, "b"),
        Patch(192, "b", addend=64, kind="tensormap", tensormap=dict(params, box_dim=[32, 8]))])])
    decl = entry_params(TMA_PTX, "tma")
    assert [(p.size, p.align) for p in decl] == [(320, 64)]
    calls = []
    packed = pack_args(launch, ADDR, decl, encode_tensormap=fake_tensormap_encoder(calls))
    buf = packed.buffer
    assert len(buf) == 320 and packed.offsets == [0]
    assert struct.unpack_from("<QQ", buf, 0) == (ADDR["a"], 64) and buf[16:128] == bytes(112)
    assert struct.unpack_from("<Q", buf, 128)[0] == ADDR["b"]
    assert buf[136:192] == blob[136:192]                       # bytes between patches kept
    assert struct.unpack_from("<QQ", buf, 192) == (ADDR["b"] + 64, 32)
    assert [address for _, address in calls] == [ADDR["a"], ADDR["b"] + 64]
    with pytest.raises(ArgError, match="tensor map encoder"):
        pack_args(launch, ADDR, decl)
    with pytest.raises(ArgError, match="returned 8 bytes"):
        pack_args(launch, ADDR, decl, encode_tensormap=lambda params, address: bytes(8))


def test_group_summary_says_what_happened():
    from verify.runner import GroupSummary
    build_only = GroupSummary("g", 3, {"build_failed": 2, "no_problem": 1}, all_equivalent=False)
    assert build_only.verdict_text() == "no runnable member (2 build_failed, 1 no_problem)"
    elsewhere = GroupSummary("g", 2, {"not_runnable": 2}, all_equivalent=False, not_runnable=2)
    assert elsewhere.verdict_text().startswith("not verified: 2 member(s) cannot run on this GPU")
    ok_but_build = GroupSummary("g", 5, {"passed": 3, "build_failed": 2}, all_equivalent=True, ran=3,
                                distinct_outputs=2)
    assert ok_but_build.verdict_text() == ("all 3 runnable members equivalent (2 distinct output bit pattern(s)); "
                                           "not run: 2 build_failed")
    bad = GroupSummary("g", 4, {"passed": 2, "wrong_result": 1, "disagrees": 1}, all_equivalent=False, ran=4)
    assert bad.verdict_text() == "NOT all equivalent: 1 disagrees, 1 wrong_result of 4 run"


def test_kernel_id_depends_on_arch():
    from dataset_spec.model import make_kernel_id
    record = _vector_add_record("// ptx")
    ids = {make_kernel_id("h", record.launches, record.problem, arch) for arch in ("sm_80", "sm_90a")}
    assert len(ids) == 2


def test_error_stats_over_several_chunks_finds_the_worst_element():
    """error_stats works chunk by chunk: counts, maxima and the worst index must be those of
    the whole array, with violations and non-finite values in different chunks."""
    from verify.judge import compare
    rng = np.random.default_rng(3)
    n = 3 * compare.CHUNK + 17
    ref = rng.standard_normal(n)
    bound = np.abs(ref) * 1e-3 + 1e-6
    out = ref + 0.5 * bound
    out[5] += 3 * bound[5]                       # chunk 0, ratio ~3.5
    out[2 * compare.CHUNK + 9] += 9 * bound[2 * compare.CHUNK + 9]   # chunk 2, the worst (~9.5)
    out[n - 1] = np.inf                          # last chunk: non-finite output, infinite error
    stats = compare.error_stats(out, ref, bound)
    assert stats.n_bad == 3 and stats.n_total == n
    assert stats.max_err_ratio == np.inf and stats.worst_index == (n - 1,)
    out[n - 1] = ref[n - 1]
    stats = compare.error_stats(out, ref, bound)
    assert stats.n_bad == 2 and stats.worst_index == (2 * compare.CHUNK + 9,)
    assert stats.max_err_ratio == pytest.approx(9.5)
    assert compare.error_stats(out, ref, 1.0).n_bad == 0  # a one-value bound


# ---- consensus anchored on the reference ------------------------------------------------

def _shifted_outputs(refs, delta):
    return [{"out": float_to_bits(r["out"] + delta, "float32")} for r in refs]


def test_consensus_prefers_the_cluster_nearest_the_reference_over_a_skewed_first_member():
    from verify.judge.outcome import Consensus
    refs = _refs()
    specs = _specs(bound=3e-5)  # agreement bound 3e-5
    consensus = Consensus(specs)
    # a consistently skewed member first (within its error bound, 0.9 of it, but 6e-5 from the
    # correct member), then its near twin (a larger cluster), then one correct member
    consensus.add("skewed", _shifted_outputs(refs, 6e-5), reference_ratio=0.9)
    consensus.add("skewed_twin", _shifted_outputs(refs, 5.9e-5), reference_ratio=0.88)
    consensus.add("correct", _shifted_outputs(refs, 0.0), reference_ratio=0.01)
    verdicts = consensus.verdicts()
    assert verdicts["correct"][0] is True and verdicts["correct"][1] == 0.0
    assert verdicts["skewed"][0] is False and verdicts["skewed_twin"][0] is False
    assert "disagrees with the group's consensus" in verdicts["skewed"][2]
    assert verdicts["skewed"][1] > 1


def test_consensus_ties_go_to_the_larger_cluster_then_the_earlier():
    from verify.judge.outcome import Consensus
    refs = _refs()
    specs = _specs(bound=3e-5)
    larger = Consensus(specs)
    larger.add("low", _shifted_outputs(refs, -2.5e-5), reference_ratio=0.5)
    larger.add("high", _shifted_outputs(refs, 2.5e-5), reference_ratio=0.5)
    larger.add("high_twin", _shifted_outputs(refs, 2.4e-5), reference_ratio=0.48)
    verdicts = larger.verdicts()
    assert [k for k, v in verdicts.items() if not v[0]] == ["low"]
    earlier = Consensus(specs)
    earlier.add("first", _shifted_outputs(refs, -2.5e-5), reference_ratio=0.5)
    earlier.add("second", _shifted_outputs(refs, 2.5e-5), reference_ratio=0.5)
    verdicts = earlier.verdicts()
    assert verdicts["first"][0] and not verdicts["second"][0]


def test_consensus_overflow_keeps_the_nearest_cluster_and_bounded_memory():
    from verify.judge.outcome import MAX_CLUSTERS, Consensus
    refs = _refs()
    specs = _specs(bound=1e-6)
    consensus = Consensus(specs)
    # MAX_CLUSTERS + 2 members, each far from all others; nearness improves as they come
    deltas = [(i + 1) * 1e-4 for i in range(MAX_CLUSTERS + 2)]
    for i, delta in enumerate(reversed(deltas)):
        consensus.add(f"m{i}", _shifted_outputs(refs, delta), reference_ratio=float(len(deltas) - i))
    assert len(consensus.clusters) == MAX_CLUSTERS  # memory stays bounded
    verdicts = consensus.verdicts()
    last = f"m{len(deltas) - 1}"
    assert [k for k, v in verdicts.items() if v[0]] == [last]
    # a farther member arriving when every slot is taken fits nowhere and disagrees
    consensus.add("far", _shifted_outputs(refs, 1.0), reference_ratio=100.0)
    assert consensus.home["far"] == -1 and consensus.verdicts()["far"][0] is False
    assert consensus.verdicts()[last][0] is True
