"""Stable transformations on numpy arrays, shared by every backend.

Backends (pandas, Arrow batches, Dask partitions) only factorize keys and feed arrays through
these functions, so clamping, fixed-point accumulation, binning and contribution bounding have
exactly one implementation. Each function is a *stable* transformation: one privacy unit's rows
influence only that unit's contribution, which is what the sensitivities in
:mod:`dpframe.core.sensitivity` assume.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from .plan import AggregateRequest, ExactAggregates, ReleasePlan

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]

_SPLIT = 26
_CHUNK = 1 << 26  # rows per bincount pass: n * 2**26 < 2**53 keeps float sums exact


def fixed_point(values: npt.ArrayLike, req: AggregateRequest) -> tuple[I64, Bools]:
    """Clamp, shift and quantize values to integers in [req.ilo, req.ihi]; also the valid mask.

    Missing values (NaN / None) are invalid and contribute nothing (documented policy: sums and
    means skip missing values, like pandas). The integer is clipped *after* rounding, so the
    per-row bound holds exactly whatever floating-point rounding did before.
    """
    x = np.asarray(values)
    if req.integer and x.dtype.kind in "iub":
        valid = np.ones(x.shape, dtype=bool)
        return np.clip(x.astype(np.int64, copy=False), req.ilo, req.ihi), valid
    xf = np.asarray(x, dtype=np.float64)
    valid = ~np.isnan(xf)
    clamped = np.clip(xf, req.lo, req.hi)
    if req.shift:
        clamped = clamped - req.shift
    scaled = np.rint(clamped * float(1 / req.unit))  # unit is a power of two: exact scaling
    scaled[~valid] = 0.0
    return np.clip(scaled, req.ilo, req.ihi).astype(np.int64), valid


def bin_index(values: npt.ArrayLike, edges: tuple[float, ...], right: bool = True) -> I64:
    """Histogram bin of each value (pd.cut semantics, lowest edge included); -1 outside/NaN."""
    x = np.asarray(values, dtype=np.float64)
    e = np.asarray(edges, dtype=np.float64)
    idx = np.searchsorted(e, x, side="left" if right else "right") - 1
    if right:
        idx[x == e[0]] = 0
    else:
        idx[x == e[-1]] = len(e) - 2
    bad = np.isnan(x) | (idx < 0) | (idx >= len(e) - 1)
    idx[bad] = -1
    return idx.astype(np.int64)


def grid_index(values: npt.ArrayLike, req: AggregateRequest) -> I64:
    """Candidate cell of each clamped value: the first candidate >= x; -1 for NaN."""
    x = np.asarray(values, dtype=np.float64)
    nan = np.isnan(x)
    idx = np.searchsorted(np.asarray(req.edges), np.clip(x, req.lo, req.hi), side="left")
    idx = np.minimum(idx, len(req.edges) - 1)
    idx[nan] = -1
    return idx.astype(np.int64)


def grouped_count(codes: I64, ngroups: int, mask: Bools | None = None) -> I64:
    """Rows per group (codes < 0 are dropped)."""
    ok = codes >= 0 if mask is None else (codes >= 0) & mask
    return np.bincount(codes[ok], minlength=ngroups).astype(np.int64)


def grouped_sum_exact(codes: I64, values: I64, ngroups: int, mask: Bools | None = None
                      ) -> npt.NDArray[np.int64] | npt.NDArray[np.object_]:
    """Exact integer sums per group, fast: each value is split as hi * 2**26 + lo and both parts
    are summed with float bincounts over chunks short enough that every partial sum is an
    integer below 2**53 (so the float arithmetic is exact)."""
    ok = codes >= 0 if mask is None else (codes >= 0) & mask
    c, v = codes[ok], values[ok]
    total = np.zeros(ngroups, dtype=object)
    for start in range(0, max(c.size, 1), _CHUNK):
        cc, vv = c[start : start + _CHUNK], v[start : start + _CHUNK]
        hi = vv >> _SPLIT
        lo = vv - (hi << _SPLIT)
        s_hi = np.bincount(cc, weights=hi.astype(np.float64), minlength=ngroups)
        s_lo = np.bincount(cc, weights=lo.astype(np.float64), minlength=ngroups)
        part = s_hi.astype(np.int64).astype(object) * (1 << _SPLIT) + s_lo.astype(np.int64)
        total = total + part
    if all(-(1 << 62) < int(t) < (1 << 62) for t in total):
        return total.astype(np.int64)
    return total


def grouped_bin_counts(codes: I64, bins: I64, ngroups: int, nbins: int,
                       mask: Bools | None = None) -> I64:
    """Counts per (group, bin), shape [ngroups, nbins]; negative codes or bins are dropped."""
    ok = (codes >= 0) & (bins >= 0)
    if mask is not None:
        ok &= mask
    flat = codes[ok] * nbins + bins[ok]
    return np.bincount(flat, minlength=ngroups * nbins).reshape(ngroups, nbins).astype(np.int64)


def _rank_in_runs(sorted_keys: I64) -> I64:
    """Position of each element within its run of equal keys (input sorted)."""
    n = sorted_keys.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.empty(n, dtype=bool)
    start[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=start[1:])
    pos = np.arange(n, dtype=np.int64)
    run_start = np.maximum.accumulate(np.where(start, pos, 0))
    return pos - run_start


def bound_contributions(units: I64, groups: I64 | None, max_rows: int, max_groups: int,
                        gen: np.random.Generator) -> Bools:
    """Mask keeping at most ``max_groups`` groups per unit and ``max_rows`` rows per
    (unit, group), each chosen uniformly at random (never by row order).

    Rows with a negative unit or group code are dropped. Groups: every distinct (unit, group)
    pair gets an independent uniform random priority; a unit keeps its ``max_groups`` pairs of
    smallest priority, a uniform random subset. Rows: a uniform random permutation breaks ties
    inside each pair; a pair keeps its first ``max_rows`` rows in that order, again a uniform
    subset. The choice for a unit depends only on that unit's rows and fresh randomness, so the
    transformation is stable. Vectorized: two sorts, no Python loop over units.
    """
    n = units.size
    g = np.zeros(n, dtype=np.int64) if groups is None else groups
    valid = (units >= 0) & (g >= 0)
    idx = np.flatnonzero(valid)
    u, gg = units[idx], g[idx]
    ng = int(gg.max()) + 1 if gg.size else 1
    nu = int(u.max()) + 1 if u.size else 1
    if nu * ng >= (1 << 62) // max(idx.size, 1):
        order = np.lexsort((gen.permutation(idx.size), gg, u))
    else:
        pair_key = u * ng + gg
        order = np.argsort(pair_key * idx.size + gen.permutation(idx.size))
    su, sg = u[order], gg[order]
    pair = su * ng + sg if nu * ng < (1 << 62) else None
    if pair is None:  # pragma: no cover - astronomically many units x groups
        pair_change = np.r_[True, (su[1:] != su[:-1]) | (sg[1:] != sg[:-1])]
        pair_id = np.cumsum(pair_change) - 1
    else:
        pair_change = np.r_[True, pair[1:] != pair[:-1]] if pair.size else np.zeros(0, bool)
        pair_id = np.cumsum(pair_change) - 1
    row_rank = _rank_in_runs(pair_id)
    keep_sorted = row_rank < max_rows
    if groups is not None and pair_id.size:
        npairs = int(pair_id[-1]) + 1
        pair_unit = su[pair_change]
        prio = gen.permutation(npairs)
        porder = np.lexsort((prio, pair_unit))
        prank = np.empty(npairs, dtype=np.int64)
        prank[porder] = _rank_in_runs(pair_unit[porder])
        keep_sorted &= (prank < max_groups)[pair_id]
    mask = np.zeros(n, dtype=bool)
    mask[idx[order[keep_sorted]]] = True
    return mask


def distinct_units_per_group(units: I64, groups: I64, ngroups: int, mask: Bools) -> I64:
    """Number of distinct units per group among masked rows (for DP key selection)."""
    ok = mask & (units >= 0) & (groups >= 0)
    u, g = units[ok], groups[ok]
    if u.size == 0:
        return np.zeros(ngroups, dtype=np.int64)
    nu = int(u.max()) + 1
    pairs = np.unique(g * nu + u)
    return np.bincount(pairs // nu, minlength=ngroups).astype(np.int64)


def compute_exact(
    plan: ReleasePlan,
    group_codes: I64,
    keys: list[tuple[object, ...]],
    unit_codes: I64 | None,
    column: Callable[[str], tuple[np.ndarray, Bools]],
    gen: np.random.Generator,
) -> ExactAggregates:
    """Exact aggregates for one block of rows (a whole frame, a batch, or a partition).

    ``group_codes`` index ``keys`` (-1: row dropped: undeclared or missing key);
    ``unit_codes`` identify privacy units (-1: missing unit, dropped); ``column(name)`` returns
    a column as a numpy array and its non-missing mask. Results of blocks that hold disjoint
    units add up (:meth:`ExactAggregates.merge`).
    """
    q = plan.query
    ng = len(keys)
    if q.privacy_unit:
        assert unit_codes is not None
        mask = bound_contributions(unit_codes, group_codes if q.by else None,
                                   plan.contribution.rows, plan.contribution.groups, gen)
    else:
        mask = group_codes >= 0
    values: dict[tuple[object, ...], np.ndarray] = {}
    counts: dict[tuple[object, ...], np.ndarray] = {}
    for req in plan.requests:
        if req.kind == "rows":
            values[req.key] = grouped_count(group_codes, ng, mask)
            continue
        assert req.column is not None
        raw, valid = column(req.column)
        if req.kind == "nonnull":
            values[req.key] = grouped_count(group_codes, ng, mask & valid)
        elif req.kind == "fixed_sum":
            fx, ok = fixed_point(raw, req)
            m = mask & valid & ok
            values[req.key] = grouped_sum_exact(group_codes, fx, ng, m)
            counts[req.key] = grouped_count(group_codes, ng, m)
        elif req.kind == "bins":
            b = bin_index(raw, req.edges, req.right)
            values[req.key] = grouped_bin_counts(group_codes, b, ng, len(req.edges) - 1,
                                                 mask & valid)
        elif req.kind == "grid":
            b = grid_index(raw, req)
            values[req.key] = grouped_bin_counts(group_codes, b, ng, len(req.edges),
                                                 mask & valid)
    unit_counts = None
    if plan.selection is not None:
        if q.privacy_unit:
            assert unit_codes is not None
            unit_counts = distinct_units_per_group(unit_codes, group_codes, ng, mask)
        else:
            unit_counts = grouped_count(group_codes, ng, mask)
    return ExactAggregates(list(keys), values, counts, unit_counts)
