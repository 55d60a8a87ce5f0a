"""float64 references of flash-linear-attention's chunked kernels (examples/fla), computed from
the definitions of the functions, never from the chunked algorithm the kernels use.

Simple gated linear attention (simple GLA, fla.ops.simple_gla) is the recurrence, per batch
and head, over tokens t with a scalar log-decay g_t, keys k_t, values v_t, queries q_t:

    S_t = exp(g_t) S_{t-1} + k_t^T v_t        (S_{-1} = 0, S_t a K x V state)
    o_t = scale * q_t S_t

The kernels take g as fla's host prepares it: the chunk-local cumulative sum of g in log2
units (``chunk_local_cumsum(g, chunk_size, scale=1/ln 2)``), which the descriptions derive from
the drawn per-token ``g_raw`` (``params.derived_inputs``); chunk_fwd_o also reads the states
at the chunk starts, derived likewise from the recurrence and rounded to their dtype.

Error scales. The kernels round terms to bfloat16 inside their math (decayed values before
the state update, the masked q k^T matrix before its product with v, the stored states),
each a relative error of at most 2^-8 of one term: the problems say ``math_input:
bfloat16`` and S is the root sum of squares of the terms those roundings touch (as
dataset_spec/ops/llm.py's errors of float16 intermediates), so random-sign terms that cancel
do not widen the bound by their count.
"""
import numpy as np

LN2 = np.log(2.0)


def _chunk(problem):
    return int(problem.params["chunk_size"])


def _local_cumsum(values, chunk, reverse=False):
    """Prefix sums along axis 1 (time) restarted at every chunk boundary."""
    out = np.empty_like(values)
    for start in range(0, values.shape[1], chunk):
        block = values[:, start:start + chunk]
        out[:, start:start + chunk] = (np.flip(np.cumsum(np.flip(block, 1), axis=1), 1) if reverse
                                       else np.cumsum(block, axis=1))
    return out


def chunk_local_cumsum(inputs, problem):
    """o = params.scale times the prefix sum of s along time within each chunk of
    params.chunk_size tokens (suffix sums with params.reverse)."""
    s = inputs["s"]
    scale = float(problem.params.get("scale", 1.0))
    return {"o": scale * _local_cumsum(s, _chunk(problem), bool(problem.params.get("reverse", False)))}


def chunk_local_cumsum_error_scale(inputs, problem):
    s = np.abs(inputs["s"])
    scale = abs(float(problem.params.get("scale", 1.0)))
    return {"o": scale * _local_cumsum(s, _chunk(problem), bool(problem.params.get("reverse", False)))}


def log2_decay_cumsum(inputs, problem):
    """Derived input g: the chunk-local cumulative sum of g_raw in log2 units, as fla's
    chunk_simple_gla_fwd prepares it for its kernels."""
    return _local_cumsum(inputs["g_raw"], _chunk(problem)) / LN2


def _recurrence(k, v, g_raw, chunk, q=None):
    """The state S before each chunk (B, NT, H, K, V), the final state (B, H, K, V) and, with
    q, every q_t S_t (B, T, H, V): the token recurrence, in float64."""
    batch, steps, heads, dk = k.shape
    state = np.zeros((batch, heads, dk, v.shape[-1]))
    starts, outputs = [], []
    for t in range(steps):
        if t % chunk == 0:
            starts.append(state.copy())
        state = state * np.exp(g_raw[:, t])[:, :, None, None] + k[:, t, :, :, None] * v[:, t, :, None, :]
        if q is not None:
            outputs.append(np.einsum("bhk,bhkv->bhv", q[:, t], state))
    return np.stack(starts, axis=1), state, (np.stack(outputs, axis=1) if q is not None else None)


def chunk_states(inputs, problem):
    """Derived input h of chunk_fwd_o: the states at the chunk starts."""
    return _recurrence(inputs["k"], inputs["v"], inputs["g_raw"], _chunk(problem))[0]


def chunk_fwd_h(inputs, problem):
    """h: S before each chunk (stored in k's dtype), ht: the final state (float32)."""
    h, final, _ = _recurrence(inputs["k"], inputs["v"], inputs["g_raw"], _chunk(problem))
    return {"h": h, "ht": final}


def chunk_fwd_h_error_scale(inputs, problem):
    """Each chunk's values are decayed to the chunk's end and rounded to bfloat16 before the
    state update: the root sum of squares of the terms k_s v_s^T exp(G_end - G_s), decayed as
    the state is."""
    k, v, g_raw = inputs["k"], inputs["v"], inputs["g_raw"]
    chunk = _chunk(problem)
    squares = _recurrence(k * k, v * v, 2.0 * g_raw, chunk)
    return {"h": np.sqrt(squares[0]), "ht": np.sqrt(squares[1])}


def chunk_fwd_o(inputs, problem):
    """o_t = scale * q_t S_t (the recurrence's output)."""
    scale = float(problem.params["scale"])
    _, _, out = _recurrence(inputs["k"], inputs["v"], inputs["g_raw"], _chunk(problem), q=inputs["q"])
    return {"o": scale * out}


def chunk_fwd_o_error_scale(inputs, problem):
    """Roundings to bfloat16 of the stored states h (each term q_tk h_kv exp(G_t) of the
    inter-chunk part) and of the masked A_ts = q_t k_s exp(G_t - G_s) (each term A_ts v_s of
    the intra-chunk part): their root sum of squares, times scale."""
    q, k, v, g_raw = inputs["q"], inputs["k"], inputs["v"], inputs["g_raw"]
    chunk, scale = _chunk(problem), abs(float(problem.params["scale"]))
    starts = _recurrence(k, v, g_raw, chunk)[0]
    cumulative = _local_cumsum(g_raw, chunk)
    total = np.zeros(v.shape)
    for index, start in enumerate(range(0, q.shape[1], chunk)):
        span = slice(start, start + chunk)
        qc, kc, vc, gc = q[:, span], k[:, span], v[:, span], cumulative[:, span]
        inter = np.einsum("bthk,bhkv->bthv", qc * qc, starts[:, index] ** 2) * np.exp(2.0 * gc)[..., None]
        decay = np.exp(gc[:, :, None, :] - gc[:, None, :, :])           # (b, t, s, h)
        causal = np.tril(np.ones((qc.shape[1], qc.shape[1])))[None, :, :, None]
        a = np.einsum("bthk,bshk->btsh", qc, kc) * decay * causal
        intra = np.einsum("btsh,bshv->bthv", a * a, vc * vc)
        total[:, span] = inter + intra
    return {"o": scale * np.sqrt(total)}
