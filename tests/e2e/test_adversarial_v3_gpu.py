"""The v3 adversarial suite on a real GPU: every group of tests/data/adversarial_v3 verified
in one run with the default trial kinds, and every member must get exactly the status its
manifest expects (correct members `passed` beside broken ones). Members marked
variant["sanitize"] hold a defect only a memory checker sees; their group is verified again
with --sanitize and they are judged there. A table of every row (name, expect, status,
message) is printed before any assertion, so one failure shows them all."""
from __future__ import annotations

from pathlib import Path

import pytest

from builders.base import BuildOptions
from dataset_spec.store.shards import read_records
from ptxds.pipeline import run_build

pytestmark = pytest.mark.gpu
SUITE = Path(__file__).parents[1] / "data" / "adversarial_v3"
MANIFESTS = sorted(SUITE.glob("*.yaml"))
SANITIZED_GROUPS = "ptx/adv3_*memcheck*"


def table(rows) -> str:
    lines = [f"{'group':34} {'name':26} {'expect':20} {'status':20} message"]
    for row in sorted(rows, key=lambda r: (r.group_id, r.name)):
        lines.append(f"{row.group_id[:34]:34} {row.name:26} {row.variant.get('expect', ''):20} "
                     f"{str(row.status):20} {(row.status_message or '')[:160]}")
    return "\n".join(lines)


def mismatches(rows, judged) -> list:
    return [f"{r.group_id} {r.name}: expected {r.variant['expect']}, got {r.status} ({r.status_message})"
            for r in rows if judged(r) and r.status != r.variant["expect"]]


def test_every_member_gets_its_expected_status(tmp_path):
    from verify import verify_dataset
    built = tmp_path / "built"
    for manifest in MANIFESTS:
        run_build("ptx", built, BuildOptions(archs=["sm_90a"], extra={"manifest": str(manifest)}),
                  jobs=2, progress=False)
    assert not [r.name for r in read_records(built) if r.status == "build_failed"]
    verify_dataset(built, tmp_path / "verified", kernel_timeout=20.0, progress=False, time_budget=0.05)
    rows = read_records(tmp_path / "verified")
    verify_dataset(built, tmp_path / "sanitized", groups=SANITIZED_GROUPS, kernel_timeout=60.0,
                   progress=False, time_budget=0.05, sanitize=True)
    sanitized = read_records(tmp_path / "sanitized")
    print("\n" + table(rows) + "\n\nunder --sanitize:\n" + table(sanitized))
    assert len(rows) == len(read_records(built))
    wrong = mismatches(rows, lambda r: not r.variant.get("sanitize"))
    # Under --sanitize every member of those groups is judged, the correct ones included.
    wrong += mismatches(sanitized, lambda r: True)
    assert not wrong, "\n".join(wrong)
    assert any(r.variant.get("sanitize") for r in sanitized)
