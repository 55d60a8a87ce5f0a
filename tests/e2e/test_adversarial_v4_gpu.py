"""The v4 adversarial suite on a real GPU: every group of tests/data/adversarial_v4 built for
sm_90a and verified in one run with timing on (a small time budget), and every member must
get exactly the status its manifest expects. Timing is part of the judgement here: no row
that failed has a time, every passing row carries a speed-of-light ratio no faster than the
roofline allows (sol_ratio <= 1.05), and a member that declares
variant["expect_time_like"] = <member> (a correct member with a shortcut the timing
protocol must not reward) takes at least 0.7x that member's median time. A table of every
row is printed before any assertion, so one failure shows them all."""
from __future__ import annotations

import pytest

from dataset_spec.store.shards import read_records
from test_adversarial_v4_build import build_suite  # noqa: E402  (tests/ is on sys.path)

pytestmark = pytest.mark.gpu
# Timed statuses: a row with any other status must have no time.
TIMED = ("passed", "unexercised")
SOL_LIMIT = 1.05       # roofline time / measured time; above 1 is faster than the hardware
TIME_LIKE_FLOOR = 0.7  # a shortcut member's median / its honest sibling's median


def _sol(row):
    return getattr(row, "sol_ratio", None)


def table(rows) -> str:
    lines = [f"{'group':28} {'name':32} {'expect':22} {'status':22} {'time_us':>10} {'sol':>7} message"]
    for row in sorted(rows, key=lambda r: (r.group_id, r.name)):
        time = f"{row.time_us_median:10.2f}" if row.time_us_median is not None else f"{'-':>10}"
        sol = f"{_sol(row):7.3f}" if _sol(row) is not None else f"{'-':>7}"
        lines.append(f"{row.group_id[:28]:28} {row.name[:32]:32} {row.variant.get('expect', ''):22} "
                     f"{str(row.status):22} {time} {sol} {(row.status_message or '')[:140]}")
    return "\n".join(lines)


def test_every_member_gets_its_expected_status_and_time(tmp_path):
    from verify import verify_dataset
    built = tmp_path / "built"
    build_suite(built)
    assert not [r.name for r in read_records(built) if r.status == "build_failed"]
    verify_dataset(built, tmp_path / "verified", kernel_timeout=30.0, progress=False, time_budget=0.1)
    rows = read_records(tmp_path / "verified")
    print("\n" + table(rows))
    assert len(rows) == len(read_records(built))

    problems = []
    for r in rows:
        if r.status != r.variant["expect"]:
            problems.append(f"{r.group_id} {r.name}: expected {r.variant['expect']}, got {r.status} "
                            f"({r.status_message})")
        if r.status not in TIMED and r.time_us_median is not None:
            problems.append(f"{r.group_id} {r.name}: status {r.status} but timed at {r.time_us_median} us")
        if r.status == "passed":
            if _sol(r) is None:
                problems.append(f"{r.group_id} {r.name}: passed without a sol_ratio")
            elif _sol(r) > SOL_LIMIT:
                problems.append(f"{r.group_id} {r.name}: passed with sol_ratio {_sol(r):.3f} > {SOL_LIMIT}")
    by_name = {(r.group_id, r.name): r for r in rows}
    for r in rows:
        like = r.variant.get("expect_time_like")
        if like is None:
            continue
        sibling = by_name.get((r.group_id, like))
        if sibling is None or r.time_us_median is None or sibling.time_us_median is None:
            problems.append(f"{r.group_id} {r.name}: no time to compare with {like}")
        elif r.time_us_median < TIME_LIKE_FLOOR * sibling.time_us_median:
            problems.append(f"{r.group_id} {r.name}: {r.time_us_median:.2f} us is below {TIME_LIKE_FLOOR} x "
                            f"{like}'s {sibling.time_us_median:.2f} us")
    assert not problems, "\n".join(problems)
