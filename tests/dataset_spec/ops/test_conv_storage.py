"""Conv problems whose buffers are not plain channels-last real arrays
(dataset_spec/ops/conv_layouts.py): CUTLASS's interleaved NCxHWx / CxRSKx storage against
its index maps, complex<float> convs against the real ones, packed int4/uint4 conv
buffers; the judge passes a correct output and catches a 1% (or one-step) error in each."""
import itertools
import math

import numpy as np
import pytest

from dataset_spec.model import Problem, SpecError
from dataset_spec.ops import get_op
from dataset_spec.ops.conv_layouts import (filter_channel_slots, from_interleaved, interleaved_shape,
                                           logical_shape, to_interleaved)
from dataset_spec.ops.conv_nhwc import conv_buffers, conv_reduction_length, conv_shapes
from dataset_spec.ops.unsigned_sums import operand_density, sparse_unsigned_init, stored_moments
from verify.runner import prepare_problem
from helpers import judge


def ncxhwx_offset(n, h, w, c, H, W, C, step):
    """cutlass::layout::TensorNCxHWx<step>::operator() with packed() strides."""
    return c % step + step * w + step * W * h + step * W * H * (c // step) + H * W * C * n


def cxrskx_offset(k, r, s, c, K, R, S, step):
    """cutlass::layout::TensorCxRSKx<step>::operator() with packed() strides."""
    return c % step + step * k + step * K * s + step * K * S * r + step * K * S * R * (c // step)


def reorder_convk(src: np.ndarray, gemm_k: int, gemm_n: int, step: int) -> np.ndarray:
    """cutlass::reorder_convK<step>(dest, src, implicit_gemm_problem_size) on a flat
    TensorCxRSKx<step> filter, transliterated: both seen as RowMajorInterleaved<step> with
    ldm = TensorCxRSKx's stride(0) = step K, then reorder_column<step> over (k, n) of the
    implicit GEMM (k < C R S, n < K) (cutlass/util/host_reorder.h, cutlass/layout/matrix.h)."""
    ldm = step * gemm_n

    def row_major_interleaved(row, column):
        return (row // step) * ldm + column * step + row % step
    instruction_shape_col = 8
    elements_per_thread = instruction_shape_col // 4
    reordered_elements_per_thread = step // 4
    dest = np.full_like(src, -1)
    for n in range(gemm_n):
        column = ((n // step) * step
                  + ((n % reordered_elements_per_thread) // elements_per_thread) * instruction_shape_col
                  + ((n % step) // reordered_elements_per_thread) * elements_per_thread
                  + (n % elements_per_thread))
        for k in range(gemm_k):
            dest[row_major_interleaved(k, column)] = src[row_major_interleaved(k, n)]
    return dest


@pytest.mark.parametrize("layout,step", [("nc32hw32", 32), ("nc64hw64", 64)])
def test_interleaved_storage_follows_cutlass_index_maps(layout, step):
    N, H, W, C, K, R, S = 2, 3, 5, 2 * step, 2 * step, 2, 3
    act = np.arange(N * H * W * C).reshape(N, H, W, C)
    flat = to_interleaved(act, layout, is_filter=False).reshape(-1)
    assert interleaved_shape(act.shape, layout, False) == (N, C // step, H, W, step)
    for n, h, w, c in itertools.product(range(N), range(H), range(W), range(0, C, 7)):
        assert flat[ncxhwx_offset(n, h, w, c, H, W, C, step)] == act[n, h, w, c]
    # filters: TensorCxRSKx<step> as CUTLASS's interleaved tests fill it, then reorder_convK<step>
    filt = np.arange(K * R * S * C).reshape(K, R, S, C)
    plain = np.empty(filt.size, dtype=filt.dtype)
    for k, r, s, c in itertools.product(range(K), range(R), range(S), range(C)):
        plain[cxrskx_offset(k, r, s, c, K, R, S, step)] = filt[k, r, s, c]
    want = reorder_convk(plain, C * R * S, K, step)
    assert (want >= 0).all()
    flat = to_interleaved(filt, layout, is_filter=True).reshape(-1)
    assert interleaved_shape(filt.shape, layout, True) == (C // step, R, S, K, step)
    np.testing.assert_array_equal(flat, want)
    assert (flat != plain).any()
    for array, is_filter in ((act, False), (filt, True)):
        stored = to_interleaved(array, layout, is_filter)
        assert logical_shape(stored.shape, layout, is_filter) == array.shape
        np.testing.assert_array_equal(from_interleaved(stored, layout, is_filter), array)


def test_interleaved_filter_slots_permute_each_block_of_k():
    slots = filter_channel_slots(64, 32)
    # one block of 32: thread quads own columns 2t, 2t+1 of each 8-wide MMA tile
    assert slots[:10].tolist() == [0, 1, 8, 9, 16, 17, 24, 25, 2, 3]
    assert sorted(slots[:32]) == list(range(32)) and sorted(slots[32:]) == list(range(32, 64))
    assert sorted(filter_channel_slots(128, 64)) == list(range(128))


def test_interleaved_channels_must_fill_whole_blocks():
    with pytest.raises(SpecError, match="multiples of 32"):
        interleaved_shape((2, 4, 4, 48), "nc32hw32", False)
    with pytest.raises(SpecError, match="filter counts K that are multiples of 64"):
        interleaved_shape((96, 3, 3, 64), "nc64hw64", True)
    with pytest.raises(SpecError, match="conv layout 'nchw' is unknown"):
        interleaved_shape((2, 4, 4, 48), "nchw", False)


def make(kind="fprop", dtype="float32", out=None, layout="nhwc", complex_parts=False, c=64, k=64, spatial=(5, 6),
         stride=1, pad=1, **params):
    shapes = conv_shapes(2, spatial, c, k, (3, 3), (stride,) * 2, (pad,) * 2, (1, 1), 1)
    buffers = conv_buffers(kind, shapes, dtype, dtype, out or dtype, "", layout=layout, complex_parts=complex_parts)
    extra = {"layout": layout} if layout != "nhwc" else {}
    if complex_parts:
        extra["complex"] = {"planar": False}
    return Problem(f"conv2d_{kind}", f"conv2d_{kind}", buffers,
                   params={"stride": [stride] * 2, "padding": [pad] * 2, "dilation": [1, 1], "groups": 1,
                           "accumulator": "float32" if dtype.startswith("float") else "int32", **extra, **params})


def test_interleaved_reference_is_the_channels_last_conv_in_cutlass_storage():
    plain, interleaved = make(), make(layout="nc32hw32")
    assert interleaved.buffer("w").shape == (2, 3, 3, 64, 32) and interleaved.buffer("y").shape == (2, 2, 5, 6, 32)
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal(plain.buffer("x").shape), rng.standard_normal(plain.buffer("w").shape)
    want = get_op("conv2d_fprop").reference({"x": x, "w": w}, plain)["y"]
    got = get_op("conv2d_fprop").reference({"x": to_interleaved(x, "nc32hw32", False),
                                             "w": to_interleaved(w, "nc32hw32", True)}, interleaved)["y"]
    np.testing.assert_allclose(from_interleaved(got, "nc32hw32", False), want, rtol=1e-13)
    assert conv_reduction_length(interleaved) == conv_reduction_length(plain) == 64 * 9


@pytest.mark.parametrize("kind", ["fprop", "dgrad", "wgrad"])
def test_complex_reference_is_four_real_convs(kind):
    real, cplx = make(kind, c=8, k=8), make(kind, c=8, k=8, complex_parts=True, alpha=1.5, beta=0.0)
    op = get_op(f"conv2d_{kind}")
    rng = np.random.default_rng(11)
    names = [b.name for b in real.buffers if b.role == "in"]
    parts = {n: rng.standard_normal(cplx.buffer(n).shape) for n in names}
    re = {n: v[..., 0] for n, v in parts.items()}
    im = {n: v[..., 1] for n, v in parts.items()}
    (out,) = op.reference(parts, cplx)
    got = op.reference(parts, cplx)[out]
    first, second = names

    def conv(a, b):
        return op.reference({first: a, second: b}, real)[out]
    np.testing.assert_allclose(got[..., 0], 1.5 * (conv(re[first], re[second]) - conv(im[first], im[second])),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[..., 1], 1.5 * (conv(re[first], im[second]) + conv(im[first], re[second])),
                               rtol=1e-12, atol=1e-12)
    assert conv_reduction_length(cplx) == 2 * conv_reduction_length(real)


def float32_kernel(problem):
    """A correct complex kernel at its best: float32 parts in, the exact conv rounded once."""
    op = get_op(problem.op)

    def kernel(values, ref):
        stored = {k: np.asarray(v, dtype=np.float32).astype(np.float64) for k, v in values.items()}
        with np.errstate(all="ignore"):
            (out,) = op.reference(stored, problem).values()
        return np.asarray(out, dtype=np.float32).astype(np.float64)
    return kernel


def plant(scale=1.01, step=0.0):
    """The reference with its largest element off by ``scale`` (and ``step``)."""
    def kernel(values, ref):
        out = np.array(ref, dtype=np.float64)
        flat = out.reshape(-1)
        i = int(np.argmax(np.abs(flat)))
        flat[i] = flat[i] * scale + step
        return out
    return kernel


@pytest.mark.parametrize("kind", ["fprop", "dgrad", "wgrad"])
def test_complex_conv_passes_rounded_output_and_catches_one_percent(kind):
    problem = make(kind, c=8, k=8, complex_parts=True)
    verdict, _ = judge(problem, float32_kernel(problem))
    assert verdict.status == "passed", verdict.message
    verdict, prepared = judge(problem, lambda values, ref: ref * 1.01)
    assert verdict.status == "wrong_result", f"complex {kind}: a 1% error passed"
    verdict, _ = judge(problem, plant())
    assert verdict.status == "wrong_result", f"complex {kind}: a 1% error in one part passed"


INTEGER_CASES = [  # operand dtype, output dtype, layout
    ("int4", "int32", "nhwc"), ("uint4", "int32", "nhwc"), ("int4", "int4", "nhwc"),
    ("int8", "int8", "nc32hw32"), ("uint8", "uint8", "nc32hw32"), ("int4", "int4", "nc64hw64"),
    ("uint4", "uint4", "nc64hw64"),
]
TOPS = {"uint4": 15, "uint8": 255}


def sparse_unsigned(problem, dtype, out):
    """An unsigned conv of unsigned operands as the builder states it: sparse operands
    (params.operand_density) and the power-of-two alpha that puts the mean sum mid-range."""
    density = operand_density(conv_reduction_length(problem))
    init = sparse_unsigned_init(density, TOPS[dtype])
    mean = stored_moments(init, TOPS[dtype])[0]
    alpha = 2.0 ** -round(math.log2(conv_reduction_length(problem) * mean * mean / (TOPS[out] / 2)))
    for b in problem.buffers[:2]:
        b.init = init
    problem.params.update(operand_density=density, alpha=alpha)
    return problem


@pytest.mark.parametrize("dtype,out,layout", INTEGER_CASES)
def test_integer_convs_are_exact_and_one_step_or_one_percent_is_caught(dtype, out, layout):
    """s32 accumulation is exact and the epilogue rounds once (round to nearest even, then
    saturate): the exact reference passes; a 1% error (wide outputs) or one step (narrow,
    saturated ones) in one element is caught."""
    problem = make(dtype=dtype, out=out, layout=layout, alpha=1.0, beta=0.0, spatial=(6, 6))
    if dtype in TOPS and out == dtype:
        sparse_unsigned(problem, dtype, out)
    verdict, prepared = judge(problem, lambda values, ref: ref)
    assert verdict.status == "passed", verdict.message
    if out == "int32":
        verdict, _ = judge(problem, plant(1.01))
    else:
        verdict, _ = judge(problem, lambda values, ref: np.where(np.arange(ref.size).reshape(ref.shape) == 7,
                                                                  np.where(ref > 0, ref - 1, ref + 1), ref))
    assert verdict.status == "wrong_result", f"{dtype} -> {out} ({layout}): a planted error passed"


@pytest.mark.parametrize("dtype", sorted(TOPS))
def test_unsigned_saturating_convs_draw_sparse_operands_whose_outputs_spread(dtype):
    """Uniform unsigned operands make every output of a long sum nearly equal (a refused,
    near-constant reference at any alpha); sparse ones spread the outputs over the range,
    at the default size and at the ViT patch embedding's 16 x 16 x 64 = 16384 terms."""
    for spatial, taps, stride, pad, c in (((14, 14), (3, 3), 1, 1, 64), ((32, 32), (16, 16), 16, 0, 64)):
        shapes = conv_shapes(2, spatial, c, 64, taps, (stride,) * 2, (pad,) * 2, (1, 1), 1)
        problem = Problem("u", "conv2d_fprop", conv_buffers("fprop", shapes, dtype, dtype, dtype, ""),
                          params={"stride": [stride] * 2, "padding": [pad] * 2, "dilation": [1, 1], "groups": 1,
                                  "accumulator": "int32"})
        sparse_unsigned(problem, dtype, dtype)
        assert get_op("conv2d_fprop").integer_range(problem, problem.buffer("x")) is None
        prepared = prepare_problem(problem, "g", None)
        assert prepared.refusal == ""
        for trial, ref in zip(prepared.trials, prepared.references):
            x = trial.values["x"]
            assert 0.01 < np.mean(x > 0) < 0.5 and x.max() > TOPS[dtype] / 2
            y = np.asarray(ref["y"]).reshape(-1)
            assert y.std() > TOPS[dtype] / 10 and np.mean(y == TOPS[dtype]) < 0.5, (spatial, y.mean(), y.std())
