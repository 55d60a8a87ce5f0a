"""A user's function (op custom) prepared on the device: its trials drawn on the host, its
references, error scales, rounded magnitudes and bounds computed on the device through the
function's route (torch as written, CuPy with ``np`` bound to it, else numpy on a copy).
The same trials must give the host path's references and bounds. torch on the CPU stands in
for the GPU (CuPy needs one, so a numpy-only function takes the host route here); the
namespace copy is checked with a recording stand-in for CuPy."""
import sys
import types

import numpy as np
import pytest

from dataset_spec.model import Buffer, Problem
from verify.trials import array_namespace, custom_reference

torch = pytest.importorskip("torch")
N = 1 << 12

# Written for numpy; all of it also runs on torch tensors.
TORCH_READY = '''
def f(inputs, problem):
    x, y = inputs["x"], inputs["y"]
    return {"out": x * y + 1.0, "gate": x / (1.0 + abs(y))}

def f_error_scale(inputs, problem):
    x, y = inputs["x"], inputs["y"]
    return {"out": abs(x * y) + 1.0, "gate": abs(x) / (1.0 + abs(y))}

def f_rounded(inputs, problem):
    return {"out": abs(inputs["x"] * inputs["y"])}
'''
# numpy only: np.errstate, np.arange, np.where on arrays torch does not take from numpy's names
NUMPY_ONLY = '''
import numpy as np

def _scaled(x):
    return x * (1.0 + np.arange(x.shape[-1]) / x.shape[-1])

def f(inputs, problem):
    with np.errstate(over="ignore"):
        x = _scaled(inputs["x"])
        return {"out": np.where(x > 0, np.exp(-x), x) + inputs["y"], "gate": np.tanh(x)}

def f_error_scale(inputs, problem):
    x = _scaled(inputs["x"])
    return {"out": np.abs(x) + np.abs(inputs["y"]), "gate": np.abs(x)}
'''


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXDS_REFERENCES_CACHE", str(tmp_path / "references"))
    custom_reference._VERDICTS.clear()


def _problem(source: str) -> Problem:
    return Problem("p", "custom", [Buffer("x", "float32", (4, N // 4)), Buffer("y", "bfloat16", (4, N // 4)),
                                   Buffer("out", "bfloat16", (4, N // 4), "out"),
                                   Buffer("gate", "float32", (4, N // 4), "out")],
                   params={"reference": "user_ref_device:f", "reference_source": source,
                           "output_roundings": {"out": 2, "gate": 1}})


def _host(value) -> np.ndarray:
    return value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)


@pytest.mark.parametrize("source,route", [(TORCH_READY, "torch"), (NUMPY_ONLY, "")])
def test_the_device_path_gives_the_host_paths_references_and_bounds(source, route, monkeypatch):
    from verify import runner
    from verify.runner import prepare_problem
    monkeypatch.setattr(runner, "device_makes", lambda problem, trial: False)  # the same draws on both paths
    problem = _problem(source)
    on_host = prepare_problem(problem, "g/custom", reference="numpy")
    custom_reference._VERDICTS.clear()
    on_device = prepare_problem(problem, "g/custom", reference="numpy", device=torch.device("cpu"))
    assert not on_host.refusal and not on_device.refusal
    assert [t.kind for t in on_device.trials] == [t.kind for t in on_host.trials]
    for host_trial, device_trial in zip(on_host.trials, on_device.trials):  # the host's draws on both paths
        for name in host_trial.storage:
            np.testing.assert_array_equal(_host(device_trial.storage[name]), _host(host_trial.storage[name]))
    for host_refs, device_refs in zip(on_host.references, on_device.references):
        assert set(device_refs) == {"out", "gate"} and all(hasattr(v, "detach") for v in device_refs.values())
        for name, want in host_refs.items():
            np.testing.assert_allclose(_host(device_refs[name]), want, rtol=1e-12, atol=0)
    for host_spec, device_spec in zip(on_host.specs, on_device.specs):
        for host_bound, device_bound in zip(host_spec.bounds, device_spec.bounds):
            got, want = np.broadcast_to(_host(device_bound), np.shape(host_bound)), np.asarray(host_bound)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    identity = custom_reference.function_identity(problem, "reference")
    assert custom_reference._VERDICTS[identity] == route
    coverage = on_host.coverage()
    assert coverage and on_device.coverage() == coverage  # the outputs' items counted on the device


DERIVED = TORCH_READY + '''
def twice_x(inputs, problem):
    return 2.0 * inputs["x"]
'''


def test_plain_trials_are_drawn_on_the_device_and_a_derived_or_stress_trial_on_the_host():
    from dataset_spec.trials import trial_spec
    from verify.runner import prepare_problem
    from verify.trials import device_rng
    plain = _problem(TORCH_READY)
    derived = Problem("q", "custom", [Buffer("x", "float32", (4, N // 4)), Buffer("y", "float32", (4, N // 4)),
                                      Buffer("out", "bfloat16", (4, N // 4), "out"),
                                      Buffer("gate", "float32", (4, N // 4), "out")],
                      params={"reference": "user_ref_derived:f", "reference_source": DERIVED,
                              "derived_inputs": {"y": "twice_x"}})
    for problem in (plain, derived):
        prepared = prepare_problem(problem, "g/custom", reference="numpy", device=torch.device("cpu"))
        assert not prepared.refusal
        func = custom_reference._load_custom(problem, "reference")
        kinds = []
        for trial in prepared.trials:
            hows = {plan.how for plan in trial_spec(problem, trial.trial).buffers}
            on_device = trial.generator == device_rng.GENERATOR
            assert on_device == (hows == {"draw"}), (problem.problem_id, trial.kind, hows)
            kinds.append((trial.kind, on_device))
            values = {name: _host(value) for name, value in trial.values.items()}
            if problem is derived:
                np.testing.assert_array_equal(values["y"], 2.0 * values["x"].astype(np.float32))
            want = func(values, problem)
            for name, got in prepared.references[trial.trial].items():
                np.testing.assert_allclose(_host(got), want[name], rtol=1e-12, atol=0)
        if problem is plain:
            assert ("normal", True) in kinds and ("stress", False) in kinds
        else:
            assert not any(on_device for _, on_device in kinds)


class _Recording(types.ModuleType):
    """numpy, recording which names a function asks it for (a stand-in for CuPy)."""

    def __init__(self):
        super().__init__("recording")
        self.asked = []

    def __getattr__(self, name):
        self.asked.append(name)
        return getattr(np, name)


def test_a_copy_sees_the_namespace_in_its_module_and_its_helpers_the_original_does_not():
    module = types.ModuleType("user_ref_namespace")
    exec(NUMPY_ONLY, module.__dict__)
    sys.modules["user_ref_namespace"] = module
    try:
        library = _Recording()
        copy = array_namespace.rebound(module.f, array_namespace.Namespace(library,
                                                                           {"errstate": array_namespace._errstate}))
        values = {"x": np.linspace(-3, 3, 64).reshape(4, 16), "y": np.ones((4, 16))}
        want = module.f(values, None)
        assert library.asked == []  # the original never sees it
        got = copy(values, None)
        assert {"arange", "where", "exp", "tanh"} <= set(library.asked)  # _scaled's arange too
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])
        assert module.f.__globals__["np"] is np and module._scaled.__globals__["np"] is np
    finally:
        del sys.modules["user_ref_namespace"]


def test_without_cupy_or_a_gpu_the_cupy_route_gives_nothing():
    func = lambda inputs, problem: {"out": inputs["x"]}  # noqa: E731
    assert custom_reference.run_route("cupy", func, {"x": torch.ones(4, dtype=torch.float64)}, None, torch) is None


def _cuda_and_cupy() -> bool:
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_and_cupy(), reason="needs a CUDA GPU, torch and CuPy")
def test_on_a_gpu_a_numpy_only_function_takes_the_cupy_route_and_gives_numpys_answer():
    problem = _problem(NUMPY_ONLY)
    func = custom_reference._load_custom(problem, "reference")
    identity = custom_reference.function_identity(problem, "reference")
    rng = np.random.default_rng(7)
    values = {"x": rng.normal(size=(4, N // 4)) * 30, "y": rng.normal(size=(4, N // 4))}
    tensors = {k: torch.from_numpy(v).cuda() for k, v in values.items()}
    first = custom_reference.evaluate_tensors(func, tensors, problem, identity)  # finds the route: numpy's answer
    assert custom_reference._VERDICTS[identity] == "cupy"
    second = custom_reference.evaluate_tensors(func, tensors, problem, identity)  # on CuPy
    want = func(values, problem)
    for name in want:
        assert first[name].device.type == "cuda" and second[name].device.type == "cuda"
        np.testing.assert_allclose(second[name].cpu().numpy(), want[name], rtol=1e-12, atol=0)


def test_a_functions_copy_on_the_library_is_made_once():
    module = types.ModuleType("user_ref_once")
    exec(NUMPY_ONLY, module.__dict__)
    namespace = array_namespace.Namespace(_Recording(), {"errstate": array_namespace._errstate})
    first = custom_reference._on_cupy(module.f, namespace)
    assert first is not module.f and custom_reference._on_cupy(module.f, namespace) is first
    assert first.__globals__["np"] is namespace and module.f.__globals__["np"] is np
