"""One static HTML page from a gathered report and its plots: tables as HTML, plots as PNG
data URIs, inline CSS, no script and no network."""
from __future__ import annotations

import base64
import json
from html import escape

from .gather import Group, Report
from .plots import Plot
from .text import as_dict

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 0 24px 48px; color: #222; }
h1 { font-size: 22px; margin: 24px 0 4px; } h2 { border-bottom: 1px solid #ccc; margin-top: 36px; }
h3 { font-size: 15px; margin: 28px 0 6px; font-family: ui-monospace, monospace; }
table { border-collapse: collapse; margin: 8px 0; } td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; display: block; margin: 8px 0; } .caption { color: #555; font-size: 12px; margin-top: 0; }
.fail { color: #a33; } .diff { background: #fff3cd; } .muted { color: #777; }
nav a { margin-right: 12px; } code, .mono { font-family: ui-monospace, monospace; font-size: 12px; }
.msg { word-break: break-word; font-size: 12px; }
table.knobs { table-layout: fixed; width: 100%; } table.knobs td, table.knobs th { word-break: break-all; }
table.knobs td:first-child, table.knobs th:first-child { width: 22%; } details { margin: 4px 0 8px; color: #444; }
"""


def _table(header: list, rows: list, numeric=()) -> str:
    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            cls = ' class="num"' if i in numeric else ""
            cells.append(f"<td{cls}>{cell}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _counts(counts: dict) -> str:
    return escape(", ".join(f"{k}: {v}" for k, v in sorted(counts.items(), key=lambda kv: str(kv[0]))) or "-")


def _figure(plot: Plot) -> str:
    data = base64.b64encode(plot.png).decode("ascii")
    return (f'<img src="data:image/png;base64,{data}" alt="{escape(plot.title)}">'
            f'<p class="caption">{escape(plot.caption)}</p>')


def _summary(report: Report) -> str:
    s = report.summary
    rows = [
        ("dataset", escape(s.dataset)),
        ("rows (members)", f"{s.rows}"),
        ("groups", f"{s.groups} ({s.members_min}-{s.members_max} members each)"),
        ("sources", _counts(s.sources)), ("archs", _counts(s.archs)),
        ("shapes (groups)", _counts(s.shapes)), ("statuses", _counts(s.statuses)),
        ("GPU", _counts(s.gpus)), ("SM clock, MHz (timed rows)", _counts(s.sm_clocks_mhz)),
        ("driver", _counts(s.drivers)), ("timing method", _counts(s.time_methods)),
    ]
    rows += [(f"toolchain: {escape(src)}", escape(", ".join(tools))) for src, tools in s.toolchains.items()]
    return _table(["", ""], [(f"<b>{k}</b>", v) for k, v in rows])


def _group_table(report: Report) -> str:
    rows = []
    for g in report.groups:
        fastest = g.fastest
        rows.append([f'<a href="#{_anchor(g)}" class="mono">{escape(g.group_id)}</a>', escape(g.op), escape(g.shape),
                     len(g.members), sum(m.status == "passed" for m in g.members),
                     f'<span class="fail">{len(g.failures)}</span>' if g.failures else "0",
                     f"{fastest.time_us_median:.2f}" if fastest else "-",
                     f"{g.spread:.2f}x" if g.spread else "-"])
    return _table(["group", "op", "shape", "members", "passed", "failed", "fastest, us", "slowest/fastest"],
                  rows, numeric=(3, 4, 5, 6, 7))


def _anchor(group: Group) -> str:
    return "g-" + "".join(c if c.isalnum() else "-" for c in group.group_id)


def _value(value) -> str:
    return escape(value if isinstance(value, str) else json.dumps(value, sort_keys=True))


def _knobs_side_by_side(group: Group) -> str:
    fastest, slowest = group.fastest, group.slowest
    if fastest is None or slowest is None or fastest is slowest:
        return ""
    keys = sorted(set(fastest.variant) | set(slowest.variant))
    differ = [k for k in keys if fastest.variant.get(k) != slowest.variant.get(k)]
    same = [k for k in keys if k not in differ]
    row = lambda key, a, b, cls="": (f'<tr{cls}><td class="mono">{escape(key)}</td><td class="mono">{_value(a)}</td>'
                                     f'<td class="mono">{_value(b)}</td></tr>')
    rows = [row(k, fastest.variant.get(k), slowest.variant.get(k), ' class="diff"') for k in differ]
    for label, attr in (("registers", "registers"), ("shared memory, bytes", "shared_bytes"), ("spills, bytes", "spills")):
        a, b = getattr(fastest, attr), getattr(slowest, attr)
        rows.append(f'<tr{" class=diff" if a != b else ""}><td><i>{label}</i></td><td class="num">{a}</td>'
                    f'<td class="num">{b}</td></tr>')
    head = (f'<tr><th>knob</th><th>fastest, {fastest.time_us_median:.2f} us<br><span class="mono">'
            f"{escape(fastest.name)} [{fastest.arch}]</span></th><th>slowest, {slowest.time_us_median:.2f} us"
            f'<br><span class="mono">{escape(slowest.name)} [{slowest.arch}]</span></th></tr>')
    table = f'<table class="knobs">{head}{"".join(rows)}</table>'
    if same:
        table += (f"<details><summary>{len(same)} knobs the same in both</summary><table class=\"knobs\">"
                  + "".join(row(k, fastest.variant.get(k), slowest.variant.get(k)) for k in same) + "</table></details>")
    return f"<p>The fastest and slowest members: the knobs that differ, and ptxas resources.</p>{table}"


def _group_section(group: Group, plot: Plot | None) -> str:
    parts = [f'<h3 id="{_anchor(group)}">{escape(group.group_id)}</h3>']
    fastest = group.fastest
    passed = sum(m.status == "passed" for m in group.members)
    line = f"{escape(group.op)}, {escape(group.dtype)}, shape {escape(group.shape)}; {passed} of {len(group.members)} members passed"
    if fastest:
        line += (f"; fastest <b>{escape(fastest.name)}</b> [{fastest.arch}] at {fastest.time_us_median:.2f} us"
                 f" (IQR {fastest.time_us_iqr or 0:.2f}, min {fastest.time_us_min or 0:.2f})")
    if group.spread:
        line += f"; spread slowest/fastest <b>{group.spread:.2f}x</b>"
    parts.append(f"<p>{line}.</p>")
    if plot is not None:
        parts.append(_figure(plot))
    if group.failures:
        rows = [[escape(m.name), f'<span class="fail">{escape(m.status)}</span>', escape(m.arch),
                 f'<span class="msg">{escape(m.status_message)}</span>'] for m in group.failures]
        parts.append("<p>Failures:</p>" + _table(["member", "status", "arch", "message"], rows))
    parts.append(_knobs_side_by_side(group))
    return "\n".join(parts)


def _evidence(report: Report) -> str:
    ev = as_dict(report).get("evidence") or {}
    rows = [
        ("trial kinds (groups)", _counts(report.evidence.trial_kinds)),
        ("trials per row", _counts(report.evidence.trials_per_row)),
        ("timing method (timed rows)", _counts(report.evidence.time_methods)),
        ("samples per timed row, median", escape(f"{report.evidence.samples_median or 0:g}")),
        ("deterministic reruns", _counts(report.evidence.deterministic)),
        ("compute-sanitizer", _counts(report.evidence.sanitizer)),
    ]
    for key, label, fmt in (("max_err_ratio", "max |err| / bound, passing rows", ".3g"),
                            ("relative_iqr", "IQR / median time", ".2%"),
                            ("events_over_kernel_time", "CUDA-event time / kernel time", ".2f")):
        q = ev.get(key)
        if q:
            rows.append((label, f"median {q['median']:{fmt}} (min {q['min']:{fmt}}, max {q['max']:{fmt}})"))
    table = _table(["", ""], [(f"<b>{k}</b>", v) for k, v in rows])
    bounds = _table(["op", "error bound recorded by the verifier (first group)"],
                    [[escape(op), f'<span class="mono">{escape(text)}</span>'] for op, text in report.evidence.error_bounds.items()])
    sensitivity = _table(["op, output dtype", "smallest uniform relative error caught (weakest group)"],
                         [[escape(k), f"{v:.2e}"] for k, v in report.evidence.sensitivity.items()], numeric=(1,))
    return table + bounds + sensitivity


def render_page(report: Report, overview: list, group_plots: dict, title: str) -> str:
    """The whole page; ``overview`` are the across-group plots, ``group_plots`` group_id -> Plot."""
    by_name = {p.name: p for p in overview}
    figure = lambda name: _figure(by_name[name]) if name in by_name else '<p class="muted">nothing to plot</p>'
    s = report.summary
    sections = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="muted">{s.rows} members in {s.groups} groups; made by <code>ptxds report</code>.</p>',
        '<nav><a href="#summary">summary</a><a href="#groups">groups</a><a href="#across">across groups</a>'
        '<a href="#pairs">pairs</a><a href="#evidence">evidence</a></nav>',
        '<h2 id="summary">Summary</h2>', _summary(report), figure("statuses"),
    ]
    if not s.verified:
        sections.append('<p class="fail">This dataset is not verified yet: run <code>ptxds verify</code> '
                        "on a machine with a GPU for times, failures and evidence.</p>")
    sections += ['<h2 id="groups">Groups</h2>', _group_table(report), figure("speedups")]
    shown = [g for g in report.groups if g.group_id in group_plots]
    if len(shown) < len(report.groups):
        sections.append(f'<p class="muted">Member plots for {len(shown)} of {len(report.groups)} groups: '
                        "groups with no timed member and no failure, and those beyond --max-groups, "
                        "are in the table above only.</p>")
    sections += [_group_section(g, group_plots.get(g.group_id)) for g in shown]
    sections += ['<h2 id="across">Across groups</h2>', figure("time-vs-knobs"), figure("time-vs-resources"),
                 figure("features-vs-speed"),
                 '<h2 id="pairs">The pairs config</h2>', figure("pairs"),
                 _table(["label source", "label", "pairs"],
                        [[escape(src), escape(label), n] for (src, label), n in report.pairs.counts.items()], numeric=(2,)),
                 '<h2 id="evidence">The verifier\'s evidence</h2>', figure("evidence"), _evidence(report)]
    body = "\n".join(sections)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="icon" href="data:,"><title>{escape(title)}</title><style>{_CSS}</style></head>'
            f"<body>\n{body}\n</body></html>\n")
