"""Time a plain torch implementation (fp16, cuBLAS through torch.matmul) of each Mirage
group's formula next to the group's fastest verified row; for attention groups also
``torch.nn.functional.scaled_dot_product_attention``; with ``--baseline`` also how the
ordering of members by time changed against an earlier verified dataset.

Runs on a machine with a GPU and torch; importing this file needs neither.

    PYTHONPATH=. python benchmarks/mirage_baseline.py VERIFIED [--baseline OLD_VERIFIED] [--samples 200]

Per group: inputs drawn from the problem's distributions, CUDA events around one call,
the L2 cache flushed (a write of twice its size) before every sample, median over samples.
Our rows are compared by their event time (``time_us_events_median``, the same method;
the CUPTI kernel time ``time_us_median`` when a row has no event time).
"""
from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict

COLUMNS = ["group_id", "source", "arch", "name", "problem", "variant", "status", "time_us_median",
           "time_us_events_median"]


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
    return formulas.get(op)


def sdpa_formula():
    """softmax(Q @ K) @ V through torch's fused attention (scale 1, as the muGraphs compute).
    Mirage stores K as [B, D, S]; SDPA takes [B, heads, S, D], so K is transposed (a view,
    outside the timed call) and one head axis added."""
    from torch.nn.functional import scaled_dot_product_attention

    def prepare(Q, K, V):
        return Q.unsqueeze(1), K.transpose(-1, -2).unsqueeze(1), V.unsqueeze(1)

    def call(Q, K, V):
        return scaled_dot_product_attention(Q, K, V, scale=1.0)
    return prepare, call


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


def row_time(row):
    return row.get("time_us_events_median") or row.get("time_us_median")


def ranks(values: list) -> list:
    """Ranks 1..n, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: list, b: list) -> float:
    """Spearman rank correlation of two equally long timing lists (nan below 3 pairs)."""
    if len(a) < 3:
        return float("nan")
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    var = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return cov / var if var else float("nan")


def passed_times(members: list, column: str) -> dict:
    """{(name, arch): time} of the verified, timed members."""
    return {(m["name"], m["arch"]): m[column] for m in members if m["status"] == "passed" and m.get(column)}


def ordering_change(new: list, old: list) -> str:
    """How the members' ordering by kernel time moved between two verified datasets."""
    a, b = passed_times(old, "time_us_median"), passed_times(new, "time_us_median")
    common = sorted(set(a) & set(b))
    if not common:
        return "no member timed in both"
    rho = spearman([a[k] for k in common], [b[k] for k in common])
    fastest_old, fastest_new = min(common, key=a.get), min(common, key=b.get)
    ratios = sorted(a[k] / b[k] for k in common)
    rank_old, rank_new = ranks([a[k] for k in common]), ranks([b[k] for k in common])
    moved = max(range(len(common)), key=lambda i: abs(rank_old[i] - rank_new[i]))
    text = (f"rank corr {rho:.2f} over {len(common)} members; old/new kernel time median "
            f"{statistics.median(ratios):.2f}x (range {ratios[0]:.2f}-{ratios[-1]:.2f}); fastest "
            f"{fastest_old[0]} -> {fastest_new[0]}")
    if rank_old[moved] != rank_new[moved]:
        text += (f"; largest move {common[moved][0]} {common[moved][1]} "
                 f"(rank {rank_old[moved]:g} -> {rank_new[moved]:g})")
    return text


def read_groups(dataset: str) -> dict:
    from dataset_spec.store.shards import read_table
    rows = read_table(dataset, "kernels", columns=COLUMNS).to_pylist()
    groups = defaultdict(list)
    for row in rows:
        if row["source"] == "mirage":
            groups[row["group_id"]].append(row)
    return groups


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", help="a verified mirage dataset folder")
    parser.add_argument("--baseline", help="an earlier verified mirage dataset of the same muGraphs: "
                                           "report how the members' ordering by time changed")
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args(argv)

    import torch

    groups = read_groups(args.dataset)
    old_groups = read_groups(args.baseline) if args.baseline else {}
    print(f"GPU: {torch.cuda.get_device_name(0)}")
    print("times: CUDA events, L2 flushed, median; ours = fastest verified member (event time)")
    print(f"{'group':<22}{'operator':<16}{'passed':>8}{'ours us':>9}  {'fastest member':<30}{'torch us':>9}"
          f"{'torch/ours':>11}{'sdpa us':>9}{'sdpa/ours':>10}")
    changes = []
    for group, members in sorted(groups.items()):
        problem = json.loads(members[0]["problem"])
        operator = json.loads(members[0]["variant"] or "{}").get("operator") or problem["op"]
        generator = torch.Generator(device="cuda").manual_seed(0)
        inputs = {b["name"]: draw(b, generator) for b in problem["buffers"] if b["role"] == "in"}
        timed = sorted((row_time(m), m["name"], m["arch"]) for m in members
                       if m["status"] == "passed" and row_time(m))
        ours = timed[0][0] if timed else None
        formula = torch_formula(operator)
        torch_us = statistics.median(time_call(lambda: formula(**inputs), args.samples)) if formula else None
        sdpa_us = None
        if operator == "attention":
            prepare, call = sdpa_formula()
            q, k, v = prepare(inputs["Q"], inputs["K"], inputs["V"])
            sdpa_us = statistics.median(time_call(lambda: call(q, k, v), args.samples))

        def cell(value, width, ratio=False):
            if value is None or ours is None:
                return f"{'-':>{width}}"
            return f"{value / ours:>{width}.2f}" if ratio else f"{value:>{width}.2f}"
        best = f"{timed[0][1]} {timed[0][2]}" if timed else "(no verified timing)"
        passed = f"{sum(m['status'] == 'passed' for m in members)}/{len(members)}"
        print(f"{group:<22}{operator:<16}{passed:>8}{(f'{ours:.2f}' if ours else '-'):>9}  {best:<30}"
              f"{cell(torch_us, 9)}{cell(torch_us, 11, True)}{cell(sdpa_us, 9)}{cell(sdpa_us, 10, True)}")
        if group in old_groups:
            changes.append((group, ordering_change(members, old_groups[group])))
    if changes:
        print("\nordering of members by kernel time (CUPTI), against the baseline dataset:")
        for group, text in changes:
            print(f"  {group:<22}{text}")


if __name__ == "__main__":
    main()
