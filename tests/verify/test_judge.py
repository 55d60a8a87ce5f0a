"""Where members are judged (verify/judge/judge.py): numpy on the host, or torch on the GPU, with
the same verdicts either way."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dataset_spec.model import Buffer, Problem
from verify.judge import compare
from verify.judge.compare import error_stats
from verify.trials.inputs import exact_values, from_storage, float_to_bits
from verify.judge.judge import MIN_GPU_ELEMENTS, judge_device, on_device, to_host
from verify.judge.outcome import CheckResult, Consensus, TrialRun, classify
from verify.runner import prepare_problem


def _softmax(rows: int, cols: int) -> Problem:
    return Problem(f"softmax_{rows}x{cols}", "softmax", [
        Buffer("x", "float32", (rows, cols)), Buffer("y", "float32", (rows, cols), role="out")])


def test_small_outputs_and_numpy_stay_on_the_host():
    small = _softmax(4, 8)
    assert judge_device(small, "numpy") is None
    assert judge_device(small, "auto") is None  # below MIN_GPU_ELEMENTS (or no torch, no GPU)
    with pytest.raises(ValueError, match="reference backend"):
        judge_device(small, "cupy")
    prepared = prepare_problem(small, "g", 1)
    assert on_device(prepared, None) is prepared


def test_exact_values_keep_numpy_dtypes_and_widen_the_others():
    f32 = np.array([1.5, -2.25], dtype=np.float32)
    assert exact_values(f32, "float32").dtype == np.float32
    bits = float_to_bits([1.5, -2.25], "bfloat16")
    assert exact_values(bits, "bfloat16").dtype == np.float64
    assert list(exact_values(bits, "bfloat16")) == [1.5, -2.25]
    # the checks widen narrow arrays themselves: the same stats as from float64 values
    ref = np.array([1.5, -2.0])
    assert error_stats(f32, ref, 0.5) == error_stats(from_storage(f32, "float32"), ref, 0.5)


def _cases(rng):
    n = 5000
    ref = rng.normal(size=n) * np.exp(rng.uniform(-20, 20, n))
    bound = np.abs(ref) * 1e-3 + 1e-30
    good = ref + bound * rng.uniform(-1, 1, n)
    wrong = good.copy()
    wrong[rng.integers(0, n, 7)] *= 1.5
    special_ref = ref.copy()
    special_ref[:4] = [np.inf, -np.inf, np.nan, 0.0]
    special_out = special_ref.copy()
    special_out[1], special_out[10], special_out[11] = np.inf, np.nan, -np.inf
    return [
        (good, ref, bound),
        (wrong, ref, bound),
        (wrong.astype(np.float32), ref, bound),
        (good, ref, 1e-3),                       # one-value bound
        (special_out, special_ref, bound),
        (special_ref.copy(), special_ref, np.full(n, np.inf)),
        (good.reshape(50, 100), ref.reshape(50, 100), bound.reshape(50, 100)),
    ]


def _torch_device(kind):
    """torch and a device of ``kind`` (cpu needs only torch; cuda a CUDA device), or a skip."""
    torch = pytest.importorskip("torch")
    if kind == "cuda" and not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch, torch.device(kind, 0) if kind == "cuda" else torch.device("cpu")


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("kind", DEVICES)
def test_torch_judge_gives_the_host_stats(monkeypatch, kind):
    torch, device = _torch_device(kind)
    monkeypatch.setattr(compare, "TORCH_CHUNK", 999)  # several chunks, one ragged
    for out, ref, bound in _cases(np.random.default_rng(3)):
        host = error_stats(out, ref, bound)
        gpu = error_stats(out, torch.from_numpy(np.asarray(ref)).to(device),
                          torch.as_tensor(np.asarray(bound, dtype=np.float64), device=device))
        assert gpu.n_bad == host.n_bad and gpu.n_total == host.n_total and gpu.worst_index == host.worst_index
        for name in ("max_abs_err", "max_rel_err", "max_err_ratio"):
            a, b = getattr(gpu, name), getattr(host, name)
            assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12), name


@pytest.mark.parametrize("kind", DEVICES)
def test_torch_judge_gives_the_host_verdicts(kind):
    """A softmax (2M outputs on the GPU, where "auto" moves it there; a smaller one on the
    CPU): the good member passes, a member with one wrong element and one that is 1% off
    fail, the same with torch as with numpy on the host, on every default trial kind
    (stress rows with NaN included), and agreement is judged the same way."""
    torch, _ = _torch_device(kind)
    if kind == "cuda":
        problem = _softmax(512, 4096)
        assert problem.buffers[1].numel >= MIN_GPU_ELEMENTS
        prepared = prepare_problem(problem, "judge", 2)
        device = judge_device(problem, "auto", 0)
    else:
        problem = _softmax(64, 512)
        assert judge_device(problem, "auto", 0, "cpu") is None  # small: numpy stays
        prepared = prepare_problem(problem, "judge", None)
        device = judge_device(problem, "torch", 0, "cpu")
    assert device is not None and device.type == kind
    judged = on_device(prepared, device)
    assert judged.references[0]["y"].device == device

    def member(change):
        runs = []
        for trial, ref in zip(prepared.trials, prepared.references):
            out = ref["y"].astype(np.float32)
            runs.append(TrialRun(trial.trial, {"y": change(out.copy())}))
        return CheckResult(runs)

    def one_wrong(out):
        out[7, 9] = out[7, 9] * 1.5 + 1e-3
        return out

    members = {"good": lambda o: o, "one_wrong": one_wrong, "one_percent": lambda o: (o * 1.01).astype(np.float32)}
    host_consensus, gpu_consensus = Consensus(prepared.specs), Consensus(judged.specs)
    for name, change in members.items():
        host = classify(member(change), prepared.specs, prepared.references)
        gpu = classify(member(change), judged.specs, judged.references)
        assert (host.status, host.message, host.output_hash) == (gpu.status, gpu.message, gpu.output_hash), name
        assert gpu.max_err_ratio == pytest.approx(host.max_err_ratio, rel=1e-12)
        if host.status == "passed":
            host_consensus.add(name, host.outputs)
            gpu_consensus.add(name, gpu.outputs)
    assert classify(member(lambda o: o), judged.specs, judged.references).status == "passed"
    assert classify(member(one_wrong), judged.specs, judged.references).status == "wrong_result"
    assert host_consensus.verdicts() == gpu_consensus.verdicts()
    assert float(to_host(judged.specs[0].bounds[0]).max()) == float(np.max(prepared.specs[0].bounds[0]))


def test_witness_of_a_bfloat16_device_output_downloads_exactly():
    """A bfloat16 output judged where it lives (a torch tensor) must give its witness: numpy
    has no bfloat16, so the download widens it to float32, which is exact."""
    torch = pytest.importorskip("torch")
    from verify.judge.trial_stats import first_outside
    ref = np.linspace(-3.0, 3.0, 64)
    out = torch.tensor(ref, dtype=torch.bfloat16)
    out[17] = 1000.0
    bound = np.full(ref.shape, 0.05)
    assert first_outside(out, ref, bound) == 17
    assert np.array_equal(first_outside.__globals__["to_host"](out)[:17],
                          torch.tensor(ref[:17], dtype=torch.bfloat16).float().numpy())
