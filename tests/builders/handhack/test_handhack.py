"""Tests for the handhack source: the ring-buffer PTX edit, the Smith-Waterman reference and
its integer inputs, the built-in group, and ``ptxds add`` (which must change nothing in the
dataset folder when it rejects its input)."""
import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("triton")

from builders.base import BuildOptions  # noqa: E402
from ptxds.add import AddError, add_member  # noqa: E402
from builders.handhack.builder import MEMBERS, sw_problem  # noqa: E402
from builders.handhack.ptx_edit import PtxEditError, Ring, rings_to_shared  # noqa: E402
from dataset_spec.problems import get_op  # noqa: E402
from dataset_spec.store.shards import read_records  # noqa: E402
from ptx_tools import assemble  # noqa: E402
from ptxds.cli import cli  # noqa: E402
from ptxds.pipeline import run_build  # noqa: E402
from verify.trials.inputs import make_trial_inputs  # noqa: E402

GROUP = "handhack/smith_waterman/int32/P1024xM128xN128"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The first handhack work item (one group, sm_90a): the base and its edited members."""
    out = tmp_path_factory.mktemp("handhack")
    with pytest.MonkeyPatch.context() as patch:  # compile into a private Triton cache
        patch.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.mktemp("triton-cache")))
        summary = run_build("handhack", out, BuildOptions(archs=["sm_90a"], limit=1), jobs=1, progress=False)
    assert summary.rows_written == 1 + len(MEMBERS)
    return out


@pytest.fixture
def dataset(built, tmp_path):
    """A private copy of the built dataset, for tests that write to it."""
    import shutil
    copy = tmp_path / "ds"
    shutil.copytree(built, copy)
    return copy


def rows_by_name(root):
    return {r.name: r for r in read_records(root)}


def folder_digest(root) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(root).rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- the built-in group

def test_members_build_and_record_their_base(built):
    rows = rows_by_name(built)
    base = rows["sw_kernel_global"]
    assert {r.status for r in rows.values()} == {"built"}
    assert "ld.shared" not in base.ptx and base.launches[0].dynamic_smem == 0
    for member, (moved, maxnreg) in MEMBERS.items():
        row = rows[f"sw_kernel_{member}"]
        assert row.provenance["base_kernel_id"] == base.kernel_id
        assert row.variant["base_member"] == "global" and row.variant["rings_in_shared"] == list(moved)
        assert row.provenance["diff"].startswith("--- sw_kernel.global.ptx")
        assert "+.extern .shared" in row.provenance["diff"]
        args = row.launches[0].args
        assert [a.kind for a in args[3:6]] == ["null" if r in moved else "buffer"
                                               for r in ("h_ring", "e_ring", "f_ring")]
        assert {b.name for b in row.scratch}.isdisjoint(moved)
        assert row.launches[0].dynamic_smem >= 4 * 129 * 3
        assert (f".maxnreg {maxnreg}" in row.ptx) == (maxnreg is not None)


def test_edit_moves_every_ring_access_and_assembles(built):
    rows = rows_by_name(built)
    base, shared = rows["sw_kernel_global"], rows["sw_kernel_shared"]
    ring_ops = sum(shared.provenance["converted_accesses"].values())
    assert ring_ops >= 9  # 3 + 2 + 2 initialising stores, 5 loads and 3 stores per diagonal at least
    assert len(re.findall(r"\b(?:ld|st)\.global", base.ptx)) - ring_ops == \
        len(re.findall(r"\b(?:ld|st)\.global", shared.ptx))
    assert len(re.findall(r"\b(?:ld|st)\.shared", shared.ptx)) == ring_ops
    assert assemble(shared.ptx, "sm_90a").resources[0].entry == "sw_kernel"


def test_edit_fails_clearly_when_the_ptx_no_longer_matches(built):
    base = rows_by_name(built)["sw_kernel_global"]
    renamed = base.ptx.replace("[sw_kernel_param_3]", "[sw_kernel_param_2]")
    with pytest.raises(PtxEditError, match="expected one 64-bit ld.param of sw_kernel_param_3, found 0"):
        rings_to_shared(renamed, "sw_kernel", [Ring("sw_kernel_param_3", 1548)])
    with pytest.raises(PtxEditError, match="no .entry other_kernel"):
        rings_to_shared(base.ptx, "other_kernel", [Ring("sw_kernel_param_3", 1548)])
    # a pointer param whose loads are not ring accesses: query is read, never stored
    stored_as_value = re.sub(r"(ld\.param\.b64\s+(%rd\d+), \[sw_kernel_param_0\];)",
                             r"\1\n\tst.global.b64 [%rd11], \2;", base.ptx)
    assert stored_as_value != base.ptx
    with pytest.raises(PtxEditError, match="used outside address arithmetic"):
        rings_to_shared(stored_as_value, "sw_kernel", [Ring("sw_kernel_param_0", 512)])


# ---------------------------------------------------------------- reference and inputs

def smith_waterman_scalar(q, t, match, mismatch, gap_open, gap_extend):
    """Textbook O(M N) Smith-Waterman with affine gaps on Python ints: best score per query row."""
    neg = -10 ** 9
    m, n = len(q), len(t)
    H = [[0] * (n + 1) for _ in range(m + 1)]
    E = [[neg] * (n + 1) for _ in range(m + 1)]
    F = [[neg] * (n + 1) for _ in range(m + 1)]
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            E[i][j] = max(E[i][j - 1] - gap_extend, H[i][j - 1] - gap_open)
            F[i][j] = max(F[i - 1][j] - gap_extend, H[i - 1][j] - gap_open)
            s = match if q[i - 1] == t[j - 1] else mismatch
            H[i][j] = max(0, H[i - 1][j - 1] + s, E[i][j], F[i][j])
    return [max(row) for row in H[1:]]


def test_reference_matches_the_textbook_recurrence():
    problem = sw_problem(3, 9, 13)
    rng = np.random.default_rng(5)
    inputs = {"query": rng.integers(0, 4, (3, 9)).astype(float), "target": rng.integers(0, 4, (3, 13)).astype(float)}
    inputs["target"][2, 2:11] = inputs["query"][2]  # one exact match with a gap before it
    out = get_op("smith_waterman").reference(inputs, problem)["row_best"]
    p = problem.params
    for pair in range(3):
        want = smith_waterman_scalar(list(inputs["query"][pair]), list(inputs["target"][pair]),
                                     p["match"], p["mismatch"], p["gap_open"], p["gap_extend"])
        assert out[pair].tolist() == want
    assert out[2, -1] == 9 * p["match"]


def test_integer_scores_compare_exactly():
    problem = sw_problem(4, 16, 16)
    op = get_op("smith_waterman")
    ref = {"row_best": np.arange(64, dtype=float).reshape(4, 16)}
    bound = op.bounds({}, problem, ref)["row_best"]
    assert np.all(bound == 0.0)


def test_sequence_inputs_stay_in_the_alphabet_and_edge_trials_have_runs():
    problem = sw_problem(8, 64, 96)
    kinds = {}
    for trial in range(4):
        inputs = make_trial_inputs(problem, GROUP, trial)
        again = make_trial_inputs(problem, GROUP, trial)
        query = inputs.storage["query"]
        assert query.dtype == np.int32 and query.shape == (8, 64)
        assert set(np.unique(query)) <= {0, 1, 2, 3} and len(np.unique(query)) == 4
        assert np.array_equal(query, again.storage["query"])
        kinds[inputs.kind] = np.mean(query[:, 1:] == query[:, :-1])
    assert kinds["edge"] > 0.8 and kinds["normal"] < 0.4  # runs of one letter vs i.i.d. letters


# ---------------------------------------------------------------- ptxds add

def test_add_registers_a_hand_edited_ptx(dataset, tmp_path):
    rows = rows_by_name(dataset)
    edited = rows["sw_kernel_shared"].ptx.replace(".maxnreg 128", ".maxnreg 96")
    ptx = tmp_path / "sw_maxnreg96.ptx"
    ptx.write_text(edited)
    launch = tmp_path / "launch.yaml"
    launch.write_text(f"dynamic_smem: {rows['sw_kernel_shared'].launches[0].dynamic_smem}\n")
    record = add_member(dataset, GROUP, str(ptx), str(launch))
    after = rows_by_name(dataset)
    assert set(after) == set(rows) | {"sw_maxnreg96"}
    added = after["sw_maxnreg96"]
    base = rows["sw_kernel_global"]
    assert added.kernel_id == record.kernel_id and added.status == "built" and added.arch == "sm_90a"
    assert added.provenance["base_kernel_id"] == base.kernel_id == added.variant["base_kernel_id"]
    assert "+.maxnreg 96" in added.provenance["diff"] and "+.extern .shared" in added.provenance["diff"]
    assert added.launches[0].dynamic_smem == rows["sw_kernel_shared"].launches[0].dynamic_smem
    assert added.launches[0].grid == base.launches[0].grid and added.problem == base.problem
    assert added.resources and added.resources[0].registers > 0


@pytest.mark.parametrize("case, message", [
    ("malformed", "malformed PTX"),
    ("params", "has 12 args, the entry takes 14 params"),
    ("group", "group 'handhack/no/such/group' is not in the dataset"),
    ("launch", "unknown launch field(s) ['smem']"),
    ("ptxas", "AssemblyError"),
])
def test_add_rejects_bad_input_and_changes_nothing(dataset, tmp_path, case, message):
    base_ptx = rows_by_name(dataset)["sw_kernel_global"].ptx
    ptx, group, launch = base_ptx.replace("\t", " ") + "\n// edited\n", GROUP, None
    if case == "malformed":
        ptx = base_ptx.replace(".visible .entry sw_kernel(", ".visible .entry sw_kernel(\n", 1).rsplit("}", 1)[0]
    elif case == "params":
        launch_path = tmp_path / "launch.json"
        args = [a.__dict__ for a in rows_by_name(dataset)["sw_kernel_global"].launches[0].args][:12]
        launch_path.write_text(json.dumps({"args": args}))
        launch = str(launch_path)
    elif case == "group":
        group = "handhack/no/such/group"
    elif case == "launch":
        launch_path = tmp_path / "launch.json"
        launch_path.write_text('{"smem": 4096}')
        launch = str(launch_path)
    elif case == "ptxas":
        ptx = base_ptx.replace("add.s64", "add.s64.bogus", 1)
    path = tmp_path / "edited.ptx"
    path.write_text(ptx)
    before = folder_digest(dataset)
    with pytest.raises(AddError, match=re.escape(message)):
        add_member(dataset, group, str(path), launch)
    assert folder_digest(dataset) == before


def test_add_command_prints_one_error_line_and_leaves_the_folder(dataset, tmp_path):
    path = tmp_path / "edited.ptx"
    path.write_text(".version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry sw_kernel( {\n")
    before = folder_digest(dataset)
    result = CliRunner().invoke(cli, ["add", str(dataset), "--group", GROUP, "--ptx", str(path)])
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and result.output.count("\n") == 1
    assert folder_digest(dataset) == before
    help_text = CliRunner().invoke(cli, ["add", "--help"]).output
    assert "Example:" in help_text and "--launch" in help_text


def test_add_command_reports_the_new_member(dataset, tmp_path):
    path = tmp_path / "mine.ptx"
    path.write_text(rows_by_name(dataset)["sw_kernel_global"].ptx + "\n// a hand-made copy\n")
    result = CliRunner().invoke(cli, ["add", str(dataset), "--group", GROUP, "--ptx", str(path)])
    assert result.exit_code == 1  # same program and launch as the base: refused, not duplicated
    assert "already has this exact program and launch" in result.output
    path.write_text(rows_by_name(dataset)["sw_kernel_global"].ptx.replace(
        ".reqntid 128", ".reqntid 128\n.maxnreg 64"))
    result = CliRunner().invoke(cli, ["add", str(dataset), "--group", GROUP, "--ptx", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"added mine (sm_90a, kernel_id ") and "base member: sw_kernel_global" in result.output
