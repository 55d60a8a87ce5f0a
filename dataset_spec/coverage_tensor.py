"""The coverage counts of ``coverage.py`` for a buffer that is a torch tensor: counted where
the tensor lives, so a group whose trials were drawn on the GPU is measured there instead of
copying every trial's float64 values back to the host (gigabytes per group at llm sizes).
Each function gives exactly the counts of its numpy twin in ``coverage.py``."""
from __future__ import annotations

from .numerics import FORMATS
from .ops.items import top_binade_floor


def count_values(values, dtype: str, wanted: list, exp_range: float) -> dict:
    """``coverage._count_values`` on a float64 tensor."""
    import torch
    flat = values.reshape(-1)
    out = {}
    finite = torch.isfinite(flat)
    magnitude = torch.where(finite, flat.abs(), torch.zeros((), dtype=flat.dtype, device=flat.device))
    binades = [i for i in wanted if i.what == "binade"]
    if binades:
        keep = magnitude > 0
        if dtype in FORMATS:
            keep &= magnitude >= FORMATS[dtype].tiny
        normal = magnitude[keep]
        exponents = ((normal.view(torch.int64) >> 52) & 0x7FF) - 1023
        by_exponent = {}
        if exponents.numel():
            low = int(exponents.min())
            counts = torch.bincount(exponents - low).tolist()
            by_exponent = {low + i: c for i, c in enumerate(counts) if c}
        for item in binades:
            out[item.key] = int(by_exponent.get(int(item.arg), 0))
    for item in wanted:
        what = item.what
        if what == "binade":
            continue
        if what == "subnormal":
            count = ((magnitude > 0) & (magnitude < FORMATS[dtype].tiny)).sum() if dtype in FORMATS else 0
        elif what == "zero":
            count = ((flat == 0) & ~torch.signbit(flat)).sum()
        elif what == "neg_zero":
            count = ((flat == 0) & torch.signbit(flat)).sum()
        elif what == "top_binade":
            count = (finite & (magnitude >= top_binade_floor(dtype))).sum() if dtype in FORMATS else 0
        elif what == "nan":
            count = torch.isnan(flat).sum()
        elif what == "inf":
            count = torch.isposinf(flat).sum()
        elif what == "neg_inf":
            count = torch.isneginf(flat).sum()
        elif what == "int":
            count = (flat == float(item.arg)).sum()
        else:
            continue
        out[item.key] = int(count)
    return out


def _rows(values, axis):
    axis = -1 if axis is None else int(axis)
    if values.dim() == 0:
        return values.reshape(1, 1)
    moved = values.movedim(axis, -1)
    return moved.reshape(-1, moved.shape[-1])


def count_rows(values, item, exp_range: float) -> int:
    """``coverage._count_rows`` on a float64 tensor."""
    import torch
    what = item.what
    if what == "nonfinite_all":
        flat = values.reshape(-1)
        return int(flat.numel() > 0 and not bool(torch.isfinite(flat).any()) and bool(torch.isnan(flat).any())
                   and bool(torch.isinf(flat).any()))
    rows = _rows(values, item.arg)
    if what == "zero_slice":
        return int((rows == 0).all(dim=0).sum()) if rows.shape[0] > 1 else 0
    if what == "zero_row":
        return int((rows == 0).all(dim=1).sum()) if rows.shape[1] > 1 else 0
    if what in ("inf_row", "neg_inf_row"):
        test = torch.isposinf if what == "inf_row" else torch.isneginf
        return int(test(rows).any(dim=1).sum())
    if rows.shape[1] < 2:
        return 0
    finite_rows = torch.isfinite(rows).all(dim=1)
    if what == "negative_spread_row":
        top, bottom = rows.amax(dim=1), rows.amin(dim=1)
        hit = finite_rows & (top < 0) & (top - bottom > exp_range)
    elif what == "max_first_far":
        hit = finite_rows & (rows[:, 0] - rows[:, 1:].amax(dim=1) > exp_range)
    elif what == "max_last_far":
        hit = finite_rows & (rows[:, -1] - rows[:, :-1].amax(dim=1) > exp_range)
    else:
        return 0
    return int(hit.sum())
