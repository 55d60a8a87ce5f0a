"""The Triton Smith-Waterman kernel of the ``handhack`` source (affine gaps, local alignment).

One program aligns one (query, target) pair by anti-diagonals: lane ``k`` holds query row
``i = k + 1``, so a diagonal ``d = i + j`` is one vector. Cell (i, j) needs its left
neighbour (same lane, diagonal d-1), its upper neighbour (lane k-1, d-1) and its diagonal
neighbour (lane k-1, d-2). Triton cannot shift a vector across lanes, so the previous
diagonals go through three ring buffers in global memory: ``h_ring`` (3 diagonals of H),
``e_ring`` and ``f_ring`` (2 diagonals each), slot ``d % depth``, index ``i`` (index 0 is
the DP's row 0). That round trip through global memory is what the hand edit
(``ptx_edit.py``) moves into shared memory.

Recurrences (scores are int32; a gap of length L costs gap_open + (L - 1) * gap_extend):
    E[i][j] = max(E[i][j-1] - gap_extend, H[i][j-1] - gap_open)
    F[i][j] = max(F[i-1][j] - gap_extend, H[i-1][j] - gap_open)
    H[i][j] = max(0, H[i-1][j-1] + (match if q_i == t_j else mismatch), E[i][j], F[i][j])
Output: ``row_best[pair, i - 1] = max_j H[i][j]`` (the best local alignment ending in each
query row; its maximum is the pair's Smith-Waterman score).
"""
import triton
import triton.language as tl

NEG = -(1 << 20)  # "minus infinity" that cannot overflow int32 over any diagonal count


@triton.jit
def sw_kernel(query_ptr, target_ptr, row_best_ptr, h_ring_ptr, e_ring_ptr, f_ring_ptr,
              M, N, match, mismatch, gap_open, gap_extend,
              BLOCK: tl.constexpr, NEG_INF: tl.constexpr):
    pair = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    rows = lanes + 1                        # query row i of each lane
    in_query = rows <= M
    width = BLOCK + 1                       # ring slot width: index 0 is DP row 0
    h_ring = h_ring_ptr + pair * (3 * width)
    e_ring = e_ring_ptr + pair * (2 * width)
    f_ring = f_ring_ptr + pair * (2 * width)
    q = tl.load(query_ptr + pair * M + lanes, mask=in_query, other=0)
    zeros = tl.zeros([BLOCK], dtype=tl.int32)
    neg = zeros + NEG_INF
    # row 0 of the DP and the column-0 boundary, for every slot
    for slot in tl.static_range(3):
        tl.store(h_ring + slot * width + rows, zeros)
        tl.store(h_ring + slot * width, 0)
    for slot in tl.static_range(2):
        tl.store(e_ring + slot * width + rows, neg)
        tl.store(f_ring + slot * width + rows, neg)
        tl.store(f_ring + slot * width, NEG_INF)
    best = zeros
    tl.debug_barrier()
    for d in range(2, M + N + 1):
        cols = d - rows                     # target column j of each lane
        valid = in_query & (cols >= 1) & (cols <= N)
        cur_h, prev_h, prev2_h = d % 3, (d - 1) % 3, (d - 2) % 3
        cur_ef, prev_ef = d % 2, (d - 1) % 2
        t = tl.load(target_ptr + pair * N + cols - 1, mask=valid, other=0)
        left_h = tl.load(h_ring + prev_h * width + rows)
        left_e = tl.load(e_ring + prev_ef * width + rows)
        up_h = tl.load(h_ring + prev_h * width + rows - 1)
        up_f = tl.load(f_ring + prev_ef * width + rows - 1)
        diag_h = tl.load(h_ring + prev2_h * width + rows - 1)
        e = tl.maximum(left_e - gap_extend, left_h - gap_open)
        f = tl.maximum(up_f - gap_extend, up_h - gap_open)
        score = tl.where(q == t, match, mismatch)
        h = tl.maximum(tl.maximum(diag_h + score, 0), tl.maximum(e, f))
        # cells left of column 1 are the DP's column 0: H = 0, E = F = -inf
        h = tl.where(cols >= 1, h, 0)
        e = tl.where(cols >= 1, e, NEG_INF)
        f = tl.where(cols >= 1, f, NEG_INF)
        best = tl.where(valid, tl.maximum(best, h), best)
        tl.debug_barrier()
        tl.store(h_ring + cur_h * width + rows, h)
        tl.store(e_ring + cur_ef * width + rows, e)
        tl.store(f_ring + cur_ef * width + rows, f)
        tl.debug_barrier()
    tl.store(row_best_ptr + pair * M + lanes, best, mask=in_query)
