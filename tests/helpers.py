"""Helpers the tests share: a GPU or nvcc to run on (or the reason to skip), rows and
problems to judge, verified datasets carried from a GPU machine."""
import functools

import numpy as np
import pytest


@functools.lru_cache(maxsize=1)
def gpu_unavailable_reason():
    """None when a CUDA driver with a device is usable, else why not."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return "cuda-bindings is not installed"
    try:
        (err,) = driver.cuInit(0)
    except Exception as exc:  # the driver library itself is missing
        return f"no CUDA driver: {exc}"
    if err != driver.CUresult.CUDA_SUCCESS:
        return f"no usable CUDA driver/device ({err.name})"
    err, count = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or count == 0:
        return "no CUDA device"
    return None


def nvcc_available() -> bool:
    """Whether the pinned CUDA wheels' nvcc is installed (tests that compile skip without it)."""
    from ptx_tools import ToolchainError, find_tool
    try:
        return find_tool("nvcc").exists()
    except ToolchainError:
        return False


needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="nvcc from the CUDA wheels is not installed")


def compiled_or_skip(source: str, arch: str = "sm_80") -> str:
    """PTX of a test's CUDA C kernels, compiled with the pinned nvcc; the test skips in one
    line where no nvcc is installed."""
    ptx_tools = pytest.importorskip("ptx_tools")
    try:
        return ptx_tools.compile_cuda(source, arch)
    except ptx_tools.ToolchainError as exc:
        pytest.skip(f"no nvcc: {exc}")


def vector_add_row(ptx: str, group: str, entry: str, n: int = 1000, name: str = "", variant=None, **record_kw):
    """A row of an fp32 vector add of ``n`` elements (x, y -> out) running ``entry`` of
    ``ptx`` for sm_80 with 256-thread blocks: the GPU tests' smallest real problem."""
    from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem
    problem = Problem(group, "vector_add", [Buffer("x", "float32", (n,)), Buffer("y", "float32", (n,)),
                                            Buffer("out", "float32", (n,), role="out")])
    launch = Launch(entry, ((n + 255) // 256,), (256,),
                    [Arg.buf("x"), Arg.buf("y"), Arg.buf("out"), Arg.scalar("s32", n)])
    return KernelRecord(group, "test", variant or {"entry": entry}, name or entry, "sm_80", ptx, [launch], problem,
                        **record_kw)


def verified_carried(dataset, tmp_path, timeout: int = 1800,
                     build_hint: str = "the command in this file's docstring") -> list:
    """The rows ``ptxds verify --no-timing`` writes for a dataset carried to the GPU machine
    (built beforehand on a CPU machine); the test skips in one line where it was not carried."""
    import subprocess
    import sys
    from pathlib import Path
    from dataset_spec.store.shards import read_records
    dataset = Path(dataset)
    if not dataset.is_dir():
        pytest.skip(f"{dataset} was not carried (build it with {build_hint})")
    out = tmp_path / "verified"
    proc = subprocess.run([sys.executable, "-m", "ptxds", "verify", str(dataset), "--out", str(out),
                           "--silent", "--no-timing"], capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return list(read_records(out))


def judge(problem, kernel, reference=None) -> tuple:
    """(verdict, prepared problem): the verifier's classification of ``kernel`` over every
    trial of ``problem``, the kernel given as (trial input values, float64 reference of the
    output) -> float64 output, stored in the output's dtype as a GPU would leave it."""
    from verify.trials.inputs import float_to_bits
    from verify.judge.outcome import CheckResult, TrialRun, classify
    from verify.runner import prepare_problem
    prepared = prepare_problem(problem, "g", None, **({"reference": reference} if reference else {}))
    assert prepared.refusal == "", prepared.refusal
    spec = prepared.specs[0]
    runs = [TrialRun(trial.trial, {spec.name: float_to_bits(kernel(trial.values, ref[spec.name]), spec.dtype)})
            for trial, ref in zip(prepared.trials, prepared.references)]
    return classify(CheckResult(runs), prepared.specs, prepared.references), prepared


def judge_outputs(problem, kernel) -> tuple:
    """(verdict, prepared problem) as ``judge`` gives them, for a kernel of several outputs
    given as trial input values -> {output: float64}, every declared output checked."""
    from verify.trials.inputs import float_to_bits
    from verify.judge.outcome import CheckResult, TrialRun, classify
    from verify.runner import prepare_problem
    prepared = prepare_problem(problem, "g", None)
    assert prepared.refusal == "", prepared.refusal
    runs = []
    for trial in prepared.trials:
        with np.errstate(all="ignore"):
            outs = kernel(trial.values)
        runs.append(TrialRun(trial.trial, {s.name: float_to_bits(outs[s.name], s.dtype) for s in prepared.specs}))
    return classify(CheckResult(runs), prepared.specs, prepared.references), prepared


def rounded(values, dtype: str) -> np.ndarray:
    """``values`` rounded to ``dtype`` (as a store or a cast does), back in float64."""
    from verify.trials.inputs import float_to_bits, from_storage
    return from_storage(float_to_bits(np.asarray(values, dtype=np.float64), dtype), dtype)


def assert_saturating_outputs_spread(problem, top: int) -> None:
    """A saturating integer output (its top ``top``): a correct kernel passes every trial,
    a uniform trial's references stay mostly inside the range (under 25% at +-top, more
    than ``top`` distinct values), and a kernel that stores only signs (+-top) fails."""
    verdict, prepared = judge(problem, lambda values, ref: ref)
    assert verdict.status == "passed", verdict.message
    out = prepared.specs[0].name
    for trial, ref in zip(prepared.trials, prepared.references):
        values = np.asarray(ref[out])
        if trial.kind in ("normal", "uniform"):
            saturated = np.mean(np.abs(values) >= top)
            assert saturated < 0.25 and len(np.unique(values)) > top, (trial.kind, saturated)
    verdict, _ = judge(problem, lambda values, ref: np.sign(ref) * top)
    assert verdict.status == "wrong_result"


def tvm_tensor_cores_or_skip(tmp_path_factory, cache_name: str) -> None:
    """Skip where TVM is not installed or cannot tensorize here (schedules.tensorize_blocker);
    otherwise point TVM's compile cache at a fresh folder for the module's builds."""
    import os
    pytest.importorskip("tvm")
    from builders.tvm.schedules import tensorize_blocker
    blocker = tensorize_blocker()
    if blocker:
        pytest.skip(blocker)
    os.environ["PTXDS_TVM_CACHE"] = str(tmp_path_factory.mktemp(cache_name))
