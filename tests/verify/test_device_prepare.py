"""Inputs, references and bounds made on the device (verify/trials/device_rng.py,
verify/trials/device_prepare.py), run with torch on the CPU as the device: the generator is
reproducible and counter-based, its trials follow the same plans as the host's, and the
device's references, bounds and refusals equal the host's on the same inputs."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dataset_spec.model import Buffer, Distribution, KernelRecord, Problem  # noqa: E402
from dataset_spec.ops import get_op  # noqa: E402
from dataset_spec.trials import trial_count  # noqa: E402
from verify.trials import device_rng  # noqa: E402
from verify.trials.device_prepare import device_supported, make_trial_inputs_device  # noqa: E402
from verify.trials.inputs import HOST_GENERATOR, edge_values, make_trial_inputs  # noqa: E402
from verify.judge.outcome import OutputSpec  # noqa: E402
from verify.runner import prepare_device, prepare_problem  # noqa: E402
from verify.timing.timing import MAX_SAMPLES, MIN_SAMPLES, should_stop, summarise  # noqa: E402

from device_parity import (PARITY_PROBLEMS, assert_prepared_on_the_device_as_on_the_host, gemm_problem,  # noqa: E402
                           vector_add_problem)

CPU = torch.device("cpu")


def test_philox_matches_the_published_known_answer():
    # Random123's kat_vectors: philox4x32_10, counter 0 and key 0
    words = device_rng.philox_words(0, 0, 0, 1, CPU)
    assert [int(w[0]) for w in words] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_same_seed_same_values_other_trial_or_buffer_other_values():
    first = device_rng.uniform(1234, 1, 0, 10_001, CPU)
    assert torch.equal(first, device_rng.uniform(1234, 1, 0, 10_001, CPU))
    assert float(first.min()) >= 0.0 and float(first.max()) < 1.0
    # counter-based: a prefix is the same values whatever the length asked for
    assert torch.equal(first[:777], device_rng.uniform(1234, 1, 0, 777, CPU))
    for other in (device_rng.uniform(1235, 1, 0, 10_001, CPU), device_rng.uniform(1234, 2, 0, 10_001, CPU),
                  device_rng.uniform(1234, 1, 1, 10_001, CPU)):
        assert float((other == first).double().mean()) < 1e-3
    problem = vector_add_problem()
    one, again = (make_trial_inputs_device(problem, "g", 0, CPU) for _ in range(2))
    other_trial = make_trial_inputs_device(problem, "g", 1, CPU)
    assert one.generator == device_rng.GENERATOR
    assert torch.equal(one.storage["x"], again.storage["x"])
    assert not torch.equal(one.storage["x"], other_trial.storage["x"])
    assert not torch.equal(one.storage["x"], one.storage["y"])


def test_device_trials_follow_the_host_plans():
    for problem in (vector_add_problem("float32"), vector_add_problem("float16"), gemm_problem("bfloat16"),
                    gemm_problem("float32")):
        for trial in range(trial_count(problem)):
            host = make_trial_inputs(problem, "g", trial)
            device = make_trial_inputs_device(problem, "g", trial, CPU)
            assert (device.seed, device.kind, device.ranges) == (host.seed, host.kind, host.ranges)
            for name, values in host.values.items():
                drawn = device.values[name].numpy()
                host_bits = host.storage[name]
                device_bits = device.host_storage()[name]
                assert device_bits.dtype == host_bits.dtype and device_bits.shape == host_bits.shape
                if host.kind == "stress" and problem.op == "gemm":  # the same row pattern along K
                    axis = -1 if name == "A" else 0
                    assert np.array_equal(_row_signature(values, axis), _row_signature(drawn, axis))
                    continue
                if host.kind == "stress":  # the same case at every position, its random part drawn on the device
                    _same_cases(values, drawn, host.ranges[name][1])
                    continue
                assert np.all(np.isfinite(drawn))
                if host.kind == "normal":
                    assert abs(drawn.mean()) < 0.1 and abs(drawn.std() - 1.0) < 0.1
                if host.kind == "uniform":
                    assert np.all(np.abs(drawn) <= np.sqrt(3) * 1.01) and abs(drawn.std() - 1.0) < 0.1
                if host.kind == "wide":
                    lo, hi = host.ranges[name]
                    magnitudes = np.abs(drawn)
                    assert magnitudes.max() <= hi * 1.01 and magnitudes.min() >= lo * 0.99
                    assert abs(np.mean(drawn < 0) - 0.5) < 0.1
                if host.kind == "edge":
                    specials = set(edge_values(problem.buffer(name).dtype, tuple(host.ranges[name])).tolist())
                    share = np.mean([v in specials for v in drawn.reshape(-1).tolist()])
                    assert 0.15 < share < 0.4  # EDGE_FRACTION of the elements, plus chance hits


def _same_cases(host: np.ndarray, device: np.ndarray, hi: float) -> None:
    """Two stress draws hold NaN and +-inf at the same elements, and every finite value
    inside the domain."""
    for test in (np.isnan, np.isposinf, np.isneginf):
        assert np.array_equal(test(host), test(device))
    finite = np.isfinite(device)
    assert np.all(np.abs(device[finite]) <= hi * (1 + 1e-3))
    assert np.isfinite(host).mean() == finite.mean()


def test_elementwise_stress_cases_sit_where_the_host_puts_them():
    square = Problem("sq", "square", [Buffer("x", "float32", (9001,)), Buffer("out", "float32", (9001,), role="out")])
    for problem in (vector_add_problem("float32", 9001), vector_add_problem("float16", 9001), square):
        stress = next(t for t in range(trial_count(problem)) if make_trial_inputs(problem, "g", t).kind == "stress")
        host = make_trial_inputs(problem, "g", stress)
        device = make_trial_inputs_device(problem, "g", stress, CPU)
        for name in host.values:
            _same_cases(host.values[name], device.values[name].numpy(), host.ranges[name][1])
        if problem.op == "vector_add":  # y's cases are built from x: exact cancellation at case 0
            x, y = device.values["x"].numpy(), device.values["y"].numpy()
            assert np.array_equal(y[0::9], -x[0::9])


@pytest.mark.parametrize("problem", PARITY_PROBLEMS, ids=lambda p: p.problem_id)
def test_device_reference_and_bounds_equal_the_hosts_on_the_same_inputs(problem):
    assert_prepared_on_the_device_as_on_the_host(problem, CPU)


def test_a_trivial_reference_is_refused_the_same_way():
    problem = gemm_problem("float32", a_init=Distribution("zeros"))
    host = prepare_problem(problem, "g", 1)
    device = prepare_problem(problem, "g", 1, device=CPU)
    assert host.refusal and device.refusal == host.refusal
    assert device.refusal_status == host.refusal_status == "trivial_reference"


def test_prepare_on_the_device_keeps_what_it_cannot_make_on_the_host():
    fp8 = Problem("fp8", "vector_add", [Buffer("x", "float8_e4m3", (64,)), Buffer("y", "float8_e4m3", (64,)),
                                       Buffer("out", "float16", (64,), role="out")])
    assert make_trial_inputs_device(fp8, "g", 0, CPU) is None
    row_sum = Problem("rs", "row_sum", [Buffer("x", "float32", (4, 8)), Buffer("y", "float32", (4,), role="out")])
    assert not device_supported(row_sum) and device_supported(vector_add_problem())
    assert prepare_device(row_sum) is None and prepare_device(vector_add_problem(), inputs="host") is None
    with pytest.raises(ValueError, match="inputs must be one of"):
        prepare_device(vector_add_problem(), inputs="gpu")
    prepared = prepare_problem(vector_add_problem(), "g", device=CPU)
    assert [t.generator for t in prepared.trials] == [device_rng.GENERATOR] * trial_count(vector_add_problem())
    storage = prepared.host_storage()
    assert storage[0]["x"].dtype == np.float32 and storage[0]["x"].shape == (4096,)



def test_the_first_trial_is_downloaded_alone_for_the_sanitizers():
    prepared = prepare_problem(vector_add_problem(), "g", device=CPU)
    first = prepared.first_host_storage()
    assert prepared._host_storage is None  # the other trials stay where they were made
    redrawn = prepare_problem(vector_add_problem(), "g", device=CPU).host_storage()
    assert first.keys() == redrawn[0].keys() and all(np.array_equal(first[k], redrawn[0][k]) for k in first)
    assert prepared.host_storage()[0] is first and prepared.first_host_storage() is first

def test_a_witness_of_device_drawn_inputs_is_redrawn_on_the_cpu():
    from verify.trials.witness import regenerate
    problem = vector_add_problem()
    trial = make_trial_inputs_device(problem, "g", 2, CPU)
    reference = (trial.values["x"] + trial.values["y"]).numpy()
    record = KernelRecord(kernel_id="k", group_id="g", source="test", variant={}, name="k", arch="sm_80",
                          ptx="", launches=[], problem=problem,
                          provenance={"verify": {"input_generators": [device_rng.GENERATOR] * 5}})
    found = regenerate(record, {"trial": 2, "output": "out", "flat_index": 17, "seed": trial.seed})
    assert found.seed_matches and found.reference == reference[17]
    host = regenerate(dataclasses.replace(record, provenance={}), {"trial": 2, "output": "out", "flat_index": 17})
    assert host.reference != found.reference  # the host generator draws other values


def _sample_stream(rng, true_us: float, noise: float):
    while True:
        yield true_us * float(rng.lognormal(0.0, noise))


@pytest.mark.parametrize("noise", [0.002, 0.01, 0.05])
def test_early_stop_keeps_the_median_within_tolerance(noise):
    rng = np.random.default_rng(7)
    true_us = 100.0
    for _ in range(20):  # many timing runs of one synthetic kernel
        samples, stream = [], _sample_stream(rng, true_us, noise)
        while not should_stop(samples, 0.0, 1.0):
            samples.append(next(stream))
        stats = summarise(samples)
        assert MIN_SAMPLES <= stats.samples <= MAX_SAMPLES
        assert abs(stats.median_us - true_us) / true_us < 0.01
        if noise <= 0.002:
            assert stats.samples < 50  # a steady kernel stops long before the old floor of 50
        if noise >= 0.05:
            assert stats.samples > 50  # a noisy one samples on until its median is stable


def test_output_hash_of_device_tensors_in_chunks_equals_the_hosts(monkeypatch):
    from verify.judge import outcome
    rng = np.random.default_rng(3)
    outputs = {"out": rng.normal(size=1001).astype(np.float32), "h": rng.normal(size=77).astype(np.float16)}
    specs = [OutputSpec("out", "float32"), OutputSpec("h", "float16")]
    host = outcome.output_hash([outcome.TrialRun(0, outputs)], specs)
    monkeypatch.setattr(outcome, "HASH_CHUNK_BYTES", 100)  # many chunks per output
    tensors = {name: torch.from_numpy(array.copy()) for name, array in outputs.items()}
    assert outcome.output_hash([outcome.TrialRun(0, tensors)], specs) == host
    tensors["out"][500] += 1
    assert outcome.output_hash([outcome.TrialRun(0, tensors)], specs) != host


class _HostAddWorker:
    """The worker interface computing a float32 vector add on the host (no GPU): ``exact``
    rows add, ``skewed`` rows add 1% at element 5; outputs come back as host arrays."""
    ordinal = 0
    info = {"name": "host vector add", "cc": [9, 0], "driver_version": "0"}

    def check(self, record_json, group, payload, cubin, timeout, device_outputs=False):
        import json
        from verify.judge.outcome import CheckResult, TrialRun
        name = json.loads(record_json)["name"]
        runs = []
        for trial, _key, _seed, storage in payload:
            with np.errstate(invalid="ignore", over="ignore"):
                out = (storage["x"] + storage["y"]).astype(np.float32)
            if name == "skewed":
                out[5] = out[5] * np.float32(1.01) if np.isfinite(out[5]) and out[5] != 0 else np.float32(1e30)
            runs.append(TrialRun(trial, {"out": out}))
        return CheckResult(runs=runs)

    def close(self):
        pass


def _verified_both_ways(tmp_path, monkeypatch, problem: Problem, names: tuple, worker) -> dict:
    """``names`` (one row each of ``problem``) verified by ``worker`` with torch's CPU as the
    judging device, with the trials made there (auto) and on the host: mode -> name -> row."""
    from dataset_spec.store.shards import ShardWriter, read_records
    from verify import runner, verify_dataset
    rows = [KernelRecord(problem.problem_id, "test", {"entry": name}, name, "sm_80", "", [], problem,
                         build_key=f"k-{name}", kernel_id=name) for name in names]
    ShardWriter(tmp_path / "in").write(rows)
    monkeypatch.setattr(runner, "judge_device", lambda problem, reference, ordinal: CPU)
    got = {}
    for inputs in ("auto", "host"):
        verify_dataset(tmp_path / "in", tmp_path / inputs, timing=False, progress=False, inputs=inputs,
                       start_workers=lambda n: [worker], assemble_jobs=0)
        got[inputs] = {r.name: r for r in read_records(tmp_path / inputs)}
    return got


def test_verify_with_trials_made_on_the_device_labels_as_the_host(tmp_path, monkeypatch):
    """The runner end to end with torch's CPU as the device (inputs, references, bounds and
    judging there) against the host path: the same statuses, the generator recorded."""
    problem = vector_add_problem("float32", 5000)
    got = _verified_both_ways(tmp_path, monkeypatch, problem, ("exact", "exact_too", "skewed"), _HostAddWorker())
    for mode, generator in (("auto", device_rng.GENERATOR), ("host", HOST_GENERATOR)):
        assert [got[mode][n].status for n in ("exact", "exact_too", "skewed")] == ["passed", "passed", "wrong_result"]
        assert got[mode]["exact"].provenance["verify"]["input_generators"] == [generator] * trial_count(problem)
        assert got[mode]["exact"].output_hash == got[mode]["exact_too"].output_hash
    assert got["auto"]["exact"].output_hash != got["host"]["exact"].output_hash  # other inputs, other outputs
    # the witness of the device-drawn trial is redrawn (on the CPU) to the reference it recorded
    from verify.trials.witness import regenerate
    witness = got["auto"]["skewed"].witness
    assert regenerate(got["auto"]["skewed"]).reference == witness["reference"]


def test_trials_the_device_cannot_make_are_drawn_on_the_host_beside_the_others():
    from verify.trials.device_prepare import device_makes
    problem = Problem("gemm_i8", "gemm", [Buffer("A", "int8", (16, 64)), Buffer("B", "int8", (64, 8)),
                                          Buffer("D", "int32", (16, 8), role="out")], params={"M": 16, "N": 8, "K": 64})
    kinds = [make_trial_inputs(problem, "g", t).kind for t in range(trial_count(problem))]
    prepared = prepare_problem(problem, "g", device=CPU)
    host_kinds = ("wide", "edge", "stress")  # integer draws of these kinds stay on the host
    for trial, kind in zip(prepared.trials, kinds):
        assert device_makes(problem, trial.trial) == (kind not in host_kinds)
        assert trial.generator == (HOST_GENERATOR if kind in host_kinds else device_rng.GENERATOR)
        assert trial.storage["A"].dtype == (np.int8 if kind in host_kinds else torch.int8)
    assert not prepared.refusal
    assert all(device_makes(p, kinds.index("stress")) for p in (vector_add_problem(), gemm_problem("bfloat16")))


def _row_signature(values: np.ndarray, axis: int) -> np.ndarray:
    """Per row along ``axis`` (the reduction axis): NaNs, infinities, whether every element
    is equal, whether many are zero (half, in the half-zeros rows), whether signs alternate (rows by pattern)."""
    rows = np.moveaxis(values, axis, -1).reshape(-1, values.shape[axis])
    finite = np.where(np.isfinite(rows), rows, 0.0)
    return np.stack([np.isnan(rows).sum(1), np.isinf(rows).sum(1), (rows == rows[:, :1]).all(1),
                     (rows == 0).mean(1) > 0.1, (np.sign(finite[:, ::2]) > 0).all(1) & (np.sign(finite[:, 1::2]) < 0).all(1)],
                    axis=1)


@pytest.mark.parametrize("layouts,finite", [(("row", "row"), False), (("row", "col"), False),
                                             (("col", "row"), False), (("row", "row"), True)])
def test_gemm_stress_rows_follow_the_host_patterns(layouts, finite):
    """Device stress rows match the host's; ``finite_operands`` (3xTF32) drops B's infinity."""
    problem = gemm_problem("float32" if finite else "bfloat16", 30, 22, 64)
    problem = Problem(problem.problem_id, "gemm", problem.buffers,
                      params={**problem.params, "layout_a": layouts[0], "layout_b": layouts[1],
                              **({"finite_operands": True} if finite else {})})
    stress = next(t for t in range(trial_count(problem)) if make_trial_inputs(problem, "g", t).kind == "stress")
    host = make_trial_inputs(problem, "g", stress)
    device = make_trial_inputs_device(problem, "g", stress, CPU)
    k_axis = {"A": -1 if layouts[0] == "row" else 0, "B": 0 if layouts[1] == "row" else -1}
    for name, axis in k_axis.items():
        h, d = host.values[name], device.values[name].numpy()
        assert np.array_equal(_row_signature(h, axis), _row_signature(d, axis)), name
        finite_values = np.isfinite(d)
        assert np.all(np.abs(d[finite_values]) <= host.ranges[name][1])
    assert np.isinf(host.values["B"]).any() != finite and np.isinf(device.values["B"].numpy()).any() != finite


def test_float64_stress_keeps_the_domain_top_finite():
    # hi of a float64 add is ~9e307: a float32 intermediate would turn it into infinity
    problem = vector_add_problem("float64", 900)
    stress = next(t for t in range(trial_count(problem)) if make_trial_inputs(problem, "g", t).kind == "stress")
    host = make_trial_inputs(problem, "g", stress)
    device = make_trial_inputs_device(problem, "g", stress, CPU)
    for name in ("x", "y"):
        _same_cases(host.values[name], device.values[name].numpy(), host.ranges[name][1])
    hi = host.ranges["y"][1]
    assert np.array_equal(np.abs(device.values["y"].numpy()[5::9]), np.full(100, hi))


@pytest.mark.parametrize("problem", [
    Problem("smc", "softmax", [Buffer("x", "float32", (64, 400)), Buffer("y", "float32", (64, 400), role="out")]),
    Problem("rnc", "rmsnorm", [Buffer("x", "bfloat16", (64, 256)), Buffer("w", "bfloat16", (256,)),
                               Buffer("y", "bfloat16", (64, 256), role="out")])], ids=lambda p: p.op)
def test_a_row_op_prepared_on_the_device_counts_the_coverage_the_host_counts(problem):
    """A row op's trials drawn on the device (its stress rows on the host), its references and
    coverage counted there: the same counts as the host's on the same trials, and every item
    the op declares drawn."""
    assert device_supported(problem)
    prepared = prepare_problem(problem, "g", device=CPU)
    assert not prepared.refusal
    kinds = {t.kind: t.generator for t in prepared.trials}
    assert kinds.pop("stress") == HOST_GENERATOR and set(kinds.values()) == {device_rng.GENERATOR}
    on_device = prepared.measure_coverage()
    host = lambda value: value.numpy() if hasattr(value, "detach") else value  # noqa: E731
    trials = [dataclasses.replace(t, storage=t.host_storage(), values={k: host(v) for k, v in t.values.items()})
              for t in prepared.trials]
    references = [{k: host(v) for k, v in ref.items()} for ref in prepared.references]
    assert on_device == prepared.measure_coverage((trials, references))
    declared = get_op(problem.op).coverage(problem)
    assert declared and all(on_device[item.key] > 0 for item in declared), on_device


class _HostSoftmaxWorker(_HostAddWorker):
    """The worker interface computing a float32 row softmax on the host: ``exact`` rows in
    float64 rounded once, ``naive`` rows exp(x) in float32 without subtracting the row's
    maximum (overflows on wide rows), ``skewed`` rows 1% off at element 5,
    ``nan_on_neg_inf_rows`` exact but NaN in every row that holds -inf."""
    info = {"name": "host softmax", "cc": [9, 0], "driver_version": "0"}

    def check(self, record_json, group, payload, cubin, timeout, device_outputs=False):
        import json
        from verify.judge.outcome import CheckResult, TrialRun
        name = json.loads(record_json)["name"]
        runs = []
        for trial, _key, _seed, storage in payload:
            x = np.asarray(storage["x"], dtype=np.float32)
            with np.errstate(all="ignore"):
                if name == "naive":
                    e = np.exp(x)
                    out = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
                else:
                    x64 = x.astype(np.float64)
                    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
                    out = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
            if name == "skewed":
                out.reshape(-1)[5] = np.float32(out.reshape(-1)[5] * 1.01 + 1e-3)
            if name == "nan_on_neg_inf_rows":  # exact, but a row holding -inf comes out NaN
                rows = out.reshape(-1, out.shape[-1])
                rows[np.isneginf(x.reshape(rows.shape)).any(axis=-1)] = np.nan
            runs.append(TrialRun(trial, {"y": out}))
        return CheckResult(runs=runs)


def test_softmax_verified_with_trials_made_on_the_device_labels_as_the_host(tmp_path, monkeypatch):
    problem = Problem("sm_e2e", "softmax", [Buffer("x", "float32", (64, 300)),
                                            Buffer("y", "float32", (64, 300), role="out")])
    names = ("exact", "naive", "skewed", "nan_on_neg_inf_rows")
    got = _verified_both_ways(tmp_path, monkeypatch, problem, names, _HostSoftmaxWorker())
    for mode in ("auto", "host"):
        statuses = [got[mode][n].status for n in names]
        assert statuses[0] == "passed" and statuses[1] != "passed" and statuses[2] == "wrong_result", (mode, statuses)
        assert statuses[3] != "passed", (mode, statuses)  # only the host-drawn stress rows hold -inf
    assert [got["auto"][n].status for n in names] == [got["host"][n].status for n in names]
    generators = got["auto"]["exact"].provenance["verify"]["input_generators"]
    assert device_rng.GENERATOR in generators and HOST_GENERATOR in generators  # the stress rows are the host's


class _HostRopeWorker(_HostAddWorker):
    """The worker interface applying rope (in place on q and k, role inout) on the host:
    ``exact`` rows in float64 rounded once, ``forward`` rows the forward rotation where the
    problem asks for the inverse."""
    info = {"name": "host rope", "cc": [9, 0], "driver_version": "0"}

    def check(self, record_json, group, payload, cubin, timeout, device_outputs=False):
        import json
        from dataset_spec.model import KernelRecord as Record
        from dataset_spec.ops.rope import ref_rope
        from verify.judge.outcome import CheckResult, TrialRun
        from verify.trials.inputs import float_to_bits, from_storage
        problem = Record.from_json(record_json).problem
        if json.loads(record_json)["name"] == "forward":
            problem = dataclasses.replace(problem, params=dict(problem.params, inverse=False))
        runs = []
        for trial, _key, _seed, storage in payload:
            values = {b.name: from_storage(storage[b.name], b.dtype, b.shape) for b in problem.buffers}
            out = ref_rope(values, problem)
            runs.append(TrialRun(trial, {name: float_to_bits(out[name], problem.buffer(name).dtype)
                                         for name in ("q", "k")}))
        return CheckResult(runs=runs)


_ROPE = Problem("rope_e2e", "rope", [Buffer("q", "bfloat16", (2, 16, 4, 64), role="inout"),
                                     Buffer("k", "bfloat16", (2, 16, 2, 64), role="inout"),
                                     Buffer("cos", "float32", (16, 64)), Buffer("sin", "float32", (16, 64))],
                params={"inverse": True})


def test_rope_in_place_verified_with_trials_made_on_the_device_labels_as_the_host(tmp_path, monkeypatch):
    names = ("exact", "forward")
    got = _verified_both_ways(tmp_path, monkeypatch, _ROPE, names, _HostRopeWorker())
    for mode in ("auto", "host"):
        assert [got[mode][n].status for n in names] == ["passed", "wrong_result"], mode
    assert device_rng.GENERATOR in got["auto"]["exact"].provenance["verify"]["input_generators"]


def test_a_group_whose_references_outgrow_the_gpu_is_prepared_on_the_host(monkeypatch):
    """Out of GPU memory in a float64 reference or its scale is the GPU's limit, not the
    function's: the group is prepared on the host (not refused), and its note says why."""
    from verify.trials import device_prepare

    def out_of_memory(*args):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 12.00 GiB")
    monkeypatch.setattr(device_prepare, "bounds_on_device", out_of_memory)
    problem = vector_add_problem("float32", 5000)
    prepared = prepare_problem(problem, "g", device=CPU)
    assert not prepared.refusal and prepared.device is None
    assert all(t.generator == HOST_GENERATOR for t in prepared.trials)
    assert all(isinstance(ref["out"], np.ndarray) for ref in prepared.references)
    assert "ran out of memory" in prepared.bound_note
    host = prepare_problem(problem, "g")
    for got, want in zip(prepared.references, host.references):
        np.testing.assert_array_equal(got["out"], want["out"])


def test_other_failures_of_a_reference_on_the_device_still_refuse_the_group(monkeypatch):
    from verify.trials import device_prepare

    def broken(*args):
        raise ValueError("the function's own error")
    monkeypatch.setattr(device_prepare, "bounds_on_device", broken)
    prepared = prepare_problem(vector_add_problem("float32", 5000), "g", device=CPU)
    assert "reference failed: ValueError: the function's own error" in prepared.refusal
