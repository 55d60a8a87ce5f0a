"""``ptxds report`` on a small verified dataset whose verifier columns come from a real GPU
run (tests/data/verified): every section and group on the page, the same numbers as the
shards and as ``ptxds info``, plots on the dataset card while they describe the shards, and
the page opened in headless Chromium with no console errors and a non-blank screenshot."""
import html
import io
import re
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pytest
from click.testing import CliRunner

from dataset_spec.store.card import write_card
from dataset_spec.store.shards import part_files, read_table
from ptxds.cli import cli

FIXTURE = Path(__file__).parents[1] / "data" / "verified" / "dataset"


def run_cli(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    dataset = tmp_path_factory.mktemp("report") / "ds"
    shutil.copytree(FIXTURE, dataset)
    result = run_cli("report", str(dataset))
    assert result.exit_code == 0, result.output
    return dataset


@pytest.fixture(scope="module")
def page(reported) -> str:
    return (reported / "report" / "index.html").read_text()


def _groups() -> dict:
    """group_id -> (fastest, slowest) passing median time, straight from the shards."""
    table = read_table(FIXTURE, "kernels", columns=["group_id", "status", "time_us_median"])
    passed = table.filter(pc.equal(table["status"], "passed")).to_pylist()
    times = {}
    for row in passed:
        times.setdefault(row["group_id"], []).append(row["time_us_median"])
    return {g: (min(t), max(t)) for g, t in times.items()}


def test_fixture_is_a_real_verified_dataset():
    rows = read_table(FIXTURE, "kernels", columns=["status", "gpu_name", "time_method", "source"]).to_pylist()
    assert {r["source"] for r in rows} == {"triton", "cutlass", "ptx"}
    assert {r["gpu_name"] for r in rows if r["status"] == "passed"} == {"NVIDIA H100 80GB HBM3"}
    assert {r["time_method"] for r in rows if r["status"] == "passed"} == {"cupti"}
    assert len({r["status"] for r in rows}) >= 5  # the adversarial members fail in many ways


def test_page_has_every_section_group_and_failure(page):
    for anchor in ("summary", "groups", "across", "pairs", "evidence"):
        assert f'id="{anchor}"' in page
    for group in _groups():
        assert html.escape(group) in page
    failures = read_table(FIXTURE, "kernels", columns=["name", "status", "status_message"]).to_pylist()
    failures = [r for r in failures if r["status"] != "passed"]
    assert failures
    for row in failures:
        assert html.escape(row["status_message"]) in page, row["name"]
    assert "NVIDIA H100 80GB HBM3" in page and "cupti" in page
    images = re.findall(r'<img src="data:image/png;base64,', page)
    assert len(images) == 7 + len(_groups())  # the across-group plots and one per group
    external = re.findall(r'(?:src|href)="(?!data:|#)([^"]*)"', page)
    assert external == [], "the page must load nothing from outside itself"
    assert "<script" not in page


def test_page_and_info_show_the_shards_numbers(page, reported):
    info = run_cli("info", str(reported))
    assert info.exit_code == 0, info.output
    lines = {line.split()[0]: line for line in info.output.splitlines() if line.startswith(tuple(_groups()))}
    for group, (fastest, slowest) in _groups().items():
        row = page[page.index(f">{html.escape(group)}</a>"):]
        row = row[: row.index("</tr>")]
        numbers = [f"{fastest:.2f}"] + ([f"{slowest / fastest:.2f}x"] if slowest > fastest else [])
        for number in numbers:
            assert f">{number}<" in row, (group, number)
            assert f" {number} " in lines[group] + " ", (group, number, lines[group])
    assert "writes_past_end: out_of_bounds_write: trial 0: wrote 256 guard byte(s)" in info.output


def test_card_shows_the_plots_until_the_shards_change(reported):
    card = (reported / "README.md").read_text()
    assert "## Plots" in card
    linked = re.findall(r"!\[[^\]]*\]\((plots/[^)]+\.png)\)", card)
    assert len(linked) == 7 + len(_groups())
    import matplotlib.image
    for link in linked:
        pixels = matplotlib.image.imread(reported / link)
        assert pixels.shape[0] > 100 and pixels.shape[1] > 300, link
    # a later verify into the folder adds parts: the card drops the plots until report runs again
    changed = reported.parent / "changed"
    shutil.copytree(reported, changed)
    part = part_files(changed, "kernels")[0]
    shutil.copy(part, part.with_name("part-9999999999999-1-00001.parquet"))
    write_card(changed)
    assert "## Plots" not in (changed / "README.md").read_text()


def test_report_errors_are_one_line(reported, tmp_path):
    bad_knob = run_cli("report", str(reported), "--knob", "nope", "--no-card", "--out", str(tmp_path / "r"))
    assert bad_knob.exit_code == 1
    assert bad_knob.output == "Error: unknown knob 'nope'; use one of tile, stages, warps, schedule\n"
    empty = run_cli("report", str(tmp_path))
    assert empty.exit_code == 1
    assert empty.output == (f"Error: {tmp_path} is not a dataset folder (it has no kernels/<split>/part-*.parquet); "
                            "make one with: ptxds build --source triton --out DIR\n")


def _non_blank(png: bytes) -> float:
    """The share of pixels that differ from the page background."""
    import matplotlib.image
    import numpy as np
    pixels = matplotlib.image.imread(io.BytesIO(png))[..., :3]
    background = pixels[0, 0]
    return float(np.mean(np.any(np.abs(pixels - background) > 0.05, axis=-1)))


def test_page_opens_in_headless_chromium_without_console_errors(reported, tmp_path):
    from headless_chromium import find_chromium, visit
    if find_chromium() is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium; .ci/run installs it)")
    # a control page shows that a console error, a failed load and a blank screen are caught
    probe = tmp_path / "probe.html"
    probe.write_text('<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body>'
                     '<img src="missing.png"><script>console.error("probe")</script></body></html>')
    control = visit(probe)
    assert "console.error: probe" in control.problems
    assert any("missing.png" in p for p in control.problems)
    assert _non_blank(control.screenshot_png) < 0.01

    seen = visit(reported / "report" / "index.html")
    assert seen.problems == [] and seen.console == []
    assert _non_blank(seen.screenshot_png) > 0.05
    assert seen.height > 3000  # every section laid out, not only the top


def test_long_count_lists_are_summarised():
    from ptxds.report.text import MAX_LISTED, _counts
    few = {"a": 1, "b": 2}
    assert _counts(few) == "a 1, b 2"
    many = {f"s{i:03d}": (100 if i < 3 else 1) for i in range(MAX_LISTED + 10)}
    line = _counts(many)
    assert line.endswith(f"and 10 more ({3 * 100 + MAX_LISTED + 7} in all)")
    assert "s000 100" in line and "s002 100" in line
