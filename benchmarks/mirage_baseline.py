"""Time a plain torch implementation (fp16, cuBLAS through torch.matmul) of each Mirage
group's formula, to compare with the verified rows' ``time_us_median``.

Runs on a machine with a GPU and torch; importing this file needs neither.

    PYTHONPATH=. python benchmarks/mirage_baseline.py data/mirage-verified [--samples 200]

Per group: inputs drawn from the problem's distributions, CUDA events around one call,
the L2 cache flushed (a write of twice its size) before every sample, median over samples.
"""
from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict


def torch_formula(op: str):
    """The group's formula in torch, on fp16 tensors (keyword arguments by buffer name)."""
    import torch

    def rms_norm(x):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True)).to(x.dtype)

    formulas = {
        "attention": lambda Q, K, V: (lambda e: (e / e.sum(-1, keepdim=True)) @ V)(torch.exp(Q @ K)),
        "rmsnorm_matmul": lambda X, W: rms_norm(X) @ W,
        "gated_mlp": lambda X, W1, W2: torch.nn.functional.silu(X @ W1) * (X @ W2),
        "lora": lambda X, W, A, B: X @ W + (X @ A) @ B,
        "ntrans": lambda H, X, alpha: rms_norm(X + alpha * (rms_norm(H) + X)),
    }
    return formulas[op]


def draw(buffer, generator):
    import torch
    shape, params = tuple(buffer["shape"]), (buffer.get("init") or {}).get("params", {})
    kind = (buffer.get("init") or {}).get("kind", "normal")
    if kind == "uniform":
        low, high = float(params.get("low", -1)), float(params.get("high", 1))
        x = torch.rand(shape, generator=generator, device="cuda") * (high - low) + low
    else:
        x = torch.randn(shape, generator=generator, device="cuda") * float(params.get("std", 1)) \
            + float(params.get("mean", 0))
    return x.half()


def time_call(fn, samples: int, warmup: int = 10) -> list:
    import torch
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(max(2 * l2, 1 << 20), dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(samples):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return times


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", help="a built (ideally verified) mirage dataset folder")
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args(argv)

    import torch
    from dataset_spec.shards import read_table

    rows = read_table(args.dataset, "kernels", columns=["group_id", "source", "arch", "name", "problem",
                                                        "status", "time_us_median"]).to_pylist()
    groups = defaultdict(list)
    for row in rows:
        if row["source"] == "mirage":
            groups[row["group_id"]].append(row)
    print(f"GPU: {torch.cuda.get_device_name(0)}")
    print(f"{'group':<22}{'op':<16}{'torch us':>10}{'best row us':>13}  {'best row':<28}{'torch/best':>11}")
    for group, members in sorted(groups.items()):
        problem = json.loads(members[0]["problem"])
        generator = torch.Generator(device="cuda").manual_seed(0)
        inputs = {b["name"]: draw(b, generator) for b in problem["buffers"] if b["role"] == "in"}
        formula = torch_formula(problem["op"])
        median = statistics.median(time_call(lambda: formula(**inputs), args.samples))
        timed = sorted((m["time_us_median"], m["name"], m["arch"]) for m in members
                       if m["status"] == "passed" and m["time_us_median"])
        best = f"{timed[0][0]:>13.2f}  {timed[0][1] + ' ' + timed[0][2]:<28}{median / timed[0][0]:>11.2f}" \
            if timed else f"{'-':>13}  {'(no verified timing)':<28}{'-':>11}"
        print(f"{group:<22}{problem['op']:<16}{median:>10.2f}{best}")


if __name__ == "__main__":
    main()
