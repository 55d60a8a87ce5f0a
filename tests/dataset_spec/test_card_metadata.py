"""The dataset card's YAML metadata: written by ``huggingface_hub.DatasetCardData`` with the
features of ``datasets.Features.from_arrow_schema``, so it parses as YAML whatever the
title holds, names a licence the Hub accepts for ``other``, states each config's features,
split sizes and size category, and ``datasets.load_dataset`` opens every config from it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from dataset_spec.store.card import size_category, write_card
from dataset_spec.model import Buffer, KernelRecord, Launch, Problem
from dataset_spec.store.publish import publish
from dataset_spec.schema import SCHEMAS
from dataset_spec.store.shards import ShardWriter, read_split_table

datasets = pytest.importorskip("datasets")

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "verified" / "dataset"
# YAML would read an unquoted ": " as a mapping and "#" as a comment
TITLE = "PTX groups: vector_add # 'sizes' \"and\" more"
CONFIGS = ("kernels", "pairs", "kernels_by_shape", "pairs_by_shape")


def front_matter(root) -> dict:
    text = (Path(root) / "README.md").read_text()
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("\n---\n", 1)[0][len("---\n"):])


def vadd_row(n: int, function: int, member: int) -> KernelRecord:
    problem = Problem(f"vadd_{function}_{n}", "vector_add", [
        Buffer("x", "float32", (n,)), Buffer("y", "float32", (n,)), Buffer("out", "float32", (n,), role="out")],
        params={"shape": {"n": n}, "eps": function})
    name = f"k{function}_{member}"
    return KernelRecord(group_id=f"test/vector_add/f{function}/n{n}", source="test", variant={"v": name},
                        name=name, arch="sm_80", ptx=f".version 8.0 // {name} {n}",
                        launches=[Launch("vadd", 1, 32, [])], problem=problem, ptx_hash=f"h-{name}-{n}",
                        kernel_id=f"id-{name}-{n}", status="passed")


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A dataset with all four configs: 12 functions at three sizes (so ``*_by_shape``
    holds out one), two passing members per group (so there are pairs)."""
    root = tmp_path_factory.mktemp("card") / "ds"
    rows = [vadd_row(n, f, m) for f in range(12) for n in (64, 4096, 1 << 16) for m in range(2)]
    with ShardWriter(root) as writer:
        writer.write(rows)
    publish(root)
    write_card(root, title=TITLE)
    return root


def split_counts(root, config: str) -> dict:
    splits = read_split_table(root, config, columns=["schema_version"]).column("split").to_pylist()
    return {s: splits.count(s) for s in sorted(set(splits))}


def test_size_category_is_one_of_the_hubs_buckets():
    from importlib.resources import files
    known = json.loads(files("datasets.utils.resources").joinpath("size_categories.json").read_text())
    cases = {0: "n<1K", 999: "n<1K", 1000: "1K<n<10K", 9999: "1K<n<10K", 10**4: "10K<n<100K",
             10**6 - 1: "100K<n<1M", 10**6: "1M<n<10M", 10**12 - 1: "100B<n<1T", 10**12: "n>1T"}
    for rows, name in cases.items():
        assert size_category(rows) == name and name in known


def test_the_header_parses_and_states_name_licence_and_size(published):
    meta = front_matter(published)
    assert meta["pretty_name"] == TITLE
    assert meta["license"] == "other"
    # the Hub asks ``other`` for a name (a lowercase slug) and a link to the licence text
    assert meta["license_name"] and meta["license_name"] == meta["license_name"].lower()
    assert " " not in meta["license_name"]
    link, _, anchor = meta["license_link"].partition("#")
    assert link == "README.md" and f"## {anchor.replace('-', ' ').capitalize()}" in (published / "README.md").read_text()
    assert meta["size_categories"] == ["n<1K"]  # 72 kernel rows
    assert meta["tags"] == ["ptx", "cuda", "compilers", "code"]


def test_the_header_lists_every_config_with_its_files_features_and_split_sizes(published):
    meta = front_matter(published)
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert set(configs) == set(CONFIGS)
    assert [name for name, c in configs.items() if c.get("default")] == ["kernels"]
    infos = {i["config_name"]: i for i in meta["dataset_info"]}
    assert set(infos) == set(CONFIGS)
    for config in CONFIGS:
        counts = split_counts(published, config)
        assert len(counts) >= 2, config  # the fixture spreads rows over several splits
        assert sorted((f["split"], f["path"]) for f in configs[config]["data_files"]) == \
            sorted((s, f"{config}/{s}/*.parquet") for s in counts)
        info = infos[config]
        assert datasets.Features._from_yaml_list(info["features"]) == \
            datasets.Features.from_arrow_schema(SCHEMAS[config])
        assert {s["name"]: s["num_examples"] for s in info["splits"]} == counts
        assert all(s["num_bytes"] > 0 for s in info["splits"])
        assert info["dataset_size"] == sum(s["num_bytes"] for s in info["splits"])
        assert info["download_size"] == sum(p.stat().st_size for p in (published / config).glob("*/*.parquet"))


def test_load_dataset_opens_every_config_as_the_card_states(published, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    infos = {i["config_name"]: i for i in front_matter(published)["dataset_info"]}
    for config in CONFIGS:
        loaded = datasets.load_dataset(str(published), config, cache_dir=str(tmp_path / "hf"))
        assert {s: len(loaded[s]) for s in loaded} == split_counts(published, config)
        for split in loaded.values():
            assert split.features == datasets.Features._from_yaml_list(infos[config]["features"])
    # the split sizes are checked by load_dataset itself: a card that miscounted would fail
    kernels = datasets.load_dataset(str(published), "kernels", cache_dir=str(tmp_path / "hf"))
    assert sum(len(s) for s in kernels.values()) == 72


def test_a_card_over_an_older_schema_states_the_files_columns(tmp_path, monkeypatch):
    """The fixture's parts are schema version 2 (43 kernel columns, 7 pair columns): the card
    describes them as they are, and load_dataset opens both configs."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    root = tmp_path / "old"
    shutil.copytree(FIXTURE, root)
    write_card(root)
    infos = {i["config_name"]: i for i in front_matter(root)["dataset_info"]}
    assert len(infos["kernels"]["features"]) == 43 < len(SCHEMAS["kernels"])
    assert [f["name"] for f in infos["pairs"]["features"]][-1] == "label_source"
    for config, rows in (("kernels", 76), ("pairs", 356)):
        loaded = datasets.load_dataset(str(root), config, cache_dir=str(tmp_path / "hf"))
        assert len(loaded["train"]) == rows
