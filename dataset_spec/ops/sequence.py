"""Integer sequence ops: smith_waterman (affine-gap local alignment scores)."""
from __future__ import annotations

import numpy as np

from .spec import OpSpec, _inputs_of, _out_name


def ref_smith_waterman(inputs, problem):
    """Smith-Waterman local alignment with affine gaps, per pair of rows of ``query`` (P, M)
    and ``target`` (P, N): ``row_best[p, i] = max_j H[i+1][j]``. Textbook recurrences in
    int64 (a gap of length L costs gap_open + (L - 1) * gap_extend):
    E[i][j] = max(E[i][j-1] - ext, H[i][j-1] - open); F[i][j] = max(F[i-1][j] - ext,
    H[i-1][j] - open); H[i][j] = max(0, H[i-1][j-1] + s(q_i, t_j), E[i][j], F[i][j])."""
    query, target = (np.rint(a).astype(np.int64) for a in _inputs_of(problem, inputs, "query", "target"))
    p = problem.params
    match, mismatch = int(p["match"]), int(p["mismatch"])
    gap_open, gap_extend = int(p["gap_open"]), int(p["gap_extend"])
    pairs, m = query.shape
    n = target.shape[1]
    neg = np.int64(-(1 << 40))
    h_up = np.zeros((pairs, n + 1), dtype=np.int64)       # H of the row above (row 0: zeros)
    f_up = np.full((pairs, n + 1), neg, dtype=np.int64)
    best = np.zeros((pairs, m), dtype=np.int64)
    for i in range(m):
        subst = np.where(query[:, i:i + 1] == target, match, mismatch)
        f_row = np.maximum(f_up[:, 1:] - gap_extend, h_up[:, 1:] - gap_open)
        diag = h_up[:, :-1] + subst
        h_row = np.zeros((pairs, n + 1), dtype=np.int64)
        e = np.full(pairs, neg, dtype=np.int64)
        for j in range(1, n + 1):
            e = np.maximum(e - gap_extend, h_row[:, j - 1] - gap_open)
            h_row[:, j] = np.maximum(np.maximum(diag[:, j - 1], 0), np.maximum(e, f_row[:, j - 1]))
        best[:, i] = h_row.max(axis=1)
        h_up = h_row
        f_up = np.concatenate([np.full((pairs, 1), neg), f_row], axis=1)
    return {_out_name(problem): best.astype(np.float64)}


def range_alphabet(problem, buffer):
    """Sequence letters 0 .. alphabet - 1 (4: DNA-like)."""
    return 0, int(problem.params.get("alphabet", 4))


OPS = [
    OpSpec("smith_waterman", ref_smith_waterman, lambda p: 1,
           "row_best[p, i] = max_j H[i][j] of a Smith-Waterman alignment with affine gaps of "
           "query[p] against target[p]", None, None, "exact (int32 scores)",
           integer_range=range_alphabet),
]
