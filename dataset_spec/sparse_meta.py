"""2:4 structured sparsity in CUTLASS's layouts: the compressed A operand and its metadata
operand E, as SM80 ``cutlass::gemm::kernel::SparseGemm`` (``Sm80SparseFormat``) and SM90
``SparseUniversal3x`` kernels (``Sm90SparseFormat``, below) read them.

A logical M x K operand A keeps, in every group of ``step`` consecutive K elements, at most
``kept`` of them (2 of 4 for 8- and 16-bit elements; 1 of 2 for 32-bit ones, which the
hardware states as a pair of 2-bit indices). The kernel reads the kept values as an
M x K/2 matrix (``compressed``, in A's own row/column layout) and one 4-bit code per group
(``nibbles``): bits 0-1 give the K index of the first kept value in its group, bits 2-3
that of the second. Codes are packed, first group in the low bits, into ``ElementE`` words
(uint16 for 16- and 32-bit A, uint32 for 8-bit A), an M x K/2/kElementsPerElementE matrix
that ``cutlass::reorder_meta`` (tools/util/include/cutlass/util/host_reorder.h) reorders
and stores ColumnMajorInterleaved<2> (``GmemLayoutE``). ``expand`` is CUTLASS's
``cutlass::uncompress`` (host_uncompress.h) on the un-reordered words. Both layouts are
checked against CUTLASS's own host code (tests/builders/cutlass/test_sparse_meta.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# RandomSparseMetaFunc (tools/util/.../reference/host/tensor_fill.h): the valid codes
CODES_2_OF_4 = (0x4, 0x8, 0x9, 0xC, 0xD, 0xE)
CODES_1_OF_2 = (0x4, 0xE)


@dataclass(frozen=True)
class StructuredSparsity:
    """What every layout shares: which K positions a 4-bit code keeps (``expand``)."""
    element_bits: int

    def __post_init__(self):
        if self.element_bits not in (8, 16, 32):
            raise ValueError(f"2:4 sparse A must have 8-, 16- or 32-bit elements, got {self.element_bits}")

    @property
    def step(self) -> int:  # logical K elements one 4-bit code covers
        return 2 if self.element_bits == 32 else 4

    @property
    def kept(self) -> int:  # compressed elements per code
        return self.step // 2

    def random_nibbles(self, rng: np.random.Generator, m: int, k: int) -> np.ndarray:
        codes = np.array(CODES_1_OF_2 if self.element_bits == 32 else CODES_2_OF_4, dtype=np.uint64)
        return codes[rng.integers(0, codes.size, (m, k // self.step))]

    def expand(self, compressed: np.ndarray, nibbles: np.ndarray) -> np.ndarray:
        """cutlass::uncompress: (M, K/2) kept values and (M, K/step) codes -> dense (M, K)."""
        m, groups = nibbles.shape
        first = (nibbles & 0x3).astype(np.int64)
        second = (nibbles >> 2).astype(np.int64)
        if self.element_bits == 32:
            first = first // 2
        kept = np.asarray(compressed).reshape(m, groups, self.kept)
        dense = np.zeros((m, groups, self.step), dtype=kept.dtype)
        rows, cols = np.indices((m, groups))
        dense[rows, cols, first] = kept[:, :, 0]
        if self.kept == 2:
            dense[rows, cols, second] = kept[:, :, 1]
        return dense.reshape(m, groups * self.step)

    def compress(self, dense: np.ndarray) -> tuple:
        return compress(self, dense)


@dataclass(frozen=True)
class Sm80SparseFormat(StructuredSparsity):
    """How a K-sparse operand of ``element_bits``-bit elements is stored for SM80."""

    @property
    def meta_dtype(self) -> str:
        return f"uint{self.meta_bits}"

    @property
    def meta_bits(self) -> int:  # bits of ElementE: uint32 where kMaxID2 == 1 (8-bit A)
        return 32 if self.element_bits == 8 else 16

    @property
    def elements_per_meta(self) -> int:  # kElementsPerElementE: compressed A per E word
        return 128 // self.element_bits

    @property
    def row_group(self) -> int:  # reorder_meta's row group; M must be a multiple of it
        return 32 if self.meta_bits == 16 else 16

    def meta_columns(self, k: int) -> int:
        return k // 2 // self.elements_per_meta

    def check(self, m: int, k: int) -> None:
        if m % self.row_group or k % (2 * 2 * self.elements_per_meta):
            raise ValueError(f"sparse A of {self.element_bits}-bit elements needs M a multiple of "
                             f"{self.row_group} and K of {4 * self.elements_per_meta}, got M={m} K={k}")

    def storage_shape(self, m: int, k: int) -> tuple:
        """E's buffer: ColumnMajorInterleaved<2> of M x meta_columns, as (columns/2, M, 2)."""
        self.check(m, k)
        return (self.meta_columns(k) // 2, m, 2)

    # -- codes <-> words -----------------------------------------------------------------
    def words(self, nibbles: np.ndarray) -> np.ndarray:
        """(M, K/step) codes -> (M, meta_columns) ElementE words, first code lowest."""
        per_word = self.meta_bits // 4
        m, groups = nibbles.shape
        shaped = nibbles.astype(np.uint64).reshape(m, groups // per_word, per_word)
        shifts = (4 * np.arange(per_word, dtype=np.uint64))
        return np.bitwise_or.reduce(shaped << shifts, axis=2)

    def nibbles(self, words: np.ndarray) -> np.ndarray:
        per_word = self.meta_bits // 4
        words = words.astype(np.uint64)
        shifts = (4 * np.arange(per_word, dtype=np.uint64))
        return ((words[:, :, None] >> shifts) & np.uint64(0xF)).reshape(words.shape[0], -1)

    # -- reorder_meta + ColumnMajorInterleaved<2> ------------------------------------------
    def _destination(self, m: int, cols: int) -> tuple:
        """reorder_meta's (dest_row, dest_col) of every source (row, col)."""
        group, interweave = (32, 4) if self.meta_bits == 16 else (16, 2)
        rows = np.arange(m)[:, None].repeat(cols, 1)
        col = np.arange(cols)[None, :].repeat(m, 0)
        row = rows // group * group + (rows % 8) * interweave + (rows % group) // 8
        even_row, odd_col = row % 2 == 0, col % 2 == 1
        swap_down = even_row & odd_col        # Z to N: (even, odd) -> (row + 1, col - 1)
        swap_up = ~even_row & ~odd_col        # (odd, even) -> (row - 1, col + 1)
        row = row + swap_down - swap_up
        col = col - swap_down + swap_up
        return row, col

    def _offsets(self, m: int, cols: int) -> np.ndarray:
        row, col = self._destination(m, cols)
        return (col // 2) * (2 * m) + row * 2 + col % 2  # ColumnMajorInterleaved<2>, stride 2M

    def store(self, words: np.ndarray) -> np.ndarray:
        """(M, meta_columns) words -> E's buffer contents (flat in storage order)."""
        m, cols = words.shape
        out = np.zeros(m * cols, dtype=np.uint64)
        out[self._offsets(m, cols).reshape(-1)] = words.reshape(-1)
        return out

    def load(self, stored: np.ndarray, m: int, k: int) -> np.ndarray:
        """E's buffer contents -> the (M, meta_columns) words ``store`` was given."""
        cols = self.meta_columns(k)
        flat = np.asarray(stored).reshape(-1).astype(np.uint64)
        return flat[self._offsets(m, cols)]

    def encode(self, nibbles: np.ndarray) -> np.ndarray:
        """(M, K/step) codes -> E's buffer contents (flat)."""
        return self.store(self.words(nibbles))

    def decode(self, stored: np.ndarray, m: int, k: int) -> np.ndarray:
        """E's buffer contents -> the (M, K/step) codes."""
        return self.nibbles(self.load(stored, m, k))


def compress(fmt, dense: np.ndarray) -> tuple:
    """A dense M x K matrix whose groups are 2:4 (1:2) sparse -> (kept values, codes):
    the first nonzeros of each group in K order, padded with the group's first zero
    positions so every code is one ``random_nibbles`` can give."""
    dense = np.asarray(dense)
    m, k = dense.shape
    groups = dense.reshape(m, k // fmt.step, fmt.step)
    nonzero = groups != 0
    if (nonzero.sum(axis=2) > fmt.kept).any():
        raise ValueError(f"A is not {fmt.kept}:{fmt.step} sparse along K")
    # positions sorted with nonzeros first, each part in K order; keep the first `kept`
    order = np.argsort(~nonzero, axis=2, kind="stable")[:, :, :fmt.kept]
    order = np.sort(order, axis=2)
    kept = np.take_along_axis(groups, order, axis=2).reshape(m, -1)
    if fmt.element_bits == 32:
        # 1:2 is stated as the index pair (0, 1) or (2, 3): code 0x4 or 0xE
        codes = np.where(order[:, :, 0] == 0, 0x4, 0xE).astype(np.uint64)
    else:
        codes = (order[:, :, 0] | (order[:, :, 1] << 2)).astype(np.uint64)
    return kept, codes


@dataclass(frozen=True)
class Sm90SparseFormat(StructuredSparsity):
    """SM90 ``SparseUniversal3x`` storage (``cutlass::Sm90GemmSparseConfig``, as
    ``StructuredSparseCompressor`` writes it): A's kept values are a plain M x K/2 matrix in
    A's major, and E is bytes (``sparse_elem<S, uint8_t>``, S logical A elements per byte,
    two 4-bit codes each, the lower K chunk in the low nibble) placed by the config's
    ``fill_layoutE``: a ``TensorEAtom`` (``make_ordered_layout`` of the shape and step
    below) tiled over M and K. The atom depends on ``min_tile_k`` = min(tile K, 128), so
    kernels of different tile K read different E layouts. Sizes must be whole atoms (M a
    multiple of 64, K of ``min_tile_k``), where no padding is added."""
    min_tile_k: int = 128
    meta_dtype = "uint8"

    @property
    def logical_per_byte(self) -> int:  # ElementEMmaSparsity
        return 2 * self.step

    @property
    def block_k(self) -> int:
        return 512 // self.element_bits

    def check(self, m: int, k: int) -> None:
        if self.min_tile_k % self.block_k:
            raise ValueError(f"min tile K {self.min_tile_k} is not a multiple of {self.block_k}")
        if m % 64 or k % self.min_tile_k:
            raise ValueError(f"SM90 sparse A needs M a multiple of 64 and K of {self.min_tile_k}, got M={m} K={k}")

    def storage_shape(self, m: int, k: int) -> tuple:
        self.check(m, k)
        return (m * k // self.logical_per_byte,)

    def atom(self) -> tuple:
        """(M modes, K modes) of TensorEAtom, each a list of (size, stride)."""
        if self.element_bits == 8:  # Shape<_64, MinTileK>, Step<_1, _0>
            return [(64, self.min_tile_k)], [(self.min_tile_k, 1)]
        num_k = self.min_tile_k // self.block_k
        k0 = 16 if self.element_bits == 16 else 8
        # Shape<Shape<_8,_2,_4>, Shape<k0,_2,NumK>>, Step<Step<_3,_1,_5>, Step<_0,_4,_2>>
        sizes = {"m0": 8, "m1": 2, "m2": 4, "k0": k0, "k1": 2, "k2": num_k}
        order = ["k0", "m1", "k2", "m0", "k1", "m2"]
        strides, running = {}, 1
        for mode in order:
            strides[mode] = running
            running *= sizes[mode]
        return ([(sizes[f"m{i}"], strides[f"m{i}"]) for i in range(3)],
                [(sizes[f"k{i}"], strides[f"k{i}"]) for i in range(3)])

    def logical_offsets(self, m: int, k: int) -> np.ndarray:
        """fill_layoutE's offset (in logical A elements) of every (row, column) of A."""
        self.check(m, k)
        m_modes, k_modes = self.atom()
        atom_m = int(np.prod([s for s, _ in m_modes]))
        atom_k = int(np.prod([s for s, _ in k_modes]))
        cosize = atom_m * atom_k
        m_modes = m_modes + [(m // atom_m, cosize)]
        k_modes = k_modes + [(k // atom_k, m * atom_k)]
        return _offsets_of(np.arange(m), m_modes)[:, None] + _offsets_of(np.arange(k), k_modes)[None, :]

    def _chunk_places(self, m: int, k: int) -> tuple:
        """(byte, nibble) of each code: the offset of its chunk's first logical element."""
        first = self.logical_offsets(m, k)[:, ::self.step]
        return first // self.logical_per_byte, (first % self.logical_per_byte) // self.step

    def encode(self, nibbles: np.ndarray) -> np.ndarray:
        m, groups = nibbles.shape
        byte, half = self._chunk_places(m, groups * self.step)
        out = np.zeros(m * groups * self.step // self.logical_per_byte, dtype=np.uint64)
        np.bitwise_or.at(out, byte.reshape(-1), (nibbles.astype(np.uint64) << (4 * half).astype(np.uint64)).reshape(-1))
        return out

    def decode(self, stored: np.ndarray, m: int, k: int) -> np.ndarray:
        flat = np.asarray(stored).reshape(-1).astype(np.uint64)
        byte, half = self._chunk_places(m, k)
        return (flat[byte] >> (4 * half).astype(np.uint64)) & np.uint64(0xF)


def _offsets_of(index: np.ndarray, modes: list) -> np.ndarray:
    """A cute layout mode of nested (size, stride)s at 1-D ``index``: colexicographic."""
    offset = np.zeros_like(index)
    rest = index.copy()
    for size, stride in modes:
        offset += (rest % size) * stride
        rest //= size
    return offset
