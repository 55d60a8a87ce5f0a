"""``ptxds report``: gather a dataset's numbers, draw the plots once, write the HTML page,
and put the same plots as PNG files beside the dataset card (DATASET/plots/), which the
card then shows."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from builders import source_credits
from dataset_spec.errors import PtxdsError
from dataset_spec.store.card import PLOTS_DIR, PLOTS_INDEX, write_card
from dataset_spec.store.shards import shards_fingerprint

from .gather import KNOBS, EmptyDatasetError, gather
from .html import render_page

DEFAULT_MAX_GROUPS = 60


class UnknownKnobError(PtxdsError, ValueError):
    """--knob names a knob the report does not know."""


@dataclass
class ReportResult:
    page: Path
    card_plots: list  # paths of the PNG files written beside the card
    groups_plotted: int
    groups: int


def build_report(dataset, out_dir=None, knobs=KNOBS, max_groups: int = DEFAULT_MAX_GROUPS,
                 card: bool = True) -> ReportResult:
    """Write OUT/index.html (default DATASET/report) and, with ``card``, DATASET/plots/*.png
    plus the card's plots section."""
    bad = [k for k in knobs if k not in KNOBS]
    if bad:
        raise UnknownKnobError(f"unknown knob {bad[0]!r}; use one of {', '.join(KNOBS)}")
    from .plots import group_times, overview_plots  # matplotlib only when drawing
    dataset = Path(dataset)
    report = gather(dataset)
    if not report.summary.verified:
        raise EmptyDatasetError(f"{dataset} is not verified yet: nothing to plot; run ptxds verify {dataset} "
                                f"on a machine with a GPU first (ptxds info {dataset} shows what it holds)")
    overview = overview_plots(report, knobs)
    # a group with neither a time nor a failure (not verified yet) has nothing to draw
    chosen = [g for g in report.groups if g.timed or g.failures][:max_groups]
    group_plots = {g.group_id: group_times(g) for g in chosen}
    out = Path(out_dir) if out_dir else dataset / "report"
    out.mkdir(parents=True, exist_ok=True)
    page = out / "index.html"
    _atomic_write(page, render_page(report, overview, group_plots, f"ptxds report: {dataset.name}").encode())
    written = _write_card_plots(dataset, overview + list(group_plots.values())) if card else []
    return ReportResult(page=page, card_plots=written, groups_plotted=len(chosen), groups=len(report.groups))


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _write_card_plots(dataset: Path, plots: list) -> list:
    """PNG files in DATASET/plots/ with an index naming the shards they were drawn from, so
    the card shows them only while they still describe the data."""
    folder = dataset / PLOTS_DIR
    folder.mkdir(exist_ok=True)
    written = []
    for plot in plots:
        path = folder / f"{plot.name}.png"
        _atomic_write(path, plot.png)
        written.append(path)
    keep = {p.name for p in written}
    for stale in folder.glob("*.png"):
        if stale.name not in keep:
            stale.unlink()
    index = {"shards": shards_fingerprint(dataset),
             "plots": [{"file": f"{PLOTS_DIR}/{p.name}.png", "title": p.title, "caption": p.caption,
                        "kind": "group" if p.name.startswith("group-") else "overview"} for p in plots]}
    _atomic_write(folder / PLOTS_INDEX, json.dumps(index, indent=1).encode())
    write_card(dataset, credits=source_credits)
    return written
