"""Options typed from the command line to the code: a source flag of another source is
refused whatever its value; a source's Options arrive typed in the builder (through the
CLI's resolution and the pickling a worker gets, or from a library caller's plain values,
coerced once with the same rules); ``ptxds verify``'s flags become one ``VerifyOptions``
that reaches the runner (checked on CPU with the host stand-in workers of
test_verify_split); the tvm source brings ``tune-tvm`` through the commands hook."""
from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_verify_split import _HostVectorAdd, _rows

from builders import load_builder, resolve_source_options
from builders.base import BuildOptions
from builders.options import OptionError, load_options_file
from dataset_spec.store.shards import ShardWriter, read_records, read_split_table
from ptxds.cli import cli
from verify.options import VerifyOptionError, VerifyOptions

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_a_flag_of_another_source_is_refused_at_its_default_value(tmp_path):
    result = run_cli("build", "--source", "triton", "--sm-count", "132", "--out", tmp_path / "d")
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == "Error: --sm-count applies to --source cutlass, not triton"
    assert not (tmp_path / "d").exists()
    # the chosen source's own flag at its default is taken (a dry run builds nothing)
    own = run_cli("build", "--source", "cutlass", "--sm-count", "132", "--family", "nothing_matches_this*",
                  "--arch", "sm_80", "--out", tmp_path / "c", "--dry-run")
    assert "applies to" not in own.output


def test_options_arrive_typed_in_the_builder_and_survive_the_trip_to_a_worker():
    source, settings = resolve_source_options("cutlass", {"batch_size": "4", "problem": "128,256,64",
                                                          "alpha": "2", "sm_count": 132})
    assert (source, settings.batch_size, settings.problem, settings.alpha) == ("cutlass", 4, (128, 256, 64), 2.0)
    cls = load_builder("cutlass")
    options = pickle.loads(pickle.dumps(BuildOptions(archs=["sm_80"], settings=settings)))  # as a worker gets it
    assert cls(options).settings == settings
    # a library caller's plain values, coerced once with the CLI's rules, give the same object
    plain = cls(BuildOptions(archs=["sm_80"], extra={"batch_size": 4, "problem": [128, 256, 64], "alpha": 2,
                                                          "shapes": "default"}))
    assert plain.settings == settings and isinstance(plain.settings.alpha, float)
    with pytest.raises(OptionError, match="--per-family: 'many' is not a int"):
        cls(BuildOptions(extra={"per_family": "many"}))


def test_a_yaml_on_or_off_is_the_word_and_choices_are_checked(tmp_path):
    options = tmp_path / "tvm.yaml"
    options.write_text("tensor_cores: off\nschedules: '3'\n")  # YAML 1.1 reads off as false
    _, settings = resolve_source_options("tvm", load_options_file(options))
    assert (settings.tensor_cores, settings.schedules) == ("off", 3)
    with pytest.raises(OptionError, match=r"--tensor-cores: 'sometimes' is not one of on, off, only"):
        resolve_source_options("tvm", {"tensor_cores": "sometimes"})


def test_a_source_handing_its_options_on_keeps_them_typed(tmp_path):
    from builders.triton.builder import TritonOptions
    from builders.triton_dump import TritonDumpBuilder
    options = BuildOptions(archs=["sm_80"], settings=TritonOptions(from_dump=str(tmp_path), shapes="llm"))
    dump = TritonDumpBuilder(options)
    assert dump.settings.from_dump == str(tmp_path) and not hasattr(dump.settings, "shapes")


def test_tune_tvm_is_brought_by_the_tvm_source():
    command = cli.commands["tune-tvm"]
    assert command.callback.__module__ == "builders.tvm.commands"
    assert load_builder("tvm").commands == ("builders.tvm.commands:tune_tvm",)
    assert "tune-tvm" not in (ROOT / "ptxds" / "cli.py").read_text()
    result = run_cli("tune-tvm", "propose", "--help")
    assert result.exit_code == 0 and "Example:" in result.output


def test_verify_options_are_checked_once():
    assert VerifyOptions(trials="3", kernel_timeout=5).trials == 3
    assert VerifyOptions(kernel_timeout=5).kernel_timeout == 5.0
    with pytest.raises(VerifyOptionError, match="trials must be >= 1, got 0"):
        VerifyOptions(trials=0)
    with pytest.raises(VerifyOptionError, match="inputs must be one of"):
        VerifyOptions(inputs="device")
    with pytest.raises(VerifyOptionError, match="verify takes no setting 'colour'"):
        VerifyOptions().replace(colour="red")


def test_verify_flags_become_one_verify_options(tmp_path, monkeypatch):
    import verify
    from verify.runner import VerifySummary
    ShardWriter(tmp_path / "in").write(_rows("ptx/a", 1024, 2))
    seen = []

    def fake_verify(in_dir, out_dir, options, **means):
        seen.append((options, sorted(means)))
        return VerifySummary(skipped_groups=1)
    monkeypatch.setattr(verify, "verify_dataset", fake_verify)
    result = run_cli("verify", tmp_path / "in", "--out", tmp_path / "out", "--trials", "3", "--no-timing",
                     "--kernel-timeout", "5", "--inputs", "host", "--no-racecheck", "--groups", "ptx/*",
                     "--trial-salt", "s1", "--silent")
    assert result.exit_code == 0, result.output
    assert seen == [(VerifyOptions(groups="ptx/*", trials=3, timing=False, kernel_timeout=5.0, inputs="host",
                                   racecheck=False, trial_salt="s1"),
                     ["assembly_pool", "progress", "start_workers"])]


def test_verify_options_reach_the_runner_and_rows_keep_their_split(tmp_path):
    from verify import verify_dataset
    rows = _rows("ptx/a", 1024, 3) + _rows("ptx/b", 2048, 2)
    ShardWriter(tmp_path / "in").write(rows, splits=["test"] * len(rows))  # not their functions' splits
    options = VerifyOptions(groups="ptx/a", trials=2, timing=False, reference="numpy", inputs="host",
                            assemble_jobs=0, trial_salt="salt-x")
    summary = verify_dataset(tmp_path / "in", tmp_path / "out", options, progress=False,
                             start_workers=lambda n: [_HostVectorAdd(i, []) for i in range(n or 1)])
    assert [g.group_id for g in summary.groups] == ["ptx/a"]
    out = read_records(tmp_path / "out")
    assert sorted(r.group_id for r in out) == ["ptx/a"] * 3
    for row in out:
        assert (row.status, row.trials, row.time_us_median) == ("passed", 2, None)
        assert row.provenance["verify"]["trial_salt"] == "salt-x"
    assert set(read_split_table(tmp_path / "out", "kernels", columns=["build_key"]).column("split").to_pylist()) \
        == {"test"}
