"""dataset_spec/sparse_meta.py against CUTLASS's own host code: ``cutlass::reorder_meta``
and ``cutlass::uncompress`` compiled with the pinned nvcc (a host program, no GPU)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from dataset_spec.sparse_meta import Sm80SparseFormat
from helpers import needs_nvcc

HOST_PROGRAM = Path(__file__).parents[2] / "data" / "sparse_meta_host.cu"


def _cutlass_answer(fmt: Sm80SparseFormat, kept: np.ndarray, words: np.ndarray, m: int, k: int):
    pytest.importorskip("cutlass_library", reason="nvidia-cutlass is not installed")
    from builders.cutlass.compile import build_packer
    program = build_packer(HOST_PROGRAM.read_text(), "sm_80")
    text = f"{fmt.element_bits} {m} {k}\n" + " ".join(map(str, kept.reshape(-1).astype(int))) + "\n" + \
        " ".join(map(str, words.reshape(-1).astype(np.uint64))) + "\n"
    out = subprocess.run([str(program)], input=text, capture_output=True, text=True, timeout=60, check=True)
    dense_line, stored_line = out.stdout.splitlines()
    return (np.array(dense_line.split(), dtype=np.int64).reshape(m, k),
            np.array(stored_line.split(), dtype=np.uint64))


@needs_nvcc
@pytest.mark.parametrize("bits,m,k", [(16, 64, 64), (32, 32, 64), (8, 32, 128)])
def test_layout_matches_cutlass_host_code(bits, m, k):
    fmt = Sm80SparseFormat(bits)
    rng = np.random.default_rng(bits)
    kept = rng.integers(1, 100, (m, k // 2))  # nonzero, so every kept position shows
    nibbles = fmt.random_nibbles(rng, m, k)
    words = fmt.words(nibbles)
    dense, stored = _cutlass_answer(fmt, kept, words, m, k)
    assert np.array_equal(fmt.expand(kept, nibbles), dense)
    assert np.array_equal(fmt.store(words), stored)
    assert np.array_equal(fmt.load(stored, m, k), words)
    again_kept, again_codes = fmt.compress(dense)
    assert np.array_equal(again_kept, kept) and np.array_equal(again_codes, nibbles)


def test_compress_refuses_a_dense_group():
    fmt = Sm80SparseFormat(16)
    with pytest.raises(ValueError, match="2:4 sparse"):
        fmt.compress(np.ones((32, 64)))


def test_compress_pads_a_group_with_one_nonzero():
    fmt = Sm80SparseFormat(16)
    dense = np.zeros((32, 64))
    dense[0, 2] = 5.0
    kept, codes = fmt.compress(dense)
    assert codes[0, 0] == 0x8  # indices (0, 2): the zero at 0 fills the first slot
    assert np.array_equal(fmt.expand(kept, codes), dense)


SM90_PROGRAM = Path(__file__).parents[2] / "data" / "sparse_meta_sm90_host.cu"


@needs_nvcc
@pytest.mark.parametrize("bits,tile_k,m,k", [(16, 64, 128, 128), (16, 128, 64, 256), (32, 32, 64, 64),
                                              (32, 64, 128, 128), (8, 128, 128, 256)])
def test_sm90_layout_matches_cutlass_sparse_config(bits, tile_k, m, k):
    pytest.importorskip("cutlass_library", reason="nvidia-cutlass is not installed")
    from builders.cutlass.compile import build_packer
    from dataset_spec.sparse_meta import Sm90SparseFormat
    program = build_packer(SM90_PROGRAM.read_text(), "sm_90a")
    out = subprocess.run([str(program)], input=f"{bits} {tile_k} {m} {k}\n", capture_output=True, text=True,
                         timeout=60, check=True)
    cutlass_offsets = np.array(out.stdout.split(), dtype=np.int64).reshape(m, k)
    fmt = Sm90SparseFormat(bits, tile_k)
    assert np.array_equal(fmt.logical_offsets(m, k), cutlass_offsets)
    # every code has its own nibble, and decode inverts encode
    rng = np.random.default_rng(bits + tile_k)
    codes = fmt.random_nibbles(rng, m, k)
    stored = fmt.encode(codes)
    assert stored.size == fmt.storage_shape(m, k)[0] and stored.max() <= 0xFF
    assert np.array_equal(fmt.decode(stored, m, k), codes)
