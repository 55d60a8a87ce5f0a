"""A new user's second hour: no command replaces a file ptxds did not write, a damaged
folder or a missing extra is one line naming the fix, and no outcome is silent (a build
whose every item failed, rows that did not build and why, a build stopped by SIGTERM, an
option that was ignored)."""
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from builders.triton import TritonBuilder
from dataset_spec.store.card import COLUMNS, write_card
from dataset_spec.model import SCHEMA_VERSION
from dataset_spec.schema import KERNELS_SCHEMA
from dataset_spec.store.shards import part_files, read_records
from ptxds.cli import cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "verified" / "dataset"
MANIFESTS = ROOT / "tests" / "data" / "manifests"


def run_cli(*args, **kwargs):
    return CliRunner(**kwargs).invoke(cli, [str(a) for a in args], catch_exceptions=False)


def error_line(result) -> str:
    """The last line of the output: click prints usage lines before a usage error's."""
    return result.output.strip().splitlines()[-1]


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture()
def dataset(tmp_path):
    out = tmp_path / "ds"
    shutil.copytree(FIXTURE, out)
    return out


@pytest.fixture()
def current(dataset):
    """The fixture's rows as the current schema writes them (the fixture is schema 2)."""
    for path in part_files(dataset, "kernels"):
        table = pq.read_table(path)
        version = pa.array([SCHEMA_VERSION] * table.num_rows, pa.int32())
        pq.write_table(table.set_column(table.schema.get_field_index("schema_version"), "schema_version", version),
                       path)
    return dataset


@pytest.fixture()
def built(tmp_path):
    """A small built dataset with real PTX: the manifest of a by-value struct kernel."""
    out = tmp_path / "built"
    result = run_cli("build", "--source", "ptx", "--manifest", MANIFESTS / "ok_blob.yaml", "--jobs", "1", "--silent",
                     "--out", out)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture()
def own_readme(tmp_path):
    """A folder that is not a dataset and holds the user's own README.md."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "README.md").write_text("# my project\n\nnotes I keep\n")
    return folder


# ---- 1-2. nothing overwritten that ptxds did not write -------------------------------------

def test_resplit_of_a_folder_that_is_not_a_dataset_changes_nothing(own_readme):
    before = snapshot(own_readme)
    result = run_cli("resplit", own_readme)
    assert result.exit_code == 1
    assert error_line(result).startswith(f"Error: {own_readme} is not a dataset folder")
    assert snapshot(own_readme) == before


def test_build_into_a_folder_with_its_own_readme_is_refused(own_readme):
    before = snapshot(own_readme)
    result = run_cli("build", "--source", "triton", "--arch", "sm_80", "--limit", "1", "--silent",
                     "--out", own_readme)
    assert result.exit_code == 1
    assert result.output.strip() == (f"Error: {own_readme / 'README.md'} was not written by ptxds, and a dataset "
                                     "folder's README.md is its card; give a new or empty folder (or move that "
                                     "README.md away)")
    assert snapshot(own_readme) == before


def test_merge_into_a_folder_with_its_own_readme_is_refused(own_readme):
    before = snapshot(own_readme)
    result = run_cli("merge", FIXTURE, "--out", own_readme)
    assert result.exit_code == 1
    assert "was not written by ptxds" in error_line(result)
    assert snapshot(own_readme) == before


def test_publish_keeps_a_readme_it_did_not_write(dataset):
    """The library refuses too, whoever calls it; a ptxds card is rewritten as before."""
    from dataset_spec.store.card import ForeignReadmeError
    from dataset_spec.store.dataset import Dataset
    write_card(dataset)  # a card ptxds wrote: replaced freely
    (dataset / "README.md").write_text("mine\n")
    with pytest.raises(ForeignReadmeError):
        Dataset(dataset).publish()
    with pytest.raises(ForeignReadmeError):
        write_card(dataset)
    assert (dataset / "README.md").read_text() == "mine\n"


# ---- 3. a damaged part file is named, with the way back -----------------------------------

@pytest.mark.parametrize("command", ["info", "resplit", "rewrite", "merge", "verify", "build"])
def test_a_truncated_part_file_is_named(dataset, tmp_path, command):
    damaged = part_files(dataset, "kernels")[0]
    damaged.write_bytes(damaged.read_bytes()[:1000])
    args = {"info": ["info", dataset], "resplit": ["resplit", dataset], "rewrite": ["rewrite", dataset],
            "merge": ["merge", dataset, "--out", tmp_path / "merged"],
            "verify": ["verify", dataset, "--out", tmp_path / "v"],
            "build": ["build", "--source", "triton", "--arch", "sm_80", "--limit", "1", "--silent", "--out", dataset]}
    result = run_cli(*args[command])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: {damaged} is not a whole Parquet file (Parquet magic bytes not found in footer. Either the file "
        "is corrupted or this is not a parquet file.); delete it and run the same ptxds build (or verify) again: "
        "it resumes and writes that file's rows anew"]


def test_an_empty_part_file_is_named(dataset):
    damaged = part_files(dataset, "kernels")[-1]
    damaged.write_bytes(b"")
    result = run_cli("info", dataset)
    assert result.exit_code == 1
    assert error_line(result).startswith(f"Error: {damaged} is not a whole Parquet file (")


# ---- 4. a missing extra is one line, for dry runs too -------------------------------------

@pytest.mark.parametrize("source", ["cutlass", "cutlass-conv"])
def test_cutlass_dry_run_without_cutlass_library_names_the_extra(tmp_path, monkeypatch, source):
    for name in [n for n in sys.modules if n == "cutlass_library" or n.startswith("cutlass_library.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "cutlass_library", None)  # as if the extra were not installed
    result = run_cli("build", "--source", source, "--dry-run", "--out", tmp_path / "c")
    assert result.exit_code == 1
    assert result.output.strip() == (f"Error: source {source!r} needs the Python package 'cutlass_library'; "
                                     "install it with pip install 'ptxds[cutlass]'")


# ---- 5. a folder that cannot be written ----------------------------------------------------

def test_out_under_a_file_is_refused_before_any_work(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = run_cli("build", "--source", "triton", "--arch", "sm_80", "--limit", "1", "--silent",
                     "--out", blocker / "d")
    assert result.exit_code == 1
    assert result.output.strip() == f"Error: cannot write to --out {blocker / 'd'}: Not a directory; " \
                                    "give a folder you can write"


def test_a_full_disk_is_one_line(tmp_path, monkeypatch):
    import dataset_spec.store.shards as shards

    def full(table, path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))
    monkeypatch.setattr(shards, "_atomic_write_table", full)
    result = run_cli("build", "--source", "triton", "--arch", "sm_80", "--limit", "1", "--silent", "--jobs", "1",
                     "--out", tmp_path / "d")
    assert result.exit_code == 1
    line = error_line(result)
    assert line.startswith("Error: no space left on the device of ") and "part-" in line
    assert line.endswith("free some space and run the same command again (a build or verify resumes where it "
                         "stopped)")
    assert "Traceback" not in result.output


# ---- 6 and 10. add: a launch field of the wrong type, ptxas's own message ------------------

def _member(dataset: Path):
    return next(r for r in read_records(dataset) if r.status == "built" and r.arch == "sm_80")


def test_add_launch_with_a_word_for_a_number(built, tmp_path):
    dataset = built
    member = _member(dataset)
    ptx = tmp_path / "edit.ptx"
    ptx.write_text(member.ptx)
    launch = tmp_path / "launch.yaml"
    launch.write_text("dynamic_smem: lots\n")
    before = snapshot(dataset)
    result = run_cli("add", dataset, "--group", member.group_id, "--ptx", ptx, "--launch", launch)
    assert result.exit_code == 1
    assert result.output.strip() == f"Error: --launch {launch}: dynamic_smem must be a number of bytes, e.g. 4096, " \
                                    "got 'lots'"
    assert snapshot(dataset) == before


def test_add_with_a_misspelt_instruction_shows_ptxas_line(built, tmp_path):
    dataset = built
    member = _member(dataset)
    ptx = tmp_path / "typo.ptx"
    ptx.write_text(member.ptx.replace("ld.global", "ld.glbal", 1))
    line_no = next(i for i, line in enumerate(ptx.read_text().splitlines(), 1) if "ld.glbal" in line)
    rows = len(read_records(dataset))
    result = run_cli("add", dataset, "--group", member.group_id, "--ptx", ptx)
    assert result.exit_code == 1
    line = error_line(result)
    assert line.startswith(f"Error: {ptx}: AssemblyError: ptxas failed (exit 255): ptxas ")
    assert f"line {line_no}; error : Unknown modifier '.glbal'" in line
    assert len(read_records(dataset)) == rows  # nothing added


# ---- 7. shapes given as a source option count ----------------------------------------------

def test_shapes_given_as_an_option_or_in_a_file_are_used(tmp_path, monkeypatch):
    import builders
    seen = []

    def capture(source, values, shapes):
        seen.append(shapes)
        raise builders.OptionError("captured")
    monkeypatch.setattr(builders, "resolve_source_options", capture)
    run_cli("build", "--source", "triton", "--out", tmp_path / "d", "--option", "shapes=llm")
    options = tmp_path / "opts.yaml"
    options.write_text("shapes: sweep\n")
    run_cli("build", "--source", "triton", "--out", tmp_path / "d", "--options", options)
    run_cli("build", "--source", "triton", "--out", tmp_path / "d", "--options", options, "--shapes", "sweep")
    assert seen == ["llm", "sweep", "sweep"]
    result = run_cli("build", "--source", "triton", "--out", tmp_path / "d", "--options", options, "--shapes", "llm")
    assert result.exit_code == 2
    assert error_line(result) == "Error: --shapes llm and the option shapes=sweep disagree; give one"


# ---- 8. a build whose every item failed ----------------------------------------------------

def test_a_build_whose_every_item_failed_is_an_error_and_leaves_nothing(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1}')
    out = tmp_path / "m"
    result = run_cli("build", "--source", "mirage", "--mugraphs", bad, "--arch", "sm_80", "--jobs", "1",
                     "--silent", "--out", out)
    assert result.exit_code == 1
    assert error_line(result).startswith("Error: every work item failed (1), nothing was written; the first: "
                                         "bad.json: MirageInputError: bad.json: not a muGraph list")
    assert not out.exists()


def test_sass_without_nvdisasm_names_the_sass_extra(tmp_path):
    from ptx_tools import find_tool
    cuda = tmp_path / "cuda"
    (cuda / "bin").mkdir(parents=True)
    (cuda / "bin" / "ptxas").symlink_to(find_tool("ptxas"))
    result = run_cli("build", "--source", "triton", "--arch", "sm_80", "--limit", "1", "--sass", "--silent",
                     "--out", tmp_path / "d", env={"PTXDS_CUDA_HOME": str(cuda)})
    assert result.exit_code == 1
    assert result.output.strip() == "Error: --sass needs nvdisasm, which the sass extra installs: " \
                                    "pip install 'ptxds[sass]'"
    assert not (tmp_path / "d").exists()


# ---- 9. rows that did not build say why, in the summary and in info ------------------------

def test_build_summary_and_info_say_why_rows_did_not_build(tmp_path):
    out = tmp_path / "d"
    result = run_cli("build", "--source", "ptx", "--manifest", MANIFESTS / "compile_error.yaml", "--arch", "sm_80",
                     "--jobs", "1", "--silent", "--out", out)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = lines.index("why rows did not build (status_message; `ptxds info DIR` lists them again):")
    reasons = lines[at + 1:at + 3]
    assert any(r.strip().startswith("1 x nvcc failed (exit 1): ") and "error" in r for r in reasons), reasons
    assert any("launches[0]" in r and "3 args" in r for r in reasons), reasons
    info = run_cli("info", out)
    assert info.exit_code == 0
    assert "build failures:" in info.output
    assert re.search(r"ptx/bad_case wrong_arg_count \(sm_80\): .*: 3 args but entry", info.output), info.output
    data = json.loads(run_cli("info", out, "--json").output)
    assert {f["name"] for f in data["build_failures"]} == {"does_not_compile", "wrong_arg_count"}


# ---- 12. a build stopped by SIGTERM --------------------------------------------------------

@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals")
def test_sigterm_leaves_a_loadable_folder_that_info_calls_incomplete(tmp_path):
    out = tmp_path / "d"
    proc = subprocess.Popen([sys.executable, "-m", "ptxds", "build", "--source", "triton", "--arch", "sm_80,sm_90a",
                             "--jobs", "2", "--silent", "--flush-rows", "4", "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 180
    while time.time() < deadline and not part_files(out, "kernels") and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, "the build ended before it could be stopped"
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr
    assert stderr.strip().splitlines()[-1] == "Error: interrupted; run the same command again to resume"
    assert "Traceback" not in stderr
    card = (out / "README.md").read_text()
    assert "configs:\n- config_name: kernels" in card
    info = run_cli("info", out)
    assert info.output.startswith("INCOMPLETE: a build into this folder did not finish (or is still running): "
                                  "run `ptxds build --source triton")
    assert json.loads(run_cli("info", out, "--json").output)["incomplete"]


def test_a_finished_build_is_not_called_incomplete(dataset):
    result = run_cli("info", dataset)
    assert result.exit_code == 0 and "INCOMPLETE" not in result.output
    assert json.loads(run_cli("info", dataset, "--json").output)["incomplete"] is None


# ---- 13. info lists the group ids other commands take --------------------------------------

def test_info_lists_group_ids(dataset):
    groups = sorted({r.group_id for r in read_records(dataset)})
    text = run_cli("info", dataset).output
    assert all(re.search(rf"^{re.escape(g)} +\d+", text, re.M) for g in groups), text
    assert sorted(json.loads(run_cli("info", dataset, "--json").output)["group_ids"]) == groups


def test_info_of_an_unverified_dataset_lists_group_ids(dataset):
    for path in part_files(dataset, "kernels"):
        table = pq.read_table(path)
        status = pa.array(["built"] * table.num_rows)
        pq.write_table(table.set_column(table.schema.get_field_index("status"), "status", status), path)
    text = run_cli("info", dataset).output
    for group in {r.group_id for r in read_records(dataset)}:
        assert re.search(rf"^{re.escape(group)} +\d+  built \d+$", text, re.M), text


# ---- 14. rows of an older schema -------------------------------------------------------------

@pytest.fixture()
def schema2(dataset):
    """The fixture as an older ptxds wrote it: schema version 2, no trial_errors or witness."""
    for path in part_files(dataset, "kernels"):
        table = pq.read_table(path)
        assert set(table.column("schema_version").to_pylist()) == {2}
        assert "trial_errors" not in table.schema.names and "witness" not in table.schema.names
    return dataset


def test_show_witness_on_an_older_schema_says_why(schema2):
    wrong = next(r for r in read_records(schema2) if r.status == "wrong_result")
    result = run_cli("show-witness", schema2, wrong.kernel_id)
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"Error: row {wrong.kernel_id} was written in schema version 2, which has no witness column (added in "
        f"version 4); verify the dataset again (ptxds verify {schema2} --out NEW) to record witnesses")


def test_resplit_of_an_older_schema_says_so_in_the_card(schema2):
    result = run_cli("resplit", schema2)
    assert result.exit_code == 0, result.output
    card = (schema2 / "README.md").read_text()
    rows = len(read_records(schema2))
    assert f"Rows of an older schema: {rows} of version 2 (current: {SCHEMA_VERSION}); they lack the columns " \
           "added since (`trial_errors` and `witness` came in version 4), which read as null." in card
    assert f"Schema version {SCHEMA_VERSION}." not in card
    snippet = card.split("## How to use this dataset")[1].split("## How to load")[0]
    assert "trial_errors\"]" not in snippet and 'r["status"] == "passed"' in snippet


# ---- 15-17. the card and README snippets hold on the datasets they describe ----------------

def test_verified_card_snippet_keeps_the_status(current):
    write_card(current)
    card = (current / "README.md").read_text()
    assert 'row["status"] == "passed" and all(' in card
    assert "every member was run on a GPU" in card


def test_unverified_card_claims_no_gpu_run_and_has_no_pairs_snippet(tmp_path):
    out = tmp_path / "d"
    result = run_cli("build", "--source", "ptx", "--manifest", MANIFESTS / "ok_blob.yaml", "--jobs", "1", "--silent",
                     "--out", out)
    assert result.exit_code == 0, result.output
    card = (out / "README.md").read_text()
    assert "every member was run on a GPU" not in card and "How labels were obtained" not in card
    assert "**not verified yet**" in card
    assert '"pairs"' not in card and "'pairs'" not in card
    present = sorted({p.parent.name for p in part_files(out, "kernels")})
    assert re.search(r"split='(\w+)'", card).group(1) in present


def test_the_card_has_a_column_dictionary_of_every_column(dataset):
    assert set(COLUMNS) == set(KERNELS_SCHEMA.names)
    write_card(dataset)
    card = (dataset / "README.md").read_text()
    for name in KERNELS_SCHEMA.names:
        assert f"| `{name}` | " in card
    for status in ("passed", "wrong_result", "build_failed", "timeout"):
        assert status in COLUMNS["status"]


def test_readme_snippet_indexes_no_split_the_first_build_lacks():
    """The default Triton build's functions all hash into train (see ptxds info), so the
    README's snippet must not index test or validation, and must test the status."""
    readme = (ROOT / "README.md").read_text()
    snippet = readme.split("```python", 1)[1].split("```", 1)[0]
    assert not re.search(r"\[\s*[\"'](test|validation)[\"']\s*\]", snippet), snippet
    assert 'split="test"' not in snippet
    assert 'r["status"] == "passed"' in snippet


# ---- 18. manifest shapes ----------------------------------------------------------------------

def _manifest(tmp_path, buffers: str) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text("problem:\n  problem_id: p\n  op: vector_add\n  buffers:\n" + buffers
                    + "members:\n  - name: a\n    ptx: a.ptx\n    launches: [{grid: 1, block: 1, args: []}]\n")
    return path


@pytest.mark.parametrize("shape,message", [
    ('"1048576"', "problem.buffers[0].shape: must be a positive integer or a list of them, got '1048576'; "
                  "write the number without quotes"),
    ("1048576.5", "problem.buffers[0].shape: must be a positive integer or a list of them, got 1048576.5"),
    ("[1024, 2.0]", "problem.buffers[0].shape: must be a positive integer or a list of them, got [1024, 2.0]"),
])
def test_manifest_shape_must_be_integers(tmp_path, shape, message):
    manifest = _manifest(tmp_path, f"    - {{name: x, dtype: float32, shape: {shape}}}\n"
                                   "    - {name: y, dtype: float32, shape: [1048576]}\n"
                                   "    - {name: out, dtype: float32, shape: [1048576], role: out}\n")
    result = run_cli("build", "--source", "ptx", "--manifest", manifest, "--out", tmp_path / "d")
    assert result.exit_code == 1
    assert message in error_line(result), result.output
    assert not (tmp_path / "d").exists()


def test_manifest_elementwise_buffers_share_a_shape(tmp_path):
    manifest = _manifest(tmp_path, "    - {name: x, dtype: float32, shape: [1000]}\n"
                                   "    - {name: y, dtype: float32, shape: [1048576]}\n"
                                   "    - {name: out, dtype: float32, shape: [1048576], role: out}\n")
    result = run_cli("build", "--source", "ptx", "--manifest", manifest, "--out", tmp_path / "d")
    assert result.exit_code == 1
    assert ("problem.buffers[1].shape: op vector_add is elementwise, so every buffer has x's shape [1000]; "
            "y has [1048576]") in error_line(result)


# ---- 19. usage errors agree ------------------------------------------------------------------

@pytest.mark.parametrize("args,message", [
    (("--source", "nope"), "Error: unknown source 'nope'; known sources: cutlass, cutlass-conv, handhack, inductor, mirage, "
                           "ptx, tilelang, triton, triton-dump, triton-jit, tvm, tvm-models"),
    (("--source", "triton", "--arch", ""), "Error: Invalid value for '--arch': give at least one arch, "
                                           "comma-separated: sm_80, sm_86, sm_89, sm_90, sm_90a"),
    (("--source", "triton", "--arch", "sm_99"), "Error: Invalid value for '--arch': unknown arch 'sm_99'; use one "
                                                "of sm_80, sm_86, sm_89, sm_90, sm_90a"),
    (("--source", "triton", "--sample-seed", "3"), "Error: --sample-seed picks which work items --limit keeps; "
                                                   "give --limit N too"),
    (("--source", "tvm", "--tensor-cores", "maybe"), "Error: Invalid value for '--tensor-cores': 'maybe' is not "
                                                     "one of 'on', 'off', 'only'."),
])
def test_usage_errors_exit_2_with_a_usage_line(tmp_path, args, message):
    result = run_cli("build", *args, "--out", tmp_path / "d")
    assert result.exit_code == 2
    assert result.output.startswith("Usage: ")
    assert error_line(result) == message
    assert not (tmp_path / "d").exists()


def test_build_help_lists_the_sources():
    assert "[cutlass|cutlass-conv|handhack|inductor|mirage|ptx|tilelang|triton|triton-dump|triton-jit|tvm|tvm-models]" in \
        run_cli("build", "--help").output


# ---- 11 and 20. long steps show progress; what the README's commands write is ignored -------

def test_merge_and_rewrite_show_progress_unless_silent(dataset, tmp_path):
    loud = run_cli("merge", dataset, "--out", tmp_path / "m1")
    assert loud.exit_code == 0 and re.search(r"merge: 100%.* \d+/\d+ ", loud.output), loud.output
    quiet = run_cli("merge", dataset, "--out", tmp_path / "m2", "--silent")
    assert quiet.exit_code == 0 and "merge: " not in quiet.output and "100%" not in quiet.output
    result = run_cli("rewrite", dataset, "--rewrites", "0", "--mutants", "0", "--silent")
    assert result.exit_code == 0 and "100%" not in result.output


def test_folders_the_readme_commands_write_are_git_ignored():
    readme = (ROOT / "README.md").read_text()
    ignored = set((ROOT / ".gitignore").read_text().splitlines())
    tops = {path.split("/")[0] for path in re.findall(r"--(?:out|db) ([\w./-]+)", readme)}
    assert tops >= {"data", "tune"}
    assert all(f"/{top}/" in ignored for top in tops), tops - {line.strip("/") for line in ignored}


def test_dry_run_of_a_finished_build_says_nothing_is_left(built):
    result = run_cli("build", "--source", "ptx", "--manifest", MANIFESTS / "ok_blob.yaml", "--dry-run", "--out", built)
    assert result.exit_code == 0
    assert result.output.strip() == "ptx: nothing left to build (3 work items already done)"  # one per member


# ---- 20. the build pool starts no more workers than there are items --------------------------

class IdleBuilder:
    """Every item builds no rows (a pool worker's smallest job)."""
    name = "idle"

    def __init__(self, options):
        self.options = options

    def build(self, item):
        return []


def test_more_jobs_than_items_starts_a_worker_per_item():
    import multiprocessing as mp

    from builders.base import BuildOptions, WorkItem
    from ptxds.executors import BuildTask
    from ptxds.executors.local import LocalExecutor
    task = BuildTask(source="idle", builder=f"{__name__}:IdleBuilder", options=BuildOptions(archs=["sm_80"]))
    work = [WorkItem(key=f"k{i}", group_id="g", label=f"k{i}") for i in range(3)]
    outcomes = LocalExecutor(jobs=12, item_timeout=120).run_items(task, work)
    first = next(outcomes)
    workers = len(mp.active_children())  # the pool's workers are alive until it is stopped
    rest = list(outcomes)
    assert [o.error for o in [first, *rest]] == ["", "", ""]
    assert workers <= len(work)
    assert LocalExecutor(jobs=12).describe() == "local, 12 process(es)"
    executor = LocalExecutor(jobs=12, item_timeout=120)
    assert len(list(executor.run_items(task, work))) == 3
    assert executor.describe() == "local, 3 process(es)"  # the build summary's executor line


def _plan_line(result) -> str:
    assert result.exit_code == 0, result.output
    return result.output.strip().splitlines()[-1]


def test_cutlass_dry_run_charges_sm90_tma_kernels_their_own_rate(tmp_path):
    pytest.importorskip("cutlass_library")
    sm80 = _plan_line(run_cli("build", "--source", "cutlass", "--arch", "sm_80", "--jobs", "2", "--dry-run",
                              "--out", tmp_path / "d"))
    sm90 = _plan_line(run_cli("build", "--source", "cutlass", "--arch", "sm_90a", "--jobs", "2", "--dry-run",
                              "--out", tmp_path / "d"))
    assert sm80.endswith("(3.6 CPU-s per row, as measured on a 2-core machine)"), sm80
    assert sm90.endswith("(18.0 CPU-s per row, as measured on a 2-core machine)"), sm90
    # a kernel compiles once for all its sizes: four llm sizes cost what one does
    llm = _plan_line(run_cli("build", "--source", "cutlass", "--arch", "sm_80", "--shapes", "llm", "--jobs", "2",
                             "--dry-run", "--out", tmp_path / "d"))
    assert re.search(r"about (\d+\.\d) min", llm).group(1) == re.search(r"about (\d+\.\d) min", sm80).group(1)


def test_dry_run_counts_no_more_cores_than_items(tmp_path):
    line = _plan_line(run_cli("build", "--source", "triton", "--limit", "3", "--jobs", "64", "--dry-run",
                              "--out", tmp_path / "d"))
    assert "on 3 core(s)" in line, line


# ---- 11. the attention domain search runs once per size, not on every run ----------------------

def test_the_attention_domain_is_searched_once_and_kept_on_disk(tmp_path, monkeypatch):
    from dataset_spec import attention, mugraph
    monkeypatch.setenv("PTXDS_CACHE", str(tmp_path / "cache"))
    attention.domain.cache_clear()
    first = attention.domain(1, 16, 16, 16)
    assert len(list((tmp_path / "cache" / "domains").glob("attention-*.json"))) == 1

    def no_search(*args, **kwargs):
        raise AssertionError("searched again")
    monkeypatch.setattr(mugraph, "search_domain", no_search)
    attention.domain.cache_clear()  # a new run: only the disk remembers
    assert attention.domain(1, 16, 16, 16) == first
    with pytest.raises(AssertionError, match="searched again"):  # another size is searched
        attention.domain(1, 16, 32, 16)
    attention.domain.cache_clear()


# ---- 11. every long step says so first, and --silent quiets it ---------------------------------

def test_an_attention_domain_search_is_announced_before_it_starts(tmp_path, monkeypatch):
    from dataset_spec import attention
    monkeypatch.setenv("PTXDS_CACHE", str(tmp_path / "cache"))
    attention.domain.cache_clear()
    shapes = tmp_path / "attention.yaml"
    shapes.write_text("attention:\n  - [1, 16, 16, 16]\n")
    args = ("build", "--source", "triton", "--arch", "sm_80", "--shapes", shapes, "--dry-run", "--out", tmp_path / "d")
    loud = run_cli(*args)
    assert loud.exit_code == 0, loud.output
    assert loud.output.splitlines()[0] == (
        f"attention B=1 Sq=16 Skv=16 D=16: searching its float16-safe input domain (15-40 s, once per size; "
        f"the answer is kept in {tmp_path / 'cache' / 'domains'})")
    attention.domain.cache_clear()
    again = run_cli(*args)  # the answer is on disk: nothing to announce
    assert again.exit_code == 0 and "searching" not in again.output
    for kept in (tmp_path / "cache" / "domains").iterdir():
        kept.unlink()
    attention.domain.cache_clear()
    quiet = run_cli(*args[:-2], "--silent", *args[-2:])
    assert quiet.exit_code == 0 and "searching" not in quiet.output
    attention.domain.cache_clear()


class SlowItemsTriton(TritonBuilder):
    """The Triton suite, estimated as a source whose work items take minutes (a CUTLASS nvcc
    batch, a TVM schedule search)."""
    name = "slow-items-triton"
    cpu_seconds_per_row = 30.0


def test_a_slow_first_work_item_gets_a_line_before_the_bar(tmp_path, monkeypatch, caplog):
    from builders import BUILDERS
    from builders.base import BuildOptions
    from ptxds.pipeline import run_build
    monkeypatch.setitem(BUILDERS, "slow-items-triton", f"{__name__}:SlowItemsTriton")
    options = BuildOptions(archs=["sm_80"], limit=1)
    with caplog.at_level("INFO", logger="ptxds.progress"):
        summary = run_build("slow-items-triton", tmp_path / "d", options, jobs=1, progress=True)
    assert summary.rows_written == 1
    assert [r.getMessage() for r in caplog.records] == [
        "build slow-items-triton: the bar moves a work item at a time (1 items, 1 rows); the first take about "
        "30 CPU-s each with cold caches, longer on a busy machine"]
    caplog.clear()
    with caplog.at_level("INFO", logger="ptxds.progress"):  # the estimated fast Triton suite: no line
        run_build("triton", tmp_path / "e", options, jobs=1, progress=True)
    assert not caplog.records


def test_resplit_and_add_take_silent(built, tmp_path, monkeypatch):
    from dataset_spec.store import publish
    monkeypatch.setattr(publish, "PUBLISH_BAR_DELAY_SECONDS", 0)  # as if the dataset were large
    loud = run_cli("resplit", built)
    assert loud.exit_code == 0 and re.search(r"publish built: 100%.* 3/3 ", loud.output), loud.output
    quiet = run_cli("resplit", built, "--silent")
    assert quiet.exit_code == 0 and "publish" not in quiet.output and quiet.output.startswith(f"{built}: ")
    member = _member(built)
    ptx = tmp_path / "mine.ptx"
    entry = member.ptx.index(".entry")
    ptx.write_text(member.ptx[:entry] + member.ptx[entry:].replace("\n{", "\n.maxnreg 128\n{", 1))
    added = run_cli("add", built, "--group", member.group_id, "--ptx", ptx, "--silent")
    assert added.exit_code == 0, added.output
    assert added.output.startswith("added mine (sm_80, kernel_id ") and "publish" not in added.output


def test_tvm_tensor_intrinsics_load_without_scanning_every_module_per_frame():
    pytest.importorskip("tvm")
    # a fresh process: the package is imported once per process
    script = ("import inspect, tvm\n"
              "calls = 0\n"
              "original = inspect.getmodule\n"
              "def counting(*args, **kwargs):\n"
              "    global calls\n"
              "    calls += 1\n"
              "    return original(*args, **kwargs)\n"
              "inspect.getmodule = counting\n"
              "from builders.tvm.intrinsics import PACKAGE, load_tensor_intrinsics\n"
              "load_tensor_intrinsics()\n"
              "import sys; assert PACKAGE in sys.modules and inspect.getmodule is counting\n"
              "print(calls)\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    # frames looked up once per file of the import stack (761 calls in all with TVM 0.27),
    # not once per frame of each of ~500 parses (about 29000 calls, 49 s of a 53 s import)
    assert int(result.stdout.strip()) < 2000, result.stdout


# ---- 20. the README's build-size table is what the builders list ---------------------------------

def _readme_table_rows(source_cell: str, shapes_cell: str) -> tuple:
    """(kernels, rows) of the README build-size table's row starting with these two cells."""
    for line in (ROOT / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[:2] == [source_cell, shapes_cell]:
            return int(cells[2].split()[0]), int(cells[3].split()[0])
    raise AssertionError(f"no README table row {source_cell!r} | {shapes_cell!r}")


@pytest.mark.parametrize("source_cell, shapes_cell, args, needs", [
    ("triton (sm_80 + sm_90a)", "default", ("--source", "triton"), None),
    ("tvm (sm_80 + sm_90a)", "its own 2 sizes per workload", ("--source", "tvm"), "tvm"),
    ("cutlass `--family '*' --per-family 1`", "default", ("--source", "cutlass", "--family", "*", "--per-family", "1"),
     "cutlass_library"),
])
def test_readme_build_size_table_matches_the_dry_run(tmp_path, source_cell, shapes_cell, args, needs):
    if needs:
        pytest.importorskip(needs)
    kernels, rows = _readme_table_rows(source_cell, shapes_cell)
    line = _plan_line(run_cli("build", *args, "--dry-run", "--out", tmp_path / "d"))
    assert re.search(rf" {rows} rows; about ", line), (line, rows)
    if source_cell.startswith("cutlass"):  # one row per kernel at the default size
        assert kernels == rows


# ---- found on the fresh-clone walk-through -----------------------------------------------------

def test_a_full_disk_during_a_parquet_write_names_the_part_file(tmp_path, monkeypatch):
    """pyarrow's own error on a full disk names no file (OSError 28 from ParquetWriter.close):
    the line still names the part file, and no half-written temp file keeps the space."""
    import dataset_spec.store.shards as shards

    def full(table, where, **kwargs):
        where.write(b"PAR1")  # some bytes landed before the device filled up
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(shards.pq, "write_table", full)
    out = tmp_path / "d"
    result = run_cli("build", "--source", "triton", "--arch", "sm_80", "--limit", "1", "--silent", "--jobs", "1",
                     "--out", out)
    assert result.exit_code == 1
    line = error_line(result)
    assert re.match(rf"Error: no space left on the device of {re.escape(str(out))}/\S+/part-\S+\.parquet; free some "
                    "space and run the same command again", line), line
    assert not [p for p in out.rglob("*.tmp")]


def test_output_into_a_closed_pipe_ends_quietly(dataset):
    """`ptxds info DIR | head -1`: the reader stops early; no 'Error: Broken pipe' line."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([sys.executable, "-m", "ptxds", "info", str(dataset)], cwd=ROOT, stdout=write_end,
                                stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert result.returncode != 0
    assert result.stderr == ""


def test_a_folder_with_its_own_readme_is_refused_before_the_builder_runs(own_readme, monkeypatch):
    """tune-tvm propose (a TVM search first) and build: refused before any builder work."""
    import ptxds.pipeline as pipeline

    def no_builder(source):
        raise AssertionError(f"the {source} builder was loaded before the --out folder was checked")
    monkeypatch.setattr(pipeline, "load_builder", no_builder)
    result = run_cli("build", "--source", "triton", "--arch", "sm_80", "--limit", "1", "--silent",
                     "--out", own_readme)
    assert result.exit_code == 1
    assert "was not written by ptxds" in error_line(result)
