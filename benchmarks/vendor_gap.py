"""How far each verified GEMM-like group's fastest member is from the vendor library: the
same function through torch (cuBLAS for ``gemm`` and ``batch_matmul``, float16, bfloat16 or
float32 operands alike; cuDNN for ``conv2d_fprop``, channels_last), timed the way
mirage_baseline.py times it (CUDA events around one call, L2 flushed before each sample,
median), next to the group's fastest passing member, with the spread of its members.

Runs on a machine with a GPU and torch.

    PYTHONPATH=. python benchmarks/vendor_gap.py VERIFIED [VERIFIED ...] [--samples 200]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.mirage_baseline import row_time, time_call  # noqa: E402

TORCH_DTYPES = ("float16", "bfloat16", "float32")  # named alike in torch


def conv_call(problem):
    """torch's conv2d (cuDNN) of a conv2d_fprop problem: NHWC activations and KRSC filters
    are torch's NCHW / KCRS tensors in channels_last memory."""
    import torch
    from dataset_spec.ops.conv_nhwc import geometry
    x, w = problem.buffer("x"), problem.buffer("w")
    if x.dtype not in TORCH_DTYPES or w.dtype != x.dtype or problem.params.get("beta", 0.0) != 0.0:
        return None
    dtype = getattr(torch, x.dtype)
    g = geometry(problem)
    X = torch.randn((g.n, g.c, *g.spatial), device="cuda").to(dtype).to(memory_format=torch.channels_last)
    W = torch.randn((g.k, g.c // g.groups, *g.taps), device="cuda").to(dtype).to(memory_format=torch.channels_last)
    return ("torch conv2d (cuDNN, channels_last)",
            lambda: torch.nn.functional.conv2d(X, W, stride=g.stride, padding=g.padding, dilation=g.dilation,
                                               groups=g.groups))


def vendor_call(problem):
    """(label, zero-argument callable) of the problem's function in torch, or None."""
    import torch
    if problem.op == "conv2d_fprop":
        return conv_call(problem)
    buffers = {b.name: b for b in problem.buffers}
    if problem.op not in ("gemm", "batch_matmul") or "A" not in buffers or "B" not in buffers:
        return None
    a, b = buffers["A"], buffers["B"]
    if a.dtype not in TORCH_DTYPES or b.dtype != a.dtype:
        return None
    dtype = getattr(torch, a.dtype)
    A = torch.randn(a.shape, device="cuda").to(dtype)
    B = torch.randn(b.shape, device="cuda").to(dtype)
    if problem.params.get("transpose_b") or problem.params.get("layout_b") == "col":
        B = B.t()
    return "torch.matmul (cuBLAS)", lambda: torch.matmul(A, B)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    from dataset_spec.store.shards import read_records
    groups = defaultdict(list)
    for path in args.datasets:
        for record in read_records(path):
            groups[record.group_id].append(record)
    print("| group | members passed | fastest member | fastest us | slowest us | vendor | vendor us | fastest / vendor |")
    print("|---|---|---|---|---|---|---|---|")
    for group_id, records in sorted(groups.items()):
        timed = [(row_time(vars(r)), r) for r in records if r.status == "passed" and row_time(vars(r))]
        call = vendor_call(records[0].problem)
        if not timed or call is None:
            continue
        timed.sort(key=lambda item: item[0])
        label, fn = call
        vendor_us = statistics.median(time_call(fn, args.samples))
        best_us, best = timed[0]
        how = best.variant.get("intrinsic") or best.variant.get("rule") or best.variant.get("generator", "")
        print(f"| {group_id} | {len(timed)} | {best.name} ({how}) "
              f"| {best_us:.2f} | {timed[-1][0]:.2f} | {label} | {vendor_us:.2f} | {best_us / vendor_us:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
