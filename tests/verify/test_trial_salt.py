"""A verify run's trial salt: mixed into every trial's seed, so the inputs a member is
checked and timed on cannot be known before the run, and recorded with the rows, so a
witness is redrawn from the same inputs. Runs verify_dataset on CPU with the host
stand-in workers of test_verify_split (the verifier's own drawing, judging and writing)."""
from __future__ import annotations

import hashlib

from test_verify_split import _HostVectorAdd, _rows

from dataset_spec.store.shards import ShardWriter, read_records
from verify.trials.inputs import trial_seed


def _verify(tmp_path, name: str, salt: str) -> dict:
    from verify import verify_dataset
    verify_dataset(tmp_path / "in", tmp_path / name, progress=False, reference="numpy", inputs="host",
                   time_budget=0.1, assemble_jobs=0, trial_salt=salt,
                   start_workers=lambda n: [_HostVectorAdd(i, []) for i in range(n or 1)])
    return {r.build_key: r for r in read_records(tmp_path / name)}


def test_an_unsalted_seed_is_the_group_s_own_and_a_salt_changes_every_seed():
    text = "g\0d\x003".encode()
    assert trial_seed("g", "d", 3) == int.from_bytes(hashlib.sha256(text).digest()[:8], "little") >> 1
    assert trial_seed("g", "d", 3, "") == trial_seed("g", "d", 3)
    salted = {trial_seed("g", "d", t, "5eed") for t in range(5)}
    assert salted.isdisjoint({trial_seed("g", "d", t) for t in range(5)}) and len(salted) == 5
    assert trial_seed("g", "d", 3, "5eed") != trial_seed("g", "d", 3, "5eee")


def test_salted_runs_draw_other_inputs_record_the_salt_and_keep_the_labels(tmp_path):
    from verify.trials.witness import regenerate
    ShardWriter(tmp_path / "in").write(_rows("ptx/salt", 2048, 4, skewed={2}))
    plain, salted = _verify(tmp_path, "plain", ""), _verify(tmp_path, "salted", "a1b2c3")
    for key, row in plain.items():
        other = salted[key]
        assert (row.status, row.max_abs_err is None) == (other.status, other.max_abs_err is None), key
        seeds, salted_seeds = row.provenance["verify"]["seeds"], other.provenance["verify"]["seeds"]
        assert len(seeds) == len(salted_seeds) and set(seeds).isdisjoint(salted_seeds), key
        assert "trial_salt" not in row.provenance["verify"]
        assert other.provenance["verify"]["trial_salt"] == "a1b2c3"
    wrong = salted["ptx/salt-m2"]
    assert wrong.status == "wrong_result" and wrong.witness["seed"] in wrong.provenance["verify"]["seeds"]
    again = regenerate(wrong)
    # the witness is redrawn from the salted seed: same seed, same reference at its element
    assert again.seed_matches and again.seed == wrong.witness["seed"]
    assert abs(again.reference - wrong.witness["reference"]) <= 1e-6 * max(1.0, abs(again.reference))
