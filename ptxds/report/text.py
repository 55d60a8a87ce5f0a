"""The report's numbers as terminal text and as JSON (``ptxds info``): the same summary,
per-group fastest member and spread, failures, speed-ups, pairs balance and evidence that
the HTML page plots."""
from __future__ import annotations

import statistics

from ..finalize import failure_line
from .gather import Report


MAX_LISTED = 24  # more distinct values (an Inductor dataset's buffer shapes) are summarised


def _counts(counts: dict) -> str:
    """``value count`` pairs in value order; past MAX_LISTED values, the most common ones
    and how many others there are."""
    items = sorted(counts.items(), key=lambda kv: str(kv[0]))
    if len(items) > MAX_LISTED:
        common = sorted(sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))[:MAX_LISTED],
                        key=lambda kv: str(kv[0]))
        rest = len(items) - MAX_LISTED
        return ", ".join(f"{k} {v}" for k, v in common) + f" and {rest} more ({sum(counts.values())} in all)"
    return ", ".join(f"{k} {v}" for k, v in items) or "-"


def _quantiles(values: list) -> dict | None:
    if not values:
        return None
    values = sorted(values)
    return {"min": values[0], "median": statistics.median(values), "max": values[-1]}


def as_dict(report: Report) -> dict:
    """The numbers ``ptxds info --json`` prints (the build-time keys first, as before)."""
    s = report.summary
    out = {
        "rows": s.rows, "groups": s.groups,
        "members_per_group": {"min": s.members_min, "max": s.members_max},
        "sources": s.sources, "archs": s.archs, "statuses": s.statuses, "shapes": s.shapes,
        "group_ids": [g.group_id for g in report.groups],
        "build_failures": _build_failures(report),
    }
    if not s.verified:
        return out
    spreads = [g.spread for g in report.groups if g.spread]
    ev = report.evidence
    out.update({
        "gpus": s.gpus, "sm_clocks_mhz": {str(k): v for k, v in s.sm_clocks_mhz.items()},
        "drivers": s.drivers, "time_methods": s.time_methods, "toolchains": s.toolchains,
        "per_group": [{
            "group": g.group_id, "members": len(g.members),
            "passed": sum(m.status == "passed" for m in g.members),
            "fastest": g.fastest.name if g.fastest else None,
            "fastest_us": g.fastest.time_us_median if g.fastest else None,
            "spread": g.spread,
            "failures": [{"name": m.name, "status": m.status, "message": m.status_message} for m in g.failures],
        } for g in report.groups],
        "spread": _quantiles(spreads),
        "pairs": {f"{source} {label}": n for (source, label), n in report.pairs.counts.items()},
        "evidence": {
            "trial_kinds": ev.trial_kinds, "trials_per_row": {str(k): v for k, v in ev.trials_per_row.items()},
            "max_err_ratio": _quantiles(ev.err_ratios), "catches_rel_err": ev.sensitivity,
            "time_samples_median": ev.samples_median, "relative_iqr": _quantiles(ev.relative_iqr),
            "events_over_kernel_time": _quantiles(ev.events_over_kernel),
            "deterministic": ev.deterministic, "sanitizer": ev.sanitizer,
        },
    })
    return out


def _build_failures(report: Report) -> list:
    """Rows that did not build, with the compiler's message (the summary counts them only)."""
    return [{"group": g.group_id, "name": m.name, "arch": m.arch, "message": failure_line(m.status_message or "")}
            for g in report.groups for m in g.members if m.status == "build_failed"]


def _group_lines(report: Report) -> list:
    """One line per group of a dataset not verified yet: its id, members and statuses (the
    ids ``verify --groups`` and ``add --group`` take)."""
    width = max([len("group")] + [len(g.group_id) for g in report.groups]) + 2
    lines = ["", f"{'group':<{width}}{'members':>8}  statuses"]
    for g in report.groups:
        statuses = {}
        for m in g.members:
            statuses[m.status] = statuses.get(m.status, 0) + 1
        lines.append(f"{g.group_id:<{width}}{len(g.members):>8}  {_counts(statuses)}")
    return lines


def _failure_lines(report: Report) -> list:
    failures = _build_failures(report)
    if not failures:
        return []
    return ["", "build failures:"] + [f"  {f['group']} {f['name']} ({f['arch']}): {f['message']}" for f in failures]


def _fmt_quantiles(q: dict | None, fmt: str, suffix: str = "") -> str:
    if not q:
        return "-"
    return f"median {q['median']:{fmt}}{suffix} (min {q['min']:{fmt}}{suffix}, max {q['max']:{fmt}}{suffix})"


def format_text(report: Report) -> str:
    """Lines for a terminal: the build counts, then (verified datasets) the report's numbers."""
    s = report.summary
    lines = [
        f"{s.dataset}: {s.rows} rows in {s.groups} groups ({s.members_min}-{s.members_max} members each)",
        f"sources: {_counts(s.sources)}", f"archs: {_counts(s.archs)}", f"statuses: {_counts(s.statuses)}",
        f"shapes (groups): {_counts(s.shapes)}",
    ]
    if not s.verified:
        lines.append("not verified yet: run ptxds verify on a machine with a GPU for times and checks; "
                     "until then the dataset has no `pairs` config (load_dataset(DIR, 'pairs') fails)")
        return "\n".join(lines + _group_lines(report) + _failure_lines(report))
    data = as_dict(report)
    lines += [
        f"GPU: {_counts(s.gpus)}; SM clock MHz: {_counts(s.sm_clocks_mhz)}; driver: {_counts(s.drivers)}",
        "toolchains: " + "; ".join(f"{src}: {', '.join(tools)}" for src, tools in s.toolchains.items()),
    ]
    width = max(len("group"), *(len(g["group"]) for g in data["per_group"])) + 2
    lines += ["", f"{'group':<{width}}{'members':>8}{'passed':>8}{'fastest us':>12}{'spread':>8}  fastest member"]
    for g in data["per_group"]:
        fastest_us = f"{g['fastest_us']:.2f}" if g["fastest_us"] else "-"
        spread = f"{g['spread']:.2f}x" if g["spread"] else "-"
        lines.append(f"{g['group']:<{width}}{g['members']:>8}{g['passed']:>8}{fastest_us:>12}{spread:>8}  {g['fastest'] or '-'}")
    lines += _failure_lines(report)
    failures = [(g["group"], f) for g in data["per_group"] for f in g["failures"]]
    if failures:
        lines += ["", "failures:"]
        lines += [f"  {group} {f['name']}: {f['status']}: {f['message']}" for group, f in failures]
    ev = data["evidence"]
    lines += [
        "", f"spread (slowest/fastest) per group: {_fmt_quantiles(data['spread'], '.2f', 'x')}",
        f"pairs: {_counts(data['pairs'])}",
        f"trial kinds (groups): {_counts(ev['trial_kinds'])}; trials per row: {_counts(ev['trials_per_row'])}",
        f"max |err|/bound of passing rows: {_fmt_quantiles(ev['max_err_ratio'], '.3g')}",
        "smallest relative error caught (weakest group): "
        + (", ".join(f"{k} {v:.2e}" for k, v in ev["catches_rel_err"].items()) or "-"),
        f"timing: {_counts(s.time_methods)}; samples per row median {ev['time_samples_median'] or 0:g}; "
        f"IQR/median {_fmt_quantiles(ev['relative_iqr'], '.2%')}",
        f"events/kernel time: {_fmt_quantiles(ev['events_over_kernel_time'], '.2f', 'x')}",
        f"deterministic: {_counts(ev['deterministic'])}; sanitizer: {_counts(ev['sanitizer'])}",
    ]
    return "\n".join(lines)
