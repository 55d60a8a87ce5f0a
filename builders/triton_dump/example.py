"""Write a small ``TRITON_KERNEL_DUMP`` tree of built-in suite kernels, the ``TRITON_CACHE_DIR``
tree of the very same compiles, and the problem spec file that maps the dumped kernels: a
dump to try ``ptxds build --source triton-dump`` on, on CPU (no GPU needed to compile).

    python -m builders.triton_dump.example OUT
    ptxds build --source triton-dump --from-dump OUT/dump --problem OUT/problems.json --out DATA

Kernels: a row softmax (a reduction: dynamic shared memory), a persistent softmax with a
pipelined loop, the tutorial GEMM with num_stages > 1 on sm_80 and sm_90a, a 2-CTA cluster
GEMM and a tensor-descriptor GEMM (global scratch) on sm_90a. Each pick has its own
constexprs, so each gets its own dump folder (Triton keys a dump folder by source hash only);
the kernels of one name and signature (one dump group) all solve one problem.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

# (group id, arch, shape set, config items that pick one config of the group)
PICKS = (
    ("triton/softmax/float32/M1823xN781", "sm_80", "default", {"num_warps": 4, "num_stages": 1}),
    ("triton/softmax/float32/M1823xN781", "sm_90a", "default", {"num_warps": 8, "num_stages": 4}),
    ("triton/gemm/float16/M1024xN1024xK1024", "sm_80", "sweep",
     {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "num_warps": 8, "num_stages": 3}),
    ("triton/gemm/float16/M1024xN1024xK1024", "sm_90a", "sweep",
     {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "num_stages": 4}),
    ("triton/gemm/float16/M1024xN1024xK1024", "sm_90a", "sweep",
     {"BLOCK_SIZE_N": 256, "num_ctas": 2}),
    ("triton/gemm/float16/M1024xN1024xK1024", "sm_90a", "sweep",
     {"kernel": "matmul_kernel_descriptor_persistent", "BLOCK_SIZE_N": 128}),
)


def pick_payloads(picks=PICKS) -> list[dict]:
    """The suite payload of each pick (builders.triton's own work items)."""
    from builders.base import BuildOptions
    from builders.triton.builder import TritonBuilder

    payloads = []
    for group_id, arch, shapes, wanted in picks:
        items = TritonBuilder(BuildOptions(archs=[arch], extra={"shapes": shapes})).work_items()
        found = [p for item in items for p in (item.payload.get("members") or [item.payload])
                 if p["group_id"] == group_id and not p.get("not_applicable")
                 and all(p["config"].get(k) == v for k, v in wanted.items())
                 and p["config"].get("kernel") == wanted.get("kernel")]
        if not found:
            raise SystemExit(f"no suite config of {group_id} on {arch} ({shapes}) matches {wanted}")
        payloads.append(found[0])
    return payloads


def spec_entry(payload: dict, folder: str) -> dict:
    """A problem spec entry mapping this pick's dump folder to the suite's own problem."""
    from builders.triton.compile import kernel_arg_names

    by_name = {p["name"]: p for p in payload["params"]}
    args = []
    for name in kernel_arg_names(payload["kernel"]):
        p = by_name.get(name)
        if p is None or p["constexpr"]:
            continue
        args.append(p["buffer"] if p["kind"] == "ptr" else p["value"])
    return {"kernel": payload["kernel"], "problem": payload["problem"], "args": args,
            "grid": payload["grid"], "grid_by_hash": {folder: payload["grid"]}}


def write_example(out: Path, picks=PICKS) -> dict:
    """Compile every pick with dumping on; returns {dump folder: pick payload}."""
    dump, cache = out / "dump", out / "cache"
    os.environ.update(TRITON_KERNEL_DUMP="1", TRITON_DUMP_DIR=str(dump), TRITON_CACHE_DIR=str(cache))
    from builders.triton.compile import compile_kernel

    dump.mkdir(parents=True, exist_ok=True)
    folders = {}
    for payload in pick_payloads(picks):
        before = {p.name for p in dump.iterdir()}
        compile_kernel(payload["kernel"], payload["params"], payload["config"], payload["arch"])
        new = sorted({p.name for p in dump.iterdir()} - before)
        if len(new) != 1:
            raise SystemExit(f"{payload['kernel']} {payload['config']}: expected one new dump folder, got {new}")
        folders[new[0]] = payload
    specs: dict = {}
    for folder, payload in folders.items():
        entry = spec_entry(payload, folder)
        key = (entry["kernel"], entry["problem"]["problem_id"])
        if key in specs:  # one entry per kernel and problem; each folder keeps its own grid
            specs[key]["grid_by_hash"].update(entry["grid_by_hash"])
        else:
            specs[key] = entry
    (out / "problems.json").write_text(json.dumps(list(specs.values()), indent=1))
    (out / "picks.json").write_text(json.dumps(
        {folder: {"kernel": p["kernel"], "arch": p["arch"], "config": p["config"], "group_id": p["group_id"]}
         for folder, p in folders.items()}, indent=1))
    return folders


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m builders.triton_dump.example OUT_DIR", file=sys.stderr)
        return 2
    folders = write_example(Path(argv[0]))
    print(f"{len(folders)} dump folders in {argv[0]}/dump, cache tree in {argv[0]}/cache, "
          f"problem spec {argv[0]}/problems.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
