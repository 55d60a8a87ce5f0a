"""The dataset card: README.md whose YAML metadata (``huggingface_hub.DatasetCardData``:
licence, size category, and per config the ``configs`` data files that
``datasets.load_dataset`` reads, features and split sizes) heads a size table, provenance
and licences, how to load, and (after ``ptxds verify``) the verification method and a
results table."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq

from ..errors import PtxdsError
from .group_stats import group_stats
from ..labels import kill_rates, mutant_class, race_hazards
from ..model import BUILD_STATUSES, SCHEMA_VERSION, VERIFY_STATUSES
from ..ops import OPS
from ..schema import SCHEMAS
from .shards import SPLITS, part_files, read_split_table, read_table, shards_fingerprint, splits_present
from .splits import crossing_hashes, moved_by_hash

# Every card ptxds writes says so in its first paragraph; a README.md without it is the
# user's own file, which a write into that folder must not replace.
CARD_SIGNATURE = "built by ptxds"


class ForeignReadmeError(PtxdsError, ValueError):
    """The folder's README.md was not written by ptxds, so its card would replace it."""


def foreign_readme(root) -> str:
    """Why writing a card into ``root`` would replace a README.md ptxds did not write ('' when
    there is none, or it is a ptxds card)."""
    path = Path(root) / "README.md"
    try:
        text = path.read_text(errors="replace")
    except (FileNotFoundError, NotADirectoryError):  # no README.md (or no folder) yet
        return ""
    except IsADirectoryError:
        text = ""
    if text.startswith("---") and CARD_SIGNATURE in text:
        return ""
    return (f"{path} was not written by ptxds, and a dataset folder's README.md is its card; "
            "give a new or empty folder (or move that README.md away)")


def check_card_replaceable(root) -> None:
    """Raise ``ForeignReadmeError`` when a card would replace the user's own README.md."""
    reason = foreign_readme(root)
    if reason:
        raise ForeignReadmeError(reason)


# What every column of the ``kernels`` config holds (the card's column dictionary).
COLUMNS = {
    "schema_version": "the row's schema version (the card says which columns older versions lack)",
    "kernel_id": "hash of the normalised PTX, the launches, the problem and the arch; `unbuilt-...` for a row "
                 "that did not build",
    "build_key": "hash of source, group, variant, arch and name: what a resumed build skips",
    "group_id": "the equivalence group: one function at one size; every member solves the same problem",
    "source": "the builder that made the row (triton, cutlass, tvm, ptx, ...)",
    "name": "the source's own name of the kernel",
    "arch": "the target the PTX was compiled and assembled for (sm_80, sm_90a, ...)",
    "op": "the reference op of the problem (gemm, softmax, ...)",
    "problem_id": "the problem's id",
    "variant": "JSON: the knobs that make this member (tiles, stages, warps, schedule, ...)",
    "problem": "JSON: buffers (name, dtype, shape, role, input distribution), scalars, op parameters, tolerance",
    "ptx": "the normalised PTX text",
    "ptx_hash": "hash of the normalised PTX (no PTX hash is in two splits)",
    "launches": "the launch sequence: entry, grid, block, cluster, dynamic shared memory, and each argument "
                "(buffer, scalar, null pointer, or a by-value blob with pointer patch offsets)",
    "scratch": "JSON: scratch buffers the member needs beyond the problem's",
    "resources": "per entry, from ptxas: registers, static shared memory, spills, stack, constant bytes",
    "features": "instruction features the PTX uses (mma.sync, wgmma, cp.async, TMA, ldmatrix, mbarrier, ...)",
    "toolchain": "JSON: compiler and tool versions",
    "provenance": "JSON: generator, command, seeds, upstream version, licence; after verify, its settings",
    "status": "built, build_failed, no_problem or not_applicable after a build; after ptxds verify one of "
              + ", ".join(VERIFY_STATUSES) + " (only `passed` rows are equivalent members)",
    "status_message": "why a row is not `built`/`passed` (the compiler's or the verifier's message)",
    "sass": "the SASS text (builds with --sass only)",
    "max_abs_err": "verify: largest absolute error against the float64 reference over all trials",
    "max_rel_err": "verify: largest relative error over all trials",
    "atol": "verify: the absolute floor of the error bound",
    "rtol": "verify: the relative part of the error bound",
    "trials": "verify: how many trials ran",
    "deterministic": "verify: whether a rerun gave the same bits",
    "max_err_ratio": "verify: largest |error| / bound (a passing row is at most 1)",
    "catches_rel_err": "verify: the smallest uniform relative error the bound catches for this group",
    "output_hash": "verify: hash of the outputs of the first trial; equal hashes are bit-identical members",
    "max_disagreement": "verify: largest difference from the group's consensus member",
    "sanitizer": "verify: JSON of compute-sanitizer findings (racecheck of every passing member using shared memory; memcheck with --sanitize or for tails)",
    "time_us_median": "verify: median kernel time in microseconds (see time_method)",
    "time_us_iqr": "verify: interquartile range of the time samples, microseconds",
    "time_us_min": "verify: fastest sample, microseconds",
    "time_samples": "verify: number of timed samples",
    "roofline_us": "verify: the least time the problem's work can take on this GPU (bytes at peak bandwidth, "
                   "flops at peak rate)",
    "sol_ratio": "verify: roofline_us / time_us_median, the speed-of-light fraction (1 = the roofline; a time "
                 "below the roofline by more than its noise fails as faster_than_roofline)",
    "time_method": "verify: cupti (the GPU's own kernel durations) or events (CUDA events)",
    "time_us_events_median": "verify: median time from CUDA events around the launch sequence",
    "time_us_events_iqr": "verify: interquartile range of the CUDA-event times",
    "gpu_name": "verify: the GPU that ran the row",
    "sm_clock_mhz": "verify: the SM clock during timing",
    "driver_version": "verify: the CUDA driver version",
    "trial_errors": "verify: per trial its kind, seed and errors (abs, rel, output ulps, |err|/bound, "
                    "bad and total elements); null before verify",
    "witness": "verify: for a wrong result, the trial and element where it differs, with the reference, "
               "the member's value and the consensus member's value",
    "findings": "verify: every check's outcome in the order the checks ran (check, status or null for a note, "
                "message); `status` and `status_message` are derived from them, and a status that lost stays here",
}


def _columns_section() -> list:
    return ["## Columns", "", "The `kernels` config (the `pairs` config has `kernel_a`, `kernel_b`, `group_a`, "
            "`group_b`, `equivalent`, `label_source`, `mutation` and `witness`). Columns marked *verify* are "
            "null until `ptxds verify` runs.", "",
            _table(["column", "meaning"], [[f"`{name}`", text.replace("|", "\\|")] for name, text in COLUMNS.items()]),
            ""]


VERIFY_METHOD = """\
Every group was run on a GPU by `ptxds verify`. Per trial the verifier draws the inputs
with a recorded seed from one of five kinds by default (`provenance.verify.trial_kinds`):
normal, non-integer uniform, *wide* (random sign, magnitudes log-uniform over the op's whole
safe domain), *edge* (zeros, -0.0, the largest safe magnitude, subnormals, values beside
rounding boundaries, mixed into normal data) and *stress* (each op's inputs where its
classic bugs live: all-negative or masked softmax rows, norm rows below eps, full-range
integers, K tails). It computes a float64 reference from the
stored inputs, poisons every output and scratch buffer, surrounds every buffer with guard
regions, runs each member's launch sequence in an isolated worker process, and checks:
no write outside a buffer (`out_of_bounds_write`, naming buffer and offset), inputs
unchanged, every element written, a rerun gives the same bits (else
`deterministic=false`), and each element's error within its bound

    |out_i - ref_i| <= u_out |ref_i| + (2 u_in + 2 sqrt(n) u_acc) S_i + floors

where u are unit roundoffs (output dtype, operand rounding such as tf32, accumulator), n
the reduction length and S_i a float64 magnitude scale of the terms behind element i
(`|A| @ |B|` for a GEMM, `|x| + |y|` for an add), so cancellation never fails a correct
kernel and a 1% error never passes (`max_err_ratio` is the largest |err| / bound;
`catches_rel_err` the smallest uniform relative error the bound catches on that group).
Passing members are then clustered by agreement with each other (one ulp of rounding
allowed); the cluster whose representative is nearest the float64 reference is the
consensus, and members outside it get `disagrees` (`max_disagreement`). A group whose rows
carry different problems is not run (`problem_mismatch`).
`output_hash` identifies bit-identical members. Crashes, traps, JIT failures and hangs
affect only their row. A second run puts every buffer on fresh pages (a kernel that keeps an
address from an earlier launch is `stale_binding`), a third runs while another kernel holds
half the SMs (one that needs all its blocks resident without a cooperative launch is
`residency_deadlock`). Timing is checked like a label: from the module's load-time state,
on the ordinary trials' inputs alternating between samples, outputs refilled and module
state restored before every sample, every sample's outputs compared with the checked run
(`timing_mismatch` otherwise, with no time); only `passed` and `unexercised` rows keep a
time. `roofline_us` is the least time the problem's bytes and flops take on that GPU and
`sol_ratio` = roofline_us / time_us_median; a time below the roofline is
`faster_than_roofline`. Passing rows are timed with the L2 cache flushed between samples
(a buffer of twice its size written, then read back, so the kernel pays no write-back),
until the relative standard error of the median is at most 0.25% or the time budget
ends: `time_us_median` is the kernels' own GPU duration from CUPTI activity records
(summed over the member's launches) when `time_method` is `cupti`, else from CUDA events
around the launch sequence; `time_us_events_median` keeps the event-based time. Details:
docs/verification.md in the ptxds repository.
"""


SANITIZER_POLICY = """\
Every passing member that uses shared memory runs once under compute-sanitizer racecheck
(on its problem's first trial; one sanitizer process serves a run's members), unless
`ptxds verify --no-racecheck` was given or compute-sanitizer was not installed
(`provenance.verify.racecheck` says which); hazards the group's other members lack make
a member `race_detected`. racecheck sees shared memory only: races through global memory
are sought through reruns and scheduling perturbations of every trial and through the
agreement between members. With `ptxds verify --sanitize`, every member also runs under
memcheck (each buffer its own exactly sized allocation, separated from the others by freed
memory, so a read past an end is reported); its findings set the status
(`out_of_bounds_write`, `out_of_bounds_read`, `crashed`) and are kept in the `sanitizer`
column."""


def _sanitizer_line(rows: list) -> str:
    """Which rows ran under compute-sanitizer, from the ``sanitizer`` column."""
    ran = raced = memchecked = 0
    for row in rows:
        if not row.get("sanitizer"):
            continue
        try:
            findings = json.loads(row["sanitizer"])
        except ValueError:
            continue
        ran += 1
        race = findings.get("racecheck") or {}
        raced += race.get("errors") is not None and not race.get("skipped")
        memchecked += (findings.get("memcheck") or {}).get("errors") is not None
    if not ran:
        return "In this dataset no row ran under compute-sanitizer."
    return (f"In this dataset {ran} row(s) ran under compute-sanitizer: {raced} under racecheck (the others use "
            f"no shared memory, or the tool failed; see `sanitizer`), {memchecked} under memcheck.")


# The configs in the card, the default first; ``*_by_shape`` hold the same rows split by
# held-out size (dataset_spec/store/splits.py).
CONFIGS = ("kernels", "pairs", "kernels_by_shape", "pairs_by_shape")
DEFAULT_CONFIG = "kernels"
TAGS = ["ptx", "cuda", "compilers", "code"]
# The rows come from generators under different licences (the card's "Provenance and
# licences" table, per source), so no one licence id describes the dataset: the Hub's
# ``other`` with a name and a link to that table.
LICENSE_NAME = "per-source-generator-licences"
LICENSE_LINK = "README.md#provenance-and-licences"
# The Hub's size buckets (datasets/utils/resources/size_categories.json), by upper bound.
SIZE_CATEGORIES = ((10**3, "n<1K"), (10**4, "1K<n<10K"), (10**5, "10K<n<100K"), (10**6, "100K<n<1M"),
                   (10**7, "1M<n<10M"), (10**8, "10M<n<100M"), (10**9, "100M<n<1B"),
                   (10**10, "1B<n<10B"), (10**11, "10B<n<100B"), (10**12, "100B<n<1T"))


def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` bucket of a row count."""
    return next((name for bound, name in SIZE_CATEGORIES if rows < bound), "n>1T")


def config_features_schema(files: list, config: str):
    """The Arrow schema the card states for a config: the part files' own when they all
    agree (a dataset written by an older ptxds keeps its older columns until a rewrite, and
    ``load_dataset`` casts every file to the card's features, so the card must describe the
    files, not the current schema), else the current schema of dataset_spec/schema.py."""
    schemas = [pq.read_schema(path).remove_metadata() for path in files]
    if schemas and all(s.equals(schemas[0]) for s in schemas[1:]):
        return schemas[0]
    return SCHEMAS[config].remove_metadata()


def card_data(root, title: str):
    """The card's YAML metadata as ``huggingface_hub.DatasetCardData``: name, licence,
    tags, size category, and per config present its ``data_files`` (what
    ``datasets.load_dataset(root, config)`` reads), features and split sizes."""
    # Imported here: ``datasets`` takes about a second to import, and only writing a card
    # needs it (``datasets`` is a dependency, ``huggingface_hub`` one of its own).
    from datasets import DatasetInfo, Features, SplitDict, SplitInfo
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCardData

    root = Path(root)
    configs, infos, kernel_rows = {}, {}, 0
    for config in CONFIGS:
        files = part_files(root, config)
        splits = splits_present(root, config)
        if not splits:
            continue
        entry = {"data_files": [{"split": split, "path": f"{config}/{split}/*.parquet"} for split in splits]}
        if config == DEFAULT_CONFIG:
            entry["default"] = True
        configs[config] = entry
        split_dict, download_size = SplitDict(dataset_name=config), 0
        for split in splits:
            metas = [pq.read_metadata(path) for path in files if path.parent.name == split]
            # num_examples counts every physical row, as load_dataset does (it checks the
            # number); num_bytes is the uncompressed size of the row groups, from the footers
            # (reading the PTX text just to measure it would cost the whole dataset).
            split_dict.add(SplitInfo(
                name=split, num_examples=sum(m.num_rows for m in metas),
                num_bytes=sum(m.row_group(i).total_byte_size for m in metas for i in range(m.num_row_groups)),
                dataset_name=config))
            download_size += sum(path.stat().st_size for path in files if path.parent.name == split)
        if config == DEFAULT_CONFIG:
            kernel_rows = split_dict.total_num_examples
        infos[config] = DatasetInfo(
            features=Features.from_arrow_schema(config_features_schema(files, config)),
            splits=split_dict, download_size=download_size,
            dataset_size=sum(info.num_bytes for info in split_dict.values()))
    data = DatasetCardData(
        pretty_name=title, license="other", license_name=LICENSE_NAME, license_link=LICENSE_LINK,
        # the kernels are the dataset's examples: pairs and *_by_shape are views of them
        size_categories=[size_category(kernel_rows)], tags=list(TAGS))
    MetadataConfigs(configs).to_dataset_card_data(data)
    DatasetInfosDict(infos).to_dataset_card_data(data)
    return data


def card_header(root, title: str) -> str:
    """The card's YAML front matter, between its ``---`` lines."""
    return "---\n" + card_data(root, title).to_yaml() + "\n---"


def _table(header: list, rows: list) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _size_table(rows: list) -> str:
    counts = defaultdict(Counter)
    groups = defaultdict(set)
    for row in rows:
        key = (row["source"], row["arch"])
        split = row["split"]
        counts[key][split] += 1
        groups[key].add(row["group_id"])
    body = [[src, arch, len(groups[(src, arch)])] + [counts[(src, arch)][s] for s in SPLITS]
            + [sum(counts[(src, arch)].values())] for src, arch in sorted(counts)]
    return _table(["source", "arch", "groups"] + list(SPLITS) + ["rows"], body)


def _status_table(rows: list) -> str:
    counts = Counter((row["source"], row["status"]) for row in rows)
    return _table(["source", "status", "rows"], [[s, st, n] for (s, st), n in sorted(counts.items())])


def _provenance(rows: list, credits=None) -> str:
    licences, tools = Counter(), set()
    for row in rows:
        prov = json.loads(row["provenance"] or "{}")
        licences[(row["source"], prov.get("licence", "unknown"))] += 1
        tool = json.loads(row["toolchain"] or "{}")
        tools.add((row["source"], json.dumps(tool, sort_keys=True)))
    lic = _table(["source", "licence of the generating code", "rows"],
                 [[s, l, n] for (s, l), n in sorted(licences.items())])
    tc = "\n".join(f"- `{src}`: `{tool}`" for src, tool in sorted(tools))
    lines = credits(set(row["source"] for row in rows)) if credits else {}
    credit = "\n\n" + "\n".join(lines[src] for src in sorted(lines)) if lines else ""
    return f"{lic}{credit}\n\nToolchains:\n{tc}"


def _results_table(rows: list) -> str:
    by_group = defaultdict(list)
    for row in rows:
        by_group[row["group_id"]].append(row)
    body = []
    for group, members in sorted(by_group.items()):
        stats = group_stats(members)
        fastest = f"{stats.fastest} ({stats.fastest_us:.2f} us)" if stats.timed else "-"
        spread = f"{stats.spread:.2f}x" if stats.spread is not None else "-"
        body.append([group, stats.members, stats.passed, fastest, spread])
    return _table(["group", "members", "passed", "fastest member", "slowest/fastest"], body)


NETWORKS_TEXT = ("Groups whose function comes from a model (Inductor kernels, TVM tasks: "
                 "docs/inductor.md, docs/tvm-models.md), per model and source: its functions (groups "
                 "holding a row of that model), members per group and arch, and how many verified rows "
                 "passed.")


def _networks_table(rows: list) -> str:
    """Per model and source: functions, members per group and arch (median, least), rows
    passed of those verified ('' when no row names a model)."""
    groups, members, judged, passed = defaultdict(set), defaultdict(Counter), Counter(), Counter()
    for row in rows:
        model = json.loads(row["provenance"] or "{}").get("model")
        if not model:
            continue
        key = (model, row["source"])
        groups[key].add(row["group_id"])
        members[key][(row["group_id"], row["arch"])] += row["status"] != "build_failed"
        if row["status"] not in BUILD_STATUSES:
            judged[key] += 1
            passed[key] += row["status"] == "passed"
    if not groups:
        return ""
    body = []
    for key in sorted(groups):
        counts = sorted(members[key].values())
        median = (counts[(len(counts) - 1) // 2] + counts[len(counts) // 2]) / 2
        rate = f"{passed[key]} / {judged[key]} ({100 * passed[key] / judged[key]:.1f}%)" if judged[key] else "-"
        body.append([key[0], key[1], len(groups[key]), f"{median:g}", counts[0], rate])
    return NETWORKS_TEXT + "\n\n" + _table(["model", "source", "functions", "members per group (median)",
                                             "least", "passed / verified"], body)


CROSS_SOURCE_TEXT = ("Groups with members from several sources (`ptxds merge`: one canonical problem, "
                     "docs/crossource.md). Every member was timed the same way (same L2 flush, same "
                     "method), so times compare across compilers; per source its fastest passing member.")


def _cross_source_table(rows: list) -> str:
    """Per group of several sources: the winning source and each source's fastest time
    ('' when no group has two sources)."""
    by_group = defaultdict(list)
    for row in rows:
        by_group[row["group_id"]].append(row)
    body = []
    for group, members in sorted(by_group.items()):
        sources = sorted({m["source"] for m in members})
        if len(sources) < 2:
            continue
        best = {}
        for source in sources:
            stats = group_stats(m for m in members if m["source"] == source)
            best[source] = stats.fastest_us
        timed = {s: t for s, t in best.items() if t}
        winner = min(timed, key=lambda s: (timed[s], s)) if timed else "-"
        cells = ", ".join(f"{s} {best[s]:.2f} us" if best[s] else f"{s} -" for s in sources)
        body.append([group, len(members), winner, cells])
    if not body:
        return ""
    return CROSS_SOURCE_TEXT + "\n\n" + _table(["group", "members", "fastest source", "fastest per source"], body)


def output_dtype(problem: dict) -> str:
    """The dtype of a problem's (first) output buffer, from its JSON form."""
    return next((b["dtype"] for b in problem.get("buffers", []) if b.get("role") in ("out", "inout")), "?")


def weakest_catches(rows: list) -> dict:
    """(op, output dtype) -> the largest (weakest) ``catches_rel_err`` of its rows."""
    worst = {}
    for row in rows:
        value = row.get("catches_rel_err")
        if value is None:
            continue
        problem = json.loads(row["problem"] or "{}")
        key = (row.get("op") or problem.get("op", "?"), output_dtype(problem))
        worst[key] = max(worst.get(key, 0.0), value)
    return worst


def _sensitivity_table(rows: list) -> str:
    """Per op and output dtype: its error scale S and the largest (weakest)
    ``catches_rel_err`` of its groups."""
    worst = weakest_catches(rows)
    return _table(["op", "output dtype", "error scale S", "smallest uniform relative error caught (weakest group)"],
                  [[op, dtype, _scale_text(op), f"{value:.2e}"] for (op, dtype), value in sorted(worst.items())])


def _scale_text(op: str) -> str:
    spec = OPS.get(op)
    return spec.scale_text.replace("|", "\\|") if spec else "?"


COVERAGE_TEXT = ("Per op, the coverage items its groups' trials drew (`provenance.verify.coverage`: per item, "
                 "how often): every binade of each float input's domain, subnormals, +-0, the top binade, NaN and "
                 "infinities where defined, integer extremes and their neighbours, structured rows (all-zero GEMM "
                 "rows and columns, softmax rows beyond exp's range, norm rows with infinities, C of NaN at beta = 0) "
                 "and outputs (subnormal, FP8-top and small integer results). Items are counted per group: drawn / "
                 "declared summed over the op's groups; binades are listed as one family.")


def coverage_by_op(rows: list) -> dict:
    """op -> (groups, items drawn, items declared, groups with every item, Counter of
    missed item families), one record per group (its first row that carries one)."""
    from ..coverage import family_of
    seen, out = set(), {}
    for row in rows:
        if row["group_id"] in seen:
            continue
        record = (json.loads(row["provenance"] or "{}").get("verify") or {}).get("coverage")
        if not isinstance(record, dict) or not record or "error" in record:
            continue
        seen.add(row["group_id"])
        problem = json.loads(row["problem"] or "{}")
        op = row.get("op") or problem.get("op", "?")
        groups, drawn, declared, complete, missed = out.get(op, (0, 0, 0, 0, Counter()))
        misses = [key for key, count in record.items() if not count]
        missed.update({family_of(key) for key in misses})
        out[op] = (groups + 1, drawn + len(record) - len(misses), declared + len(record),
                   complete + (not misses), missed)
    return out


def _coverage_table(rows: list) -> str:
    by_op = coverage_by_op(rows)
    if not by_op:
        return ""
    body = []
    for op, (groups, drawn, declared, complete, missed) in sorted(by_op.items()):
        worst = ", ".join(f"`{key}` ({n})" for key, n in missed.most_common(4)) or "-"
        body.append([op, groups, f"{drawn} / {declared}", f"{complete} / {groups}", worst])
    return COVERAGE_TEXT + "\n\n" + _table(
        ["op", "groups", "items drawn / declared", "groups with every item", "most often missed (groups)"], body)


def _timing_methods(rows: list) -> str:
    counts = Counter(row.get("time_method") for row in rows if row.get("time_method"))
    return ", ".join(f"{method}: {n} rows" for method, n in sorted(counts.items())) or "no row was timed"


PLOTS_DIR = "plots"
PLOTS_INDEX = "plots.json"


def _plots_section(root: Path) -> list:
    """Markdown for the PNG plots ``ptxds report`` left in DIR/plots, when they were drawn
    from the shards present now (a later verify or build makes them stale, and they drop
    out until the report is made again)."""
    index_path = root / PLOTS_DIR / PLOTS_INDEX
    try:
        index = json.loads(index_path.read_text())
    except (OSError, ValueError):
        return []
    if index.get("shards") != shards_fingerprint(root):
        return []
    plots = [p for p in index.get("plots", []) if (root / p["file"]).is_file()]
    overview = [p for p in plots if p.get("kind") != "group"]
    groups = [p for p in plots if p.get("kind") == "group"]
    lines = ["## Plots", "", "Made by `ptxds report`, which also writes them into one HTML page.", ""]
    for plot in overview:
        lines += [f"### {plot['title']}", "", f"![{plot['title']}]({plot['file']})", "", plot["caption"], ""]
    if groups:
        lines += ["### Members of each group", "", "<details><summary>median times per member, "
                  f"{len(groups)} groups</summary>", ""]
        for plot in groups:
            lines += [f"![{plot['title']}]({plot['file']})", ""]
        lines += ["</details>", ""]
    return lines


LABELS_TEXT = """\
How each pair's label was obtained (`label_source`): `verified` labels come from
`ptxds verify` on a GPU (two members that both passed are equivalent; a passing member and
one proven wrong are not, and the negative's `witness` names the element where they
differ); `constructed` labels pair passing members of two groups with the same buffers but
different functions. Pairs with a `mutation` involve a mutant made by `ptxds rewrite`: a
killed mutant (proven different by the verifier) is a verified negative; a surviving mutant
(it passed every trial) is `label_source="survived"` with `equivalent` null, not a
positive: passing the trials does not make a mutated program equivalent (a dropped
barrier that did not race here is still a data race). A mutant is a positive only when
shown equivalent for its problem: `unexercised` (a coverage probe counted zero executions
of its changed instruction on every trial), whose pairs have `label_source="unexercised"`.
The kill rate is given over all mutants and over exercised ones (killed and survived)."""


def _labels_section(pairs: list, rows: list) -> list:
    if not pairs:
        return []

    def label(value):
        return "unknown" if value is None else "equivalent" if value else "different"
    counts = Counter((p["label_source"], label(p["equivalent"]), "mutant" if p["mutation"] else "-") for p in pairs)
    parts = ["## Labels", "", LABELS_TEXT, "",
             _table(["label_source", "label", "mutant pair", "pairs"], [[*k, n] for k, n in sorted(counts.items())])]
    mutants, racecheck = Counter(), Counter()
    sanitizer_of = {row["kernel_id"]: row["sanitizer"] for row in rows}
    for row in rows:
        variant = json.loads(row["variant"] or "{}")
        if variant.get("mutation") and row["status"] not in BUILD_STATUSES:
            kind = mutant_class(row["status"], row["sanitizer"], sanitizer_of.get(variant.get("base")),
                                variant.get("base") in sanitizer_of)
            if kind:
                mutants[(variant["mutation"], kind)] += 1
            note = (json.loads(row["provenance"] or "{}").get("verify") or {}).get("racecheck") or ""
            if race_hazards(row["sanitizer"]) is not None:
                racecheck[(variant["mutation"], "ran")] += 1
            elif note.startswith("not run"):
                racecheck[(variant["mutation"], "missing")] += 1

    def rate(value):
        return "-" if value is None else f"{100 * value:.1f}%"
    if mutants:
        operators = sorted({op for op, _ in mutants})
        table = []
        for op in operators + ["all"]:
            count = {kind: sum(n for (o, k), n in mutants.items() if k == kind and op in (o, "all"))
                     for kind in ("killed", "survived", "equivalent")}
            ran = sum(n for (o, k), n in racecheck.items() if k == "ran" and op in (o, "all"))
            table.append([op, count["killed"], count["survived"], count["equivalent"],
                          *map(rate, kill_rates(count["killed"], count["survived"], count["equivalent"])), ran])
        parts += ["", "Mutants by operator (killed: proven different; survived: passed every trial with its "
                  "change executed, or its coverage unknown, label unknown; unexercised: its change never ran, "
                  "equivalent for the problem; racecheck: mutants run under compute-sanitizer racecheck):", "",
                  _table(["operator", "killed", "survived", "unexercised", "kill rate (all)",
                          "kill rate (exercised)", "racecheck"], table)]
        missing = sum(n for (_, k), n in racecheck.items() if k == "missing")
        parts += ["", "`ptxds verify` runs racecheck without `--sanitize` on every passing drop_barrier mutant "
                  "and every passing member changed near a barrier, fence or shared-memory access, with its "
                  "base; a hazard its base lacks makes it `race_detected`."
                  + (f" {missing} mutant(s) wanted it but compute-sanitizer was not installed." if missing else "")]
    return parts + [""]


SPLITS_TEXT = """\
Two configs split the same rows two ways.

- `kernels` / `pairs` (default): split by *function*: the op, the buffers' names, dtypes,
  roles and ranks, and the parameters other than sizes (layouts, alpha, beta, eps,
  accumulator). Every size, arch and source of a function is in one split (80/10/10 by
  a hash of the function). A PTX text that serves two functions (CUTLASS compiles one PTX
  for any alpha/beta) would still cross: all its rows then go to the split of its first
  row, rows ordered by (group_id, build_key); {moved} rows were moved so, and
  {crossing} normalised `ptx_hash` values are in more than one split. Pairs follow
  their rows: a pair whose rows sit in two splits is not made.
- `kernels_by_shape` / `pairs_by_shape`: held-out sizes. For each function with at least
  three sizes, the largest size (most output elements, then most elements over all
  buffers, then the size's text) is `test`; one other size, chosen by a seeded hash
  (seed 0) of function and size, is `validation`; the rest are `train`. Functions with
  fewer than three sizes are all in `train`. Here the same PTX does sit on both sides
  (a kernel compiled once serves every size): the question is the unseen size."""

QUESTIONS = """\
## How to use this dataset

| research question | config | split to evaluate on |
|---|---|---|
| Are two PTX programs equivalent? (classifier) | `pairs` | `test`: functions never seen in training, no PTX text shared with `train` |
| How fast is a kernel? (performance model) | `kernels` (rows with `time_us_median`) | `test`: unseen functions |
| Does a model generalise to an unseen problem size? | `kernels_by_shape`, `pairs_by_shape` | `test`: each function's largest size |
| Which kernel of a group is fastest? (learned compiler, autotuner) | `kernels`, grouped by `group_id` | `test` |
| Does a generated kernel compute the function? (kernel generation) | `kernels` (problem, launches, reference) | any: run the verifier on the new PTX |

A split that no function of this dataset hashed into is absent (a dataset of a few
functions may have no `test`); the splits present are {splits}.
"""

HOW_TO_USE = QUESTIONS + """
How labels were obtained: every member was run on a GPU against a float64 reference with
a per-element error bound, one trial per input kind (`trial_errors` lists each trial's
kind, seed and errors), and members that pass were compared with each other. Known
limits: passing is evidence on these trials, not a proof of equivalence on every input;
`constructed` negatives differ by construction, not by a run; surviving mutants have no
label; a negative's `witness` holds the element it differs at, with the wrong member's
value, the reference and the consensus member's value (other members' outputs are not
kept); rows of one function at several sizes share PTX.

Re-threshold with your own tolerance, per trial kind, and iterate pairs (a row that did not
pass has no trials to judge, or failed them: keep the status test):

```python
from datasets import load_dataset
kernels = load_dataset({root!r}, "kernels", split={split!r})
# passed, and the normal and uniform trials within 4 output ulps
def tight(row):
    return row["status"] == "passed" and all(
        t["max_ulp_err"] <= 4 for t in row["trial_errors"] or [] if t["kind"] in ("normal", "uniform"))
ok = {{r["kernel_id"] for r in kernels.filter(tight)}}
pairs = load_dataset({root!r}, "pairs", split={split!r}).filter(lambda p: p["equivalent"] is not None)
for p in pairs.filter(lambda p: p["kernel_a"] in ok):
    print(p["kernel_a"], p["kernel_b"], p["equivalent"], (p["witness"] or {{}}).get("flat_index"))
```
"""

HOW_TO_USE_OLD_ROWS = QUESTIONS + """
How labels were obtained: every member was run on a GPU against a float64 reference
(`status`, `max_err_ratio`). Rows of schema version below 4 have no `trial_errors` and no
`witness` columns, so a snippet using them fails on this dataset; `ptxds verify` on this folder writes its rows in the current version.

```python
from datasets import load_dataset
kernels = load_dataset({root!r}, "kernels", split={split!r})
ok = kernels.filter(lambda r: r["status"] == "passed")
```
"""

HOW_TO_USE_UNVERIFIED = QUESTIONS + """
This dataset is **not verified yet**: its rows were built (PTX assembled by ptxas, status
`built` or `build_failed`) and none has been checked or timed yet, so no row is labelled
or known to be equivalent, the verifier's columns are null and there is no `pairs` config.
Run `ptxds verify {root}` on a machine with a GPU to label and time every member.

```python
from datasets import load_dataset
kernels = load_dataset({root!r}, "kernels", split={split!r})
built = kernels.filter(lambda r: r["status"] == "built")   # assembled; not yet checked on a GPU
```
"""


TRIAL_ERRORS_SINCE = 4  # the schema version that added trial_errors and witness


def _schema_line(rows: list) -> str:
    """The schema version of the rows present: the current one, or which older ones remain
    (a resplit keeps rows as they were written)."""
    versions = Counter(r["schema_version"] or 0 for r in rows)
    old = {v: n for v, n in versions.items() if v < SCHEMA_VERSION}
    if not old:
        return f"Schema version {SCHEMA_VERSION}."
    listed = ", ".join(f"{n} of version {v}" for v, n in sorted(old.items()))
    lacking = (f" (`trial_errors` and `witness` came in version {TRIAL_ERRORS_SINCE})"
               if min(old) < TRIAL_ERRORS_SINCE else "")
    return (f"Rows of an older schema: {listed} (current: {SCHEMA_VERSION}); they lack the columns added "
            f"since{lacking}, which read as null.")


# The columns of ``kernels`` the card reads (with each row's ``split``).
CARD_COLUMNS = ["group_id", "source", "arch", "status", "provenance", "toolchain", "name", "time_us_median", "op",
                "problem", "catches_rel_err", "time_method", "variant", "kernel_id", "sanitizer", "schema_version",
                "ptx_hash", "build_key"]
# The columns of ``pairs`` it reads.
CARD_PAIR_COLUMNS = ["equivalent", "label_source", "mutation"]


def write_card(root, title: str = "PTX equivalence groups", credits=None, rows=None, pairs=None) -> Path:
    """(Re)write DIR/README.md from the shards present. ``credits``: a function of the
    sources present returning {source: credit line} (upstream work the rows derive from,
    each source's ``Builder.credit``; ``builders.source_credits``). ``rows`` (every physical
    row of ``kernels`` as a dict with ``CARD_COLUMNS`` and ``split``) and ``pairs`` (every
    pair row, dicts with ``CARD_PAIR_COLUMNS``): what a publish has read or made already;
    None: read from the folder."""
    root = Path(root)
    if rows is None:
        rows = read_split_table(root, "kernels", columns=CARD_COLUMNS).to_pylist()
    verified = any(r["status"] not in BUILD_STATUSES for r in rows)
    check_card_replaceable(root)  # never replace a README.md that is not a ptxds card
    old_rows = sum((r["schema_version"] or 0) < TRIAL_ERRORS_SINCE for r in rows)
    present = splits_present(root, "kernels")
    split = "test" if "test" in present else (present or ["train"])[0]
    how_to_use = HOW_TO_USE_UNVERIFIED if not verified else HOW_TO_USE_OLD_ROWS if old_rows else HOW_TO_USE
    if pairs is None:
        pairs = read_table(root, "pairs", columns=CARD_PAIR_COLUMNS).to_pylist()
    splits = [r["split"] for r in rows]
    pair_count = len(pairs)
    parts = [
        card_header(root, title), "",
        f"# {title}", "",
        "Sets of NVIDIA PTX programs that compute the same function (equivalence groups), "
        "built by ptxds. Every row is runnable with nothing but a CUDA driver: it carries "
        "the problem (buffers, dtypes, shapes, input distributions, reference op, "
        "tolerance) and the exact launch sequence (entry, grid, block, cluster, dynamic "
        "shared memory, and how each kernel parameter is filled).",
        "", f"{_schema_line(rows)} {len(rows)} kernel rows in "
        f"{len({r['group_id'] for r in rows})} groups; {pair_count} pair rows.", "",
        "## Size", "", _size_table(rows), "", "## Status", "", _status_table(rows), "",
        "## Splits", "", SPLITS_TEXT.format(moved=moved_by_hash(rows, splits),
                                          crossing=len(crossing_hashes(rows, splits))),
        "", how_to_use.format(root=str(root), split=split, splits=", ".join(f"`{s}`" for s in present) or "none"),
        "## How to load", "", "```python", "from datasets import load_dataset",
        f"kernels = load_dataset({str(root)!r}, 'kernels')",
        f"row = kernels[{split!r}][0]",
        "print(row['name'], row['launches'][0]['grid'], row['launches'][0]['args'])",
        "```", "",
        "`variant`, `problem`, `toolchain`, `provenance` and `scratch` are JSON strings "
        "(`json.loads`). Scalar argument values are decimal strings; blob arguments are "
        "raw bytes with `patches` giving the byte offsets where buffer addresses go.", "",
        "## Provenance and licences", "", _provenance(rows, credits), "",
    ]
    networks = _networks_table(rows)
    if networks:
        parts += ["## Functions from networks", "", networks, ""]
    if verified:
        parts += ["## Verification", "", VERIFY_METHOD, "", "### Sanitizers", "", SANITIZER_POLICY, "",
                  _sanitizer_line(rows), "", "### Sensitivity of the error bound", "",
                  _sensitivity_table(rows), ""]
        coverage = _coverage_table(rows)
        if coverage:
            parts += ["### Value coverage", "", coverage, ""]
        parts += [f"Timing methods: {_timing_methods(rows)}.", "",
                  "### Results", "", _results_table(rows), ""]
        cross = _cross_source_table(rows)
        if cross:
            parts += ["### Across sources", "", cross, ""]
    parts += _columns_section()
    parts += _labels_section(pairs, rows)
    parts += _plots_section(root)
    path = root / "README.md"
    tmp = path.with_name(".README.md.tmp")
    tmp.write_text("\n".join(parts))
    tmp.replace(path)
    return path
