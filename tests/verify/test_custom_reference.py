"""Users' reference functions (op custom): run through torch where they give numpy's answer
there (checked once per function, the verdict kept), on the host where they do not, and kept
on disk per input content. torch on the CPU stands in for the GPU here."""
import numpy as np
import pytest

from dataset_spec.model import Buffer, Problem
from dataset_spec.problems import get_op
from verify.trials import custom_reference
from verify.trials import reference_cache
from verify.trials.reference import evaluating_op as verifier_op

torch = pytest.importorskip("torch")
CPU = torch.device("cpu")
N = 1 << 17  # above the sizes the cache and the GPU path skip


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXDS_REFERENCES_CACHE", str(tmp_path / "references"))
    monkeypatch.delenv(reference_cache.LIMIT_ENV, raising=False)
    custom_reference._VERDICTS.clear()


def problem(source: str, n: int = N, function: str = "f") -> Problem:
    return Problem("p", "custom", [Buffer("x", "float32", (n,)), Buffer("y", "float32", (n,)),
                                   Buffer("out", "float32", (n,), "out")],
                   params={"reference": f"user_ref:{function}", "reference_source": source})


def values(seed: int, n: int = N) -> dict:
    rng = np.random.default_rng(seed)
    return {"x": rng.normal(size=n), "y": rng.normal(size=n)}


def counting(source: str):
    """The problem's function, and a list that records the type of each call's input."""
    p = problem(source)
    seen = []
    func = custom_reference._load_custom(p, "reference")

    def wrapped(inputs, prob):
        seen.append("tensor" if torch.is_tensor(inputs["x"]) else "numpy")
        return func(inputs, prob)
    return p, wrapped, seen


def test_a_function_that_agrees_under_torch_runs_there_after_one_checked_trial():
    p, func, seen = counting("def f(inputs, problem):\n    return {'out': inputs['x'] * inputs['y'] + 1.0}\n")
    identity = custom_reference.function_identity(p, "reference")
    first = custom_reference.evaluate(func, values(1), p, identity, torch, CPU)
    # the check computes both, on the trial and on it with specials; numpy's answer is kept
    assert seen == ["tensor", "numpy", "numpy", "tensor"]
    np.testing.assert_array_equal(first["out"], values(1)["x"] * values(1)["y"] + 1.0)
    second = custom_reference.evaluate(func, values(2), p, identity, torch, CPU)
    assert seen[4:] == ["tensor"]
    np.testing.assert_allclose(second["out"], values(2)["x"] * values(2)["y"] + 1.0, rtol=1e-15)
    # the verdict is kept on disk: a new process (an empty memory) asks torch straight away
    custom_reference._VERDICTS.clear()
    custom_reference.evaluate(func, values(3), p, identity, torch, CPU)
    assert seen[5:] == ["tensor"]


def test_numpy_only_code_and_other_answers_stay_on_the_host():
    # tensors have no astype (and on a GPU numpy's functions refuse them too)
    numpy_only = "import numpy as np\ndef f(inputs, problem):\n    return {'out': np.exp(inputs['x'].astype(float)) * 2}\n"
    p, func, seen = counting(numpy_only)
    identity = custom_reference.function_identity(p, "reference")
    for seed in (1, 2):
        out = custom_reference.evaluate(func, values(seed), p, identity, torch, CPU)
        np.testing.assert_allclose(out["out"], np.exp(values(seed)["x"]) * 2, rtol=1e-15)
    assert seen == ["tensor", "numpy", "numpy"]
    # runs under torch but means something else there: torch's std divides by n - 1
    p, func, seen = counting("def f(inputs, problem):\n    return {'out': inputs['x'] - inputs['x'].std()}\n")
    identity = custom_reference.function_identity(p, "reference")
    out = custom_reference.evaluate(func, values(1), p, identity, torch, CPU)
    np.testing.assert_array_equal(out["out"], values(1)["x"] - values(1)["x"].std())
    assert custom_reference._VERDICTS[identity] == ""  # no route: the host
    custom_reference.evaluate(func, values(2), p, identity, torch, CPU)
    assert seen == ["tensor", "numpy", "numpy"]


def test_disagreement_names_what_differs():
    want = {"out": np.array([1.0, np.nan, np.inf, 4.0])}
    assert custom_reference.disagreement({"out": want["out"] * (1 + 1e-14)}, want) == ""
    assert "NaN" in custom_reference.disagreement({"out": np.array([1.0, 2.0, np.inf, 4.0])}, want)
    assert "infinities" in custom_reference.disagreement({"out": np.array([1.0, np.nan, -np.inf, 4.0])}, want)
    assert "differs" in custom_reference.disagreement({"out": np.array([1.0, np.nan, np.inf, 4.01])}, want)
    assert "shape" in custom_reference.disagreement({"out": np.ones(3)}, want)
    assert "outputs" in custom_reference.disagreement({"other": want["out"]}, want)
    assert "no tensors" in custom_reference.disagreement(None, want)


def test_references_are_kept_per_input_content_and_trimmed_to_the_limit(monkeypatch):
    p, func, seen = counting("import numpy as np\ndef f(inputs, problem):\n    return {'out': np.sin(inputs['x'])}\n")
    identity = custom_reference.function_identity(p, "reference")
    first = custom_reference.evaluate(func, values(1), p, identity)
    again = custom_reference.evaluate(func, values(1), p, identity)
    assert seen == ["numpy"]  # the second is read back, not computed
    np.testing.assert_array_equal(first["out"], again["out"])
    custom_reference.evaluate(func, values(2), p, identity)
    assert seen == ["numpy", "numpy"]  # other inputs (another seed): another entry
    other = problem("import numpy as np\ndef f(inputs, problem):\n    return {'out': np.cos(inputs['x'])}\n")
    out = custom_reference.evaluate(custom_reference._load_custom(other, "reference"), values(1), other,
                                    custom_reference.function_identity(other, "reference"))
    np.testing.assert_array_equal(out["out"], np.cos(values(1)["x"]))  # other code: never the sine's entry
    entry = 8 * N + 1024  # one float64 output and the .npz framing
    monkeypatch.setenv(reference_cache.LIMIT_ENV, str(2 * entry))
    custom_reference.evaluate(func, values(3), p, identity)
    assert len(list(reference_cache.cache_folder("references").glob("*/*.npz"))) == 2
    monkeypatch.setenv(reference_cache.LIMIT_ENV, "lots")
    with pytest.raises(ValueError, match="not a byte count"):
        custom_reference.evaluate(func, values(4), p, identity)


def test_small_inputs_are_neither_kept_nor_sent_to_torch():
    source = "def f(inputs, problem):\n    return {'out': inputs['x'] + inputs['y']}\n"
    small = problem(source, n=64)
    seen = []

    def func(inputs, prob):
        seen.append(type(inputs["x"]).__name__)
        return {"out": inputs["x"] + inputs["y"]}
    for _ in range(2):
        custom_reference.evaluate(func, values(1, 64), small, "id", torch, CPU)
    assert seen == ["ndarray", "ndarray"]
    assert not list(reference_cache.cache_folder("references").glob("*/*.npz"))


def test_the_verifier_op_wraps_reference_and_error_scale_of_custom_only():
    source = ("def f(inputs, problem):\n    return {'out': inputs['x'] * inputs['y']}\n"
              "def f_error_scale(inputs, problem):\n    return {'out': abs(inputs['x']) * abs(inputs['y']) + 1}\n")
    p = problem(source)
    op = verifier_op(get_op("custom"), "numpy")
    assert op.name == "custom" and op.reference is not get_op("custom").reference
    vals = values(5)
    np.testing.assert_array_equal(op.reference(vals, p)["out"], vals["x"] * vals["y"])
    np.testing.assert_array_equal(op.error_scale(vals, p)["out"], np.abs(vals["x"]) * np.abs(vals["y"]) + 1)
    bounds = op.bounds(vals, p, op.reference(vals, p))
    assert bounds["out"].shape == (N,)
    without = problem("def f(inputs, problem):\n    return {'out': inputs['x']}\n")
    assert op.error_scale(vals, without) is None
    assert verifier_op(get_op("gemm"), "numpy") is get_op("gemm")


def test_a_function_that_agrees_on_ordinary_values_only_stays_on_the_host():
    # torch's route maps NaN to 0 where numpy keeps it: no ordinary trial shows it
    source = ("def f(inputs, problem):\n    x = inputs['x']\n"
              "    if hasattr(x, 'detach'):\n        return {'out': x.nan_to_num(0.0, posinf=1.0, neginf=-1.0) * 2}\n"
              "    return {'out': x * 2}\n")
    p, func, seen = counting(source)
    identity = custom_reference.function_identity(p, "reference")
    out = custom_reference.evaluate(func, values(1), p, identity, torch, CPU)
    np.testing.assert_array_equal(out["out"], values(1)["x"] * 2)
    assert custom_reference._VERDICTS[identity] == ""  # the host
    kept = next((custom_reference.reference_cache.cache_folder(custom_reference.reference_cache.CACHE_NAME)
                 / "verdicts").glob("*.json")).read_text()
    assert "with specials" in kept


def test_specials_are_written_over_non_integer_arrays_only():
    rng = np.random.default_rng(3)
    drawn = {"x": rng.normal(size=1000), "labels": rng.integers(0, 50, size=1000).astype(np.float64)}
    special = custom_reference.with_specials(drawn)
    assert special["labels"] is drawn["labels"]
    every = custom_reference.SPECIALS_EVERY
    assert np.isnan(special["x"][0]) and special["x"][every] == np.inf and special["x"][2 * every] == -np.inf
    assert np.array_equal(np.delete(special["x"], np.s_[::every]), np.delete(drawn["x"], np.s_[::every]))
    assert not np.isnan(drawn["x"]).any()  # the trial's own values are untouched


@pytest.mark.parametrize("user_dir", [None, "mine"])
def test_cupys_compiled_kernels_are_kept_in_ptxds_cache_unless_the_user_chose(tmp_path, user_dir):
    pytest.importorskip("cupy")
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "CUPY_CACHE_DIR"}
    env["PTXDS_CACHE"] = str(tmp_path / "ptxds")
    if user_dir:
        env["CUPY_CACHE_DIR"] = str(tmp_path / user_dir)
    # a fresh process: CuPy fixes its kernel cache folder when it is first imported
    found = subprocess.run(
        [sys.executable, "-c", "from verify.trials.custom_reference import _cupy_version; _cupy_version(); "
         "import cupy.cuda.compiler as c; print(c._kernel_cache_backend._cache_dir)"],
        env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert found == str(tmp_path / (user_dir or "ptxds/cupy"))
