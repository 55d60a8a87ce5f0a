"""The ``ptxds`` command line: thin click commands that parse options, call one library
function and print a summary. Library errors become one-line ``Error:`` messages."""
from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path

import click

from builders import BUILDERS, MissingSourceDependency, UnknownSourceError

KNOWN_ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")
SHAPED_SOURCES = ("triton", "cutlass")  # builders that state their functions at a shape set's sizes


def library_errors(func):
    """Turn the library's expected failures into click errors naming cause and fix."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from dataset_spec.model import SpecError
        from ptx_tools import ToolchainError
        try:
            return func(*args, **kwargs)
        except (UnknownSourceError, MissingSourceDependency, ToolchainError, SpecError,
                FileNotFoundError) as exc:
            raise click.ClickException(str(exc).splitlines()[0]) from None
        except Exception as exc:
            if type(exc).__name__ in ("ManifestError", "NoDriverError", "DriverError", "SanitizerMissing"):
                raise click.ClickException(str(exc).splitlines()[0]) from None
            raise
    return wrapper


def _parse_archs(value: str) -> list:
    archs = [a.strip() for a in value.split(",") if a.strip()]
    bad = [a for a in archs if a not in KNOWN_ARCHS]
    if bad:
        raise click.BadParameter(f"unknown arch {bad[0]!r}; use one of {', '.join(KNOWN_ARCHS)}")
    return archs


@click.group()
@click.version_option(package_name="ptxds")
def cli():
    """Build, verify and publish datasets of PTX equivalence groups."""


@cli.command()
@click.option("--source", "source", required=True, help=f"one of: {', '.join(sorted(BUILDERS))}")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="dataset folder")
@click.option("--arch", "arch", default="sm_80,sm_90a", show_default=True, help="comma-separated targets")
@click.option("--limit", type=int, default=None, help="build at most N work items")
@click.option("--sample-seed", type=int, default=0, help="with --limit: sample items with this seed")
@click.option("--jobs", type=int, default=0, help="worker processes (default: all cores)")
@click.option("--from-dump", "from_dump", type=click.Path(exists=True, file_okay=False),
              help="triton: ingest a TRITON_CACHE_DIR / TRITON_KERNEL_DUMP tree")
@click.option("--problem", "problem_file", type=click.Path(exists=True, dir_okay=False),
              help="triton --from-dump: problem spec file mapping kernels to problems")
@click.option("--manifest", type=click.Path(exists=True, dir_okay=False), help="ptx: manifest file")
@click.option("--family", default=None, help="cutlass: kernel name glob (like the profiler's --kernels)")
@click.option("--sm-count", type=int, default=132, show_default=True,
              help="cutlass: SM count persistent schedulers size their grid by")
@click.option("--shapes", default="default", show_default=True,
              help="triton, cutlass: problem sizes, a set (default, llm, sweep) or a YAML/JSON file; "
                   "each size is its own group")
@click.option("--mugraphs", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="mirage: muGraph JSON file (repeatable; default: the shared saved muGraphs)")
@click.option("--schedules", type=int, default=None,
              help="tvm: distinct schedules (members) per group (default 10)")
@click.option("--sass/--no-sass", default=False, help="store each row's SASS text")
@click.option("--silent", is_flag=True, help="no progress bar")
@click.option("--flush-rows", type=int, default=64, hidden=True, help="rows per part file")
@library_errors
def build(source, out_dir, arch, limit, sample_seed, jobs, from_dump, problem_file, manifest,
          family, sm_count, shapes, mugraphs, schedules, sass, silent, flush_rows):
    """Build a source's equivalence groups into a dataset folder (safe to rerun: resumes).

    Example:

        ptxds build --source triton --out data/triton --arch sm_80,sm_90a
    """
    from builders.base import BuildOptions
    from .pipeline import run_build
    if from_dump and source == "triton":
        source = "triton-dump"
    from builders.shapes import load_shape_set
    load_shape_set(shapes)  # a bad name or file is one line before any work
    if shapes != "default" and source not in SHAPED_SOURCES:
        raise click.UsageError(f"--shapes applies to --source {' and '.join(SHAPED_SOURCES)}; "
                               f"{source} states its own sizes")
    extra = {k: v for k, v in {"from_dump": from_dump, "problem_file": problem_file,
                                "manifest": manifest, "family": family, "shapes": shapes,
                                "sm_count": sm_count, "mugraphs": list(mugraphs) or None,
                                "schedules": schedules}.items()
             if v is not None}
    if source == "ptx" and not manifest:
        raise click.UsageError("--source ptx needs --manifest FILE (see docs/manifest.md)")
    if source == "triton-dump" and not from_dump:
        raise click.UsageError("--source triton-dump needs --from-dump DIR")
    if schedules is not None and source != "tvm":
        raise click.UsageError(f"--schedules applies to --source tvm, not {source}")
    options = BuildOptions(archs=_parse_archs(arch), limit=limit, sample_seed=sample_seed, extra=extra)
    summary = run_build(source, out_dir, options, jobs=jobs, sass=sass, progress=not silent,
                        flush_rows=flush_rows)
    _print_build_summary(summary)
    if summary.interrupted:
        raise click.ClickException("interrupted; run the same command again to resume")


def _print_build_summary(summary) -> None:
    click.echo(f"\n{summary.source}: {summary.rows_written} rows written "
               f"({summary.items_skipped} of {summary.items_total} work items already done) "
               f"in {summary.seconds:.1f} s -> {summary.out_dir}")
    click.echo(f"{'arch':<10}{'rows':>8}")
    for arch, n in sorted(summary.by_arch.items()):
        click.echo(f"{arch:<10}{n:>8}")
    click.echo(f"{'status':<16}{'rows':>8}")
    for status, n in sorted(summary.by_status.items()):
        click.echo(f"{status:<16}{n:>8}")
    click.echo(f"groups touched: {len(summary.groups)}")
    for label, message in summary.failed_items:
        click.echo(f"failed item {label}: {message}", err=True)


@cli.command()
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="print the counts as JSON")
@library_errors
def info(dataset, as_json):
    """Summarise a dataset folder: groups, members, sources, archs, statuses.

    Example:

        ptxds info data/triton
    """
    from builders.shapes import group_shape
    from dataset_spec.shards import read_table
    rows = read_table(dataset, "kernels", columns=["group_id", "source", "arch", "status", "problem"]).to_pylist()
    if not rows:
        raise click.ClickException(f"{dataset} holds no kernel rows; build one with ptxds build")
    groups = Counter(r["group_id"] for r in rows)
    shape_of_group = {r["group_id"]: group_shape(r["group_id"], r["problem"]) for r in rows}
    counts = {
        "rows": len(rows), "groups": len(groups),
        "members_per_group": {"min": min(groups.values()), "max": max(groups.values())},
        "sources": dict(Counter(r["source"] for r in rows)),
        "archs": dict(Counter(r["arch"] for r in rows)),
        "statuses": dict(Counter(r["status"] for r in rows)),
        "shapes": dict(Counter(shape_of_group.values())),
    }
    if as_json:
        click.echo(json.dumps(counts, indent=2, sort_keys=True))
        return
    click.echo(f"{dataset}: {counts['rows']} rows in {counts['groups']} groups "
               f"({counts['members_per_group']['min']}-{counts['members_per_group']['max']} members each)")
    for key in ("sources", "archs", "statuses"):
        click.echo(f"{key}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts[key].items())))
    click.echo("shapes (groups): " + ", ".join(f"{k} {v}" for k, v in sorted(counts["shapes"].items())))




@cli.command()
@click.argument("dataset", type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="output folder (default: DATASET-verified)")
@click.option("--groups", "groups", default=None, help="only groups matching this glob")
@click.option("--trials", type=int, default=None,
              help="trials per group (default: one per trial kind: normal, uniform, wide, edge)")
@click.option("--no-timing", is_flag=True, help="check equivalence only")
@click.option("--workers", type=int, default=0, help="GPU worker processes (default: one per GPU)")
@click.option("--kernel-timeout", type=float, default=20.0, show_default=True,
              help="seconds before a member counts as hung")
@click.option("--reference", type=click.Choice(["auto", "numpy", "torch"]), default="auto", show_default=True,
              help="where float64 references run (auto: torch on the GPU for large GEMMs when installed)")
@click.option("--sanitize", is_flag=True,
              help="also run every member under compute-sanitizer (memcheck, racecheck); slow")
@click.option("--silent", is_flag=True, help="no progress bar")
@library_errors
def verify(dataset, out_dir, groups, trials, no_timing, workers, kernel_timeout, reference, sanitize, silent):
    """Run every group on the GPU, check equivalence, time every member; writes new shards.

    Example:

        ptxds verify data/triton --out data/triton-verified
    """
    from verify import verify_dataset
    from .pairs import write_pairs
    from dataset_spec.card import write_card
    out_dir = out_dir or str(Path(dataset).resolve()) + "-verified"
    if Path(out_dir).resolve() == Path(dataset).resolve():
        raise click.UsageError("--out must differ from DATASET: the input is never changed in place")
    summary = verify_dataset(dataset, out_dir, groups=groups, trials=trials, timing=not no_timing,
                             workers=workers, kernel_timeout=kernel_timeout,
                             progress=not silent, reference=reference, sanitize=sanitize)
    write_pairs(out_dir)
    write_card(out_dir)
    click.echo(summary.format())


def main():
    cli()
