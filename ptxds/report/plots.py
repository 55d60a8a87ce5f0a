"""The report's plots, drawn with matplotlib's Agg canvas (no display, no pyplot state) and
returned as PNG bytes, so the same images go into the HTML page and the dataset card."""
from __future__ import annotations

import io
import math
import random
from collections import defaultdict
from dataclasses import dataclass

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from .gather import KNOBS, Group, Report

DPI = 100
MAX_BARS = 60  # members drawn per group plot; the fastest and slowest halves beyond that
_STATUS_COLOURS = {"passed": "#4c9a5b", "built": "#8c8c8c"}
_FAIL_COLOUR = "#c8553d"


@dataclass
class Plot:
    name: str  # file stem in DATASET/plots and the card
    title: str
    caption: str
    png: bytes


def _figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def _ratio_axis(ax, values: list, axis: str = "y") -> None:
    """Ratios (time over the fastest) read as "1.5x": log scale only when they span more
    than a decade, where a linear axis would crush the fast members together."""
    if values and max(values) / max(min(values), 1e-12) > 10:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    target.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _counts_axis(ax, axis: str = "y") -> None:
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_locator(MaxNLocator(integer=True))


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    return buffer.getvalue()


def _source_colours(report: Report) -> dict:
    palette = ["#3b6ea8", "#d08c2f", "#5a9e6f", "#a55194", "#7f7f7f", "#bcbd22", "#17becf"]
    return {s: palette[i % len(palette)] for i, s in enumerate(sorted(report.summary.sources))}


def member_labels(group: Group) -> dict:
    """A short, unique label per member: its name (less the prefix all members share) when
    names differ, else its knobs."""
    names = [m.name for m in group.members]
    names_differ = len(set(names)) == len(names)
    archs_differ = len({m.arch for m in group.members}) > 1
    shared = _common_prefix(names) if names_differ and len(names) > 1 else ""
    labels = {}
    for m in group.members:
        knobs = " ".join(f"{k[0]}{v}" for k, v in m.knobs.items() if v is not None)
        text = _shorten(m.name[len(shared):], 52) if names_differ else (knobs or _shorten(m.name, 40))
        if archs_differ:
            text += f" [{m.arch}]"
        labels[m.kernel_id] = text
    if len(set(labels.values())) < len(labels):
        labels = {k: f"{v} #{k[:6]}" for k, v in labels.items()}
    return labels


def _common_prefix(names: list) -> str:
    """The longest prefix of whole ``_``-separated words that every name shares."""
    prefix = names[0]
    for name in names[1:]:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    cut = prefix.rfind("_") + 1
    return prefix[:cut] if cut < len(min(names, key=len)) else ""


def _keep_tail(text: str, width: int) -> str:
    """Group ids end in what tells them apart (layout, size): cut their head instead."""
    return text if len(text) <= width else "…" + text[-(width - 1):]


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def group_times(group: Group) -> Plot:
    timed = group.timed
    shown = timed if len(timed) <= MAX_BARS else timed[: MAX_BARS // 2] + timed[-MAX_BARS // 2:]
    failed = [m for m in group.members if not m.timed]
    labels = member_labels(group)
    rows = len(shown) + len(failed)
    fig = _figure(8.5, 0.8 + 0.24 * max(rows, 2))
    ax = fig.add_subplot()
    y = list(range(rows))[::-1]
    if shown:
        fastest = shown[0].time_us_median
        ax.barh(y[: len(shown)], [m.time_us_median for m in shown],
                xerr=[[(m.time_us_iqr or 0) / 2 for m in shown]] * 2,
                color=["#2f7d4f" if m is shown[0] else "#7fb08f" for m in shown],
                ecolor="#333333", capsize=2, height=0.7)
        for yi, m in zip(y, shown):
            ax.text(m.time_us_median + (m.time_us_iqr or 0) / 2, yi, f"  {m.time_us_median:.2f} us  "
                    f"({m.time_us_median / fastest:.2f}x)", va="center", fontsize=7)
        ax.set_xlim(0, max(m.time_us_median + (m.time_us_iqr or 0) for m in shown) * 1.35)
    for yi, m in zip(y[len(shown):], failed):
        ax.text(0, yi, f" {m.status}", va="center", fontsize=7, color=_FAIL_COLOUR if m.status != "built" else "#666")
    ax.set_yticks(y, [labels[m.kernel_id] for m in shown + failed], fontsize=7)
    ax.set_ylim(-0.7, rows - 0.3)
    ax.set_xlabel("median kernel time (us); whiskers: IQR")
    ax.set_title(f"{group.group_id}", fontsize=9, loc="left")
    ax.grid(axis="x", alpha=0.3)
    elided = f"; {len(timed) - len(shown)} middle members not drawn" if len(shown) < len(timed) else ""
    return Plot(name="group-" + _slug(group.group_id), title=group.group_id,
                caption=f"{len(timed)} timed members, fastest at the top{elided}; members without a time "
                        "are listed below with their status.", png=_png(fig))


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text).strip("-")[:120]


def statuses(report: Report) -> Plot:
    by_source = defaultdict(lambda: defaultdict(int))
    for group in report.groups:
        for m in group.members:
            by_source[m.source][m.status] += 1
    sources = sorted(by_source)
    names = sorted({s for c in by_source.values() for s in c}, key=lambda s: (s != "passed", s))
    fig = _figure(7, 0.9 + 0.45 * len(sources))
    ax = fig.add_subplot()
    left = [0] * len(sources)
    fail_shades = ["#c8553d", "#e09f3e", "#9e2a2b", "#f2cc8f", "#6d597a", "#b56576", "#e56b6f", "#355070"]
    for i, status in enumerate(names):
        counts = [by_source[s][status] for s in sources]
        colour = _STATUS_COLOURS.get(status, fail_shades[i % len(fail_shades)])
        ax.barh(sources, counts, left=left, label=f"{status} ({sum(counts)})", color=colour)
        left = [a + b for a, b in zip(left, counts)]
    ax.set_xlabel("rows")
    _counts_axis(ax, "x")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return Plot("statuses", "Statuses by source", "Rows per status and source.", _png(fig))


def speedups(report: Report) -> Plot:
    spreads = sorted(((g.spread, g.group_id) for g in report.groups if g.spread), reverse=True)
    slowdowns = [s for _, s in report.slowdowns()]
    per_group = len(spreads) <= 40  # few groups: one named bar each; many: a histogram
    fig = _figure(12, max(3.6, 0.8 + 0.22 * len(spreads)) if per_group else 3.6)
    left, right = fig.subplots(1, 2)
    if spreads and per_group:
        left.barh([_keep_tail(g, 52) for _, g in spreads][::-1], [s for s, _ in spreads][::-1], color="#3b6ea8")
        left.tick_params(axis="y", labelsize=7)
        _ratio_axis(left, [1.0] + [s for s, _ in spreads], "x")
        left.set_xlim(left=1.0 if left.get_xscale() == "log" else 0)
    elif spreads:
        left.hist([s for s, _ in spreads], bins=_log_bins([s for s, _ in spreads]), color="#3b6ea8")
        _ratio_axis(left, [s for s, _ in spreads], "x")
        left.set_ylabel("groups")
        _counts_axis(left)
    left.set_xlabel("slowest / fastest member of a group")
    left.set_title("speed-up of the fastest member over the slowest", fontsize=9)
    if slowdowns:
        right.hist(slowdowns, bins=_log_bins(slowdowns), color="#d08c2f")
        _ratio_axis(right, slowdowns, "x")
    right.set_xlabel("member time / its group's fastest")
    right.set_ylabel("members")
    right.set_title("every timed member against its group's fastest", fontsize=9)
    _counts_axis(right)
    for ax in (left, right):
        ax.grid(alpha=0.3)
    return Plot("speedups", "Distribution of speed-ups",
                f"{len(spreads)} groups with two or more timed members; {len(slowdowns)} timed members.",
                _png(fig))


def _log_bins(values: list, count: int = 24) -> list:
    low, high = min(values), max(values)
    low, high = max(low, 1e-9), max(high, low * 1.05)
    step = (math.log(high) - math.log(low)) / count
    return [math.exp(math.log(low) + i * step) for i in range(count + 1)]


def _sort_key(value: str):
    try:
        return (0, float(value.split("x")[0]), value)
    except ValueError:
        return (1, 0.0, value)


def time_vs_knobs(report: Report, knobs=KNOBS) -> Plot | None:
    points = report.slowdowns()
    present = [k for k in knobs if any(m.knobs.get(k) is not None for m, _ in points)]
    if not present:
        return None
    colours = _source_colours(report)
    columns = min(2, len(present))
    rows = math.ceil(len(present) / columns)
    fig = _figure(6 * columns, 3.6 * rows)
    axes = list(fig.subplots(rows, columns, squeeze=False).flat)
    for spare in axes[len(present):]:
        spare.set_visible(False)
    jitter = random.Random(0)
    for ax, knob in zip(axes, present):
        values = sorted({m.knobs[knob] for m, _ in points if m.knobs.get(knob) is not None}, key=_sort_key)
        where = {v: i for i, v in enumerate(values)}
        for source, colour in colours.items():
            chosen = [(m, s) for m, s in points if m.source == source and m.knobs.get(knob) is not None]
            if chosen:
                ax.scatter([where[m.knobs[knob]] + jitter.uniform(-0.2, 0.2) for m, _ in chosen],
                           [s for _, s in chosen], s=12, alpha=0.7, color=colour, label=source)
        crowded = len(values) > 6 or max(len(v) for v in values) > 8
        ax.set_xticks(range(len(values)), values, rotation=35 if crowded else 0, fontsize=7,
                      ha="right" if crowded else "center")
        _ratio_axis(ax, [s for _, s in points])
        ax.set_xlabel(knob)
        ax.set_ylabel("time / group's fastest")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    return Plot("time-vs-knobs", "Time against schedule knobs",
                "Each point is a timed member, its time over its group's fastest, against the "
                f"source's knob ({', '.join(present)}).", _png(fig))


def time_vs_resources(report: Report) -> Plot | None:
    points = [(m, s) for m, s in report.slowdowns() if m.registers is not None]
    if not points:
        return None
    colours = _source_colours(report)
    fig = _figure(13, 3.8)
    axes = fig.subplots(1, 3)
    fields = (("registers", "registers per thread (ptxas)"),
              ("shared_bytes", "shared memory per block, KiB (static + dynamic)"),
              ("spills", "spill stores + loads, bytes (ptxas)"))
    for ax, (attr, label) in zip(axes, fields):
        for source, colour in colours.items():
            chosen = [(m, s) for m, s in points if m.source == source and getattr(m, attr) is not None]
            if chosen:
                scale = 1024 if attr == "shared_bytes" else 1
                ax.scatter([getattr(m, attr) / scale for m, _ in chosen], [s for _, s in chosen],
                           s=12, alpha=0.7, color=colour, label=source)
        _ratio_axis(ax, [s for _, s in points])
        ax.set_xlabel(label, fontsize=8)
        ax.set_ylabel("time / group's fastest")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    return Plot("time-vs-resources", "Time against ptxas resources",
                "Registers, shared memory and spills that ptxas reports for each timed member, "
                "against its time over its group's fastest.", _png(fig))


def features_vs_speed(report: Report) -> Plot | None:
    by_tag = defaultdict(list)
    for member, slowdown in report.slowdowns():
        for tag in member.features or ["(no tag)"]:
            by_tag[tag].append(slowdown)
    if not by_tag:
        return None
    tags = sorted(by_tag, key=lambda t: (-len(by_tag[t]), t))
    fig = _figure(8, 0.9 + 0.32 * len(tags))
    ax = fig.add_subplot()
    ax.boxplot([by_tag[t] for t in tags][::-1], orientation="horizontal", widths=0.6,
               flierprops={"markersize": 3})
    ax.set_yticks(range(1, len(tags) + 1), [f"{t} ({len(by_tag[t])})" for t in tags][::-1], fontsize=8)
    _ratio_axis(ax, [v for values in by_tag.values() for v in values], "x")
    ax.set_xlabel("member time / its group's fastest")
    ax.grid(axis="x", alpha=0.3)
    return Plot("features-vs-speed", "Feature tags against speed",
                "For each PTX feature tag, the times over their group's fastest of the timed members "
                "that use it (number of members in brackets).", _png(fig))


def pairs_balance(report: Report) -> Plot | None:
    counts = report.pairs.counts
    if not counts:
        return None
    sources = sorted({s for s, _ in counts})
    fig = _figure(6.5, 0.9 + 0.5 * len(sources))
    ax = fig.add_subplot()
    equivalent = [counts.get((s, "equivalent"), 0) for s in sources]
    different = [counts.get((s, "different"), 0) for s in sources]
    ax.barh(sources, equivalent, color="#4c9a5b", label=f"equivalent ({sum(equivalent)})")
    ax.barh(sources, different, left=equivalent, color=_FAIL_COLOUR, label=f"different ({sum(different)})")
    ax.set_xlabel("pairs")
    _counts_axis(ax, "x")
    ax.set_ylabel("label source")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return Plot("pairs", "The pairs config: class balance and label sources",
                f"{report.pairs.total} pairs: positives from members that both passed, negatives "
                "from members proven wrong (verified) and from different functions over the same "
                "buffers (constructed).", _png(fig))


def evidence(report: Report) -> Plot | None:
    ev = report.evidence
    if not (ev.trial_kinds or ev.err_ratios or ev.relative_iqr):
        return None
    fig = _figure(14, 3.6)
    kinds_ax, err_ax, sens_ax, timing_ax = fig.subplots(1, 4, width_ratios=[0.8, 1, 1.2, 1])
    kinds = sorted(ev.trial_kinds)
    kinds_ax.bar(kinds, [ev.trial_kinds[k] for k in kinds], color="#3b6ea8")
    kinds_ax.tick_params(axis="x", labelsize=8)
    _counts_axis(kinds_ax)
    kinds_ax.set_ylabel("groups")
    kinds_ax.set_title("trial kinds run", fontsize=9)
    if ev.err_ratios:
        positive = [max(r, 1e-6) for r in ev.err_ratios]
        err_ax.hist(positive, bins=_log_bins(positive), color="#4c9a5b")
        err_ax.set_xscale("log")
        err_ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        _counts_axis(err_ax)
        err_ax.axvline(1.0, color=_FAIL_COLOUR, linestyle="--", label="bound")
        err_ax.legend(fontsize=7)
    err_ax.set_xlabel("max |err| / bound (passing rows)")
    err_ax.set_title("error against its bound", fontsize=9)
    keys = list(ev.sensitivity)
    sens_ax.barh(keys, [ev.sensitivity[k] for k in keys], color="#a55194")
    sens_ax.set_xscale("log")
    sens_ax.tick_params(axis="y", labelsize=7)
    sens_ax.set_xlabel("smallest relative error caught")
    sens_ax.set_title("sensitivity (weakest group)", fontsize=9)
    if ev.relative_iqr:
        timing_ax.hist([100 * r for r in ev.relative_iqr], bins=20, color="#d08c2f")
    timing_ax.set_xlabel("IQR / median time, %")
    _counts_axis(timing_ax)
    methods = ", ".join(f"{k} {v}" for k, v in sorted(ev.time_methods.items())) or "none"
    timing_ax.set_title(f"timing spread ({methods})", fontsize=9)
    for ax in (kinds_ax, err_ax, sens_ax, timing_ax):
        ax.grid(alpha=0.3)
    return Plot("evidence", "The verifier's evidence",
                "Trial kinds per group, each passing row's largest error over its bound, the "
                "smallest uniform relative error each op's bound catches, and the timing spread.",
                _png(fig))


def overview_plots(report: Report, knobs=KNOBS) -> list:
    """The across-groups plots, in page order (those with nothing to show are left out)."""
    made = [statuses(report), speedups(report), time_vs_knobs(report, knobs), time_vs_resources(report),
            features_vs_speed(report), pairs_balance(report), evidence(report)]
    return [p for p in made if p is not None]
