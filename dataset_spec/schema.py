"""Arrow schemas of the ``kernels`` and ``pairs`` configs, and row <-> record conversion.

Launches are nested structs (not JSON) so a dataset user sees entry, grid, block and every
argument as columns; knobs that differ per source (variant, toolchain, provenance) and the
problem are JSON strings, which every Parquet reader can open.
"""
from __future__ import annotations

import json

import pyarrow as pa

from .model import SCHEMA_VERSION, VERIFIER_COLUMNS, Buffer, KernelRecord, Pair, Problem, Resources, to_plain

DIM3 = pa.list_(pa.int64())
# ``tensormap`` (the encode arguments of a CUtensorMap patch) is JSON text; null for addresses.
PATCH = pa.struct([("offset", pa.int64()), ("buffer", pa.string()), ("addend", pa.int64()),
                   ("kind", pa.string()), ("tensormap", pa.string())])
ARG = pa.struct([
    ("kind", pa.string()), ("buffer", pa.string()), ("dtype", pa.string()),
    ("value", pa.string()), ("blob", pa.binary()), ("patches", pa.list_(PATCH)),
])
LAUNCH = pa.struct([
    ("entry", pa.string()), ("grid", DIM3), ("block", DIM3), ("cluster", DIM3),
    ("dynamic_smem", pa.int64()), ("args", pa.list_(ARG)),
])
RESOURCES = pa.struct([
    ("entry", pa.string()), ("registers", pa.int64()), ("shared_static", pa.int64()),
    ("spill_stores", pa.int64()), ("spill_loads", pa.int64()), ("stack", pa.int64()),
    ("constant", pa.int64()),
])

# Per trial: the errors of that trial alone (max over output buffers and reruns), so a user
# can re-threshold by trial kind or in output ULPs.
TRIAL_ERROR = pa.struct([
    ("trial", pa.int32()), ("kind", pa.string()), ("seed", pa.int64()),
    ("max_abs_err", pa.float64()), ("max_rel_err", pa.float64()), ("max_ulp_err", pa.float64()),
    ("max_err_ratio", pa.float64()), ("n_bad", pa.int64()), ("n_total", pa.int64()),
])
# Where a verified-wrong member differs: the inputs come back from (trial, kind, seed).
WITNESS = pa.struct([
    ("trial", pa.int32()), ("kind", pa.string()), ("seed", pa.int64()), ("output", pa.string()),
    ("flat_index", pa.int64()), ("reference", pa.float64()), ("bound", pa.float64()),
    ("kernel_id", pa.string()), ("value", pa.float64()),
    ("consensus_kernel_id", pa.string()), ("consensus_value", pa.float64()), ("reason", pa.string()),
])

# One check's outcome (verify/judge/findings.py): status None for a note that changes no status.
FINDING = pa.struct([("check", pa.string()), ("status", pa.string()), ("message", pa.string())])

KERNELS_SCHEMA = pa.schema([
    ("schema_version", pa.int32()),
    ("kernel_id", pa.string()), ("build_key", pa.string()), ("group_id", pa.string()),
    ("source", pa.string()), ("name", pa.string()), ("arch", pa.string()),
    ("op", pa.string()), ("problem_id", pa.string()),
    ("variant", pa.string()), ("problem", pa.string()),
    ("ptx", pa.large_string()), ("ptx_hash", pa.string()),
    ("launches", pa.list_(LAUNCH)), ("scratch", pa.string()),
    ("resources", pa.list_(RESOURCES)), ("features", pa.list_(pa.string())),
    ("toolchain", pa.string()), ("provenance", pa.string()),
    ("status", pa.string()), ("status_message", pa.string()), ("sass", pa.large_string()),
    ("max_abs_err", pa.float64()), ("max_rel_err", pa.float64()),
    ("atol", pa.float64()), ("rtol", pa.float64()), ("trials", pa.int32()),
    ("deterministic", pa.bool_()),
    ("max_err_ratio", pa.float64()), ("catches_rel_err", pa.float64()),
    ("output_hash", pa.string()), ("max_disagreement", pa.float64()), ("sanitizer", pa.string()),
    ("time_us_median", pa.float64()), ("time_us_iqr", pa.float64()),
    ("time_us_min", pa.float64()), ("time_samples", pa.int32()),
    ("time_method", pa.string()), ("time_us_events_median", pa.float64()),
    ("time_us_events_iqr", pa.float64()),
    ("roofline_us", pa.float64()), ("sol_ratio", pa.float64()),
    ("gpu_name", pa.string()), ("sm_clock_mhz", pa.int32()), ("driver_version", pa.string()),
    ("trial_errors", pa.list_(TRIAL_ERROR)), ("witness", WITNESS), ("findings", pa.list_(FINDING)),
], metadata={"ptxds.schema_version": str(SCHEMA_VERSION), "ptxds.config": "kernels"})

PAIRS_SCHEMA = pa.schema([
    ("schema_version", pa.int32()),
    ("kernel_a", pa.string()), ("kernel_b", pa.string()),
    ("group_a", pa.string()), ("group_b", pa.string()),
    ("equivalent", pa.bool_()), ("label_source", pa.string()), ("mutation", pa.string()),
    ("witness", WITNESS),
], metadata={"ptxds.schema_version": str(SCHEMA_VERSION), "ptxds.config": "pairs"})

# ``*_by_shape``: the same rows, split by held-out size (dataset_spec/store/splits.py).
SCHEMAS = {"kernels": KERNELS_SCHEMA, "pairs": PAIRS_SCHEMA,
           "kernels_by_shape": KERNELS_SCHEMA, "pairs_by_shape": PAIRS_SCHEMA}

_JSON_COLUMNS = ("variant", "toolchain", "provenance")


def record_to_row(record: KernelRecord) -> dict:
    plain = to_plain(record)
    row = {name: plain[name] for name in (
        "kernel_id", "build_key", "group_id", "source", "name", "arch", "ptx", "ptx_hash",
        "features", "status", "status_message", "sass") + VERIFIER_COLUMNS}
    row["schema_version"] = SCHEMA_VERSION
    row["op"] = record.problem.op
    row["problem_id"] = record.problem.problem_id
    row["problem"] = record.problem.to_json()
    for name in _JSON_COLUMNS:
        row[name] = json.dumps(plain[name], sort_keys=True)
    row["scratch"] = json.dumps(plain["scratch"], sort_keys=True)
    row["resources"] = plain["resources"]
    row["launches"] = [
        {**launch, "args": [{**arg, "blob": raw.blob, "patches": [_patch_row(p) for p in arg["patches"]]}
                            for arg, raw in zip(launch["args"], source.args)]}
        for launch, source in zip(plain["launches"], record.launches)
    ]
    return row


def _patch_row(patch: dict) -> dict:
    tensormap = patch.get("tensormap")
    return {**patch, "tensormap": None if tensormap is None else json.dumps(tensormap, sort_keys=True)}


def row_to_record(row: dict) -> KernelRecord:
    fields = {name: row.get(name) for name in (
        "kernel_id", "build_key", "group_id", "source", "name", "arch", "ptx", "ptx_hash",
        "status", "status_message") + VERIFIER_COLUMNS}
    fields["sass"] = row.get("sass") or ""
    fields["status_message"] = fields["status_message"] or ""
    fields["features"] = list(row.get("features") or [])
    for name in _JSON_COLUMNS:
        fields[name] = json.loads(row[name]) if row.get(name) else {}
    fields["problem"] = Problem.from_json(row["problem"])
    fields["scratch"] = [Buffer(**b) for b in json.loads(row.get("scratch") or "[]")]
    fields["resources"] = [Resources(**r) for r in (row.get("resources") or [])]
    launches = []
    for launch in row.get("launches") or []:
        args = [{k: v for k, v in arg.items() if v is not None or k == "patches"}
                for arg in launch["args"]]
        for arg in args:
            arg["patches"] = arg.get("patches") or []
        launches.append({**launch, "args": args})
    fields["launches"] = launches
    return KernelRecord(**fields)


def pair_to_row(pair: Pair) -> dict:
    return {"schema_version": SCHEMA_VERSION, **to_plain(pair)}


def rows_to_table(rows: list, config: str) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMAS[config])
