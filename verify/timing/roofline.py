"""The roofline of the GPU a row ran on, and each timed row's speed-of-light ratio.

Peak memory bandwidth: a table by GPU name, else the device's memory clock and bus width
(two transfers a clock, as every HBM and GDDR part reports it). Peak math rate: dense
multiply-add throughput per SM per clock, per architecture and operand dtype, times the SM
count and the maximum SM clock. Every number is a peak a kernel cannot pass; where the
table lacks an architecture, the highest rate known stands in, so the floor stays a floor.

``judge(work, timing, device)`` gives the row's floor in microseconds, its ``sol_ratio``
(floor / median time: 1 is the speed of light) and whether the time is below the floor by
more than the measurement's noise, which is a failure: such a kernel skipped work.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

# bytes/s by a substring of the device name, checked in order (vendor figures).
BANDWIDTH_BY_NAME = (
    ("H200", 4.8e12), ("H100 NVL", 3.9e12), ("H100 PCIe", 2.0e12), ("H100", 3.35e12), ("GH200", 4.0e12),
    ("A100-SXM4-80GB", 2.039e12), ("A100 80GB PCIe", 1.935e12), ("A100", 1.555e12),
    ("L40S", 0.864e12), ("L4", 0.3e12), ("B200", 8.0e12), ("B100", 8.0e12),
)
# Dense multiply-add flops per SM per clock by operand class (tensor cores where present).
RATE_BY_ARCH = {
    (8, 0): {"fp16": 2048, "tf32": 1024, "int8": 4096, "fp8": 4096, "int4": 8192, "fp64": 128},
    (8, 6): {"fp16": 1024, "tf32": 512, "int8": 2048, "fp8": 2048, "int4": 4096, "fp64": 4},
    (8, 7): {"fp16": 1024, "tf32": 512, "int8": 2048, "fp8": 2048, "int4": 4096, "fp64": 4},
    (8, 9): {"fp16": 1024, "tf32": 512, "int8": 2048, "fp8": 2048, "int4": 4096, "fp64": 4},
    (9, 0): {"fp16": 4096, "tf32": 2048, "int8": 8192, "fp8": 8192, "int4": 8192, "fp64": 256},
    (10, 0): {"fp16": 8192, "tf32": 4096, "int8": 16384, "fp8": 16384, "int4": 32768, "fp64": 256},
}
DTYPE_CLASS = {
    "float16": "fp16", "bfloat16": "fp16", "float32": "tf32", "float64": "fp64",
    "float8_e4m3": "fp8", "float8_e5m2": "fp8", "int8": "int8", "uint8": "int8",
    "int4": "int4", "uint4": "int4", "int16": "int8", "int32": "int8",
}
# A time may fall below the floor by this much plus its own relative spread before it fails:
# the peaks are vendor figures and CUPTI's span can trim a launch's edges.
BASE_TOLERANCE = 0.05


@dataclass(frozen=True)
class Peaks:
    bandwidth: float        # bytes/s
    bandwidth_source: str   # "table" or "clock x bus"
    rates: dict             # operand class -> flops/s
    l2_bytes: int


def peaks(device: dict) -> Optional[Peaks]:
    """The peaks of a GPU from the worker's device info (name, cc, sm_count, max_clock_mhz,
    l2_bytes, memory_clock_khz, memory_bus_bits); None when nothing is known of it."""
    name = str(device.get("name", ""))
    bandwidth, source = 0.0, ""
    for key, value in BANDWIDTH_BY_NAME:
        if key in name:
            bandwidth, source = value, "table"
            break
    if not bandwidth and device.get("memory_clock_khz") and device.get("memory_bus_bits"):
        bandwidth = 2.0 * float(device["memory_clock_khz"]) * 1e3 * float(device["memory_bus_bits"]) / 8.0
        source = "clock x bus"
    cc = tuple(device.get("cc") or ())
    per_clock = RATE_BY_ARCH.get(cc)
    if per_clock is None:
        per_clock = {k: max(table[k] for table in RATE_BY_ARCH.values()) for k in RATE_BY_ARCH[(9, 0)]}
    clock_hz = float(device.get("max_clock_mhz") or 0) * 1e6
    sms = int(device.get("sm_count") or 0)
    rates = {k: v * sms * clock_hz for k, v in per_clock.items()} if clock_hz and sms else {}
    if not bandwidth and not rates:
        return None
    return Peaks(bandwidth, source, rates, int(device.get("l2_bytes") or 0))


@dataclass(frozen=True)
class RooflineVerdict:
    floor_us: float
    sol_ratio: float
    bound: str              # "memory" or "compute"
    too_fast: bool
    note: dict


def judge(work, median_us: float, iqr_us: float, device: dict) -> Optional[RooflineVerdict]:
    """The floor of ``work`` (dataset_spec.work.Work) on ``device`` against a median time."""
    found = peaks(device)
    if found is None or not median_us or median_us <= 0:
        return None
    memory_s = work.dram_bytes(found.l2_bytes) / found.bandwidth if found.bandwidth else 0.0
    compute_s = 0.0
    if work.flops and found.rates:
        classes = [DTYPE_CLASS.get(d) for d in work.math_dtypes]
        rate = max((found.rates[c] for c in classes if c in found.rates), default=max(found.rates.values()))
        compute_s = work.flops / rate
    floor_us = max(memory_s, compute_s) * 1e6
    ratio = floor_us / median_us
    tolerance = BASE_TOLERANCE + (iqr_us or 0.0) / median_us
    note = {"floor_us": floor_us, "dram_bytes": work.dram_bytes(found.l2_bytes), "flops": work.flops,
            "bandwidth": found.bandwidth, "bandwidth_source": found.bandwidth_source,
            "bound": "compute" if compute_s > memory_s else "memory", "tolerance": tolerance}
    return RooflineVerdict(floor_us, ratio, note["bound"], ratio > 1.0 + tolerance, note)
