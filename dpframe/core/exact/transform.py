"""Stable transformations on numpy arrays, shared by every backend.

Backends (pandas, Arrow batches, Dask partitions) only factorize keys and feed arrays through
these functions, so clamping, fixed-point accumulation, binning and sampling have exactly one
implementation (contribution bounding has its own module, :mod:`dpframe.core.exact.bounding`). Each
function is a *stable* transformation: one privacy unit's rows influence only that unit's
contribution, which is what the sensitivities in :mod:`dpframe.core.sensitivity` assume.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from .bounding import bound_rows
from .compute import AggregateRequest, ComputeRequest
from .hashing import keyed_priority
from .parallel import BLOCK_ROWS, map_ranges

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]

_SPLIT = 26


def fixed_point(values: npt.ArrayLike, req: AggregateRequest) -> F64:
    """Clamp, shift and quantize values to integers in [req.ilo, req.ihi], held exactly in
    float64 (|value| <= 2**53).

    A missing value (NaN / None) becomes the integer nearest 0 inside [ilo, ihi]: 0, i.e.
    skipped like pandas does, whenever the bounds contain 0 (for means, whose values are shifted
    by the midpoint, always). Every row's value, missing or not, lies in the bounds, so the
    change_one sensitivity (U - L per row) holds too. The integer is clipped *after* rounding,
    so the per-row bound holds exactly whatever floating-point rounding did before.
    """
    x = np.asarray(values)
    if req.integer and x.dtype.kind in "iub":
        return np.clip(x, req.ilo, req.ihi).astype(np.float64)
    v = np.clip(np.asarray(x, dtype=np.float64), req.lo, req.hi)  # a fresh array
    if req.center is not None:  # sums of squares (variances): (x - center)^2, then as usual
        v -= req.center
        np.square(v, out=v)
    if req.shift:
        v -= req.shift
    v *= req.scale  # unit is a power of two: exact scaling
    np.rint(v, out=v)
    if req.rounds_past_bounds:
        np.clip(v, req.ilo, req.ihi, out=v)
    nan = np.isnan(v)
    if nan.any():
        v[nan] = _missing_integer(req)
    return v


def _missing_integer(req: AggregateRequest) -> float:
    """The integer a missing value counts as: the one nearest 0 inside ``[ilo, ihi]``."""
    return float(min(max(0, req.ilo), req.ihi))


def _int64_when_fits(totals: npt.NDArray[np.object_]) -> npt.NDArray[np.int64] | npt.NDArray[
        np.object_]:
    """Exact totals (Python integers) as int64 when every one fits with room to add, else as
    they are (object)."""
    if all(-(1 << 62) < int(t) < (1 << 62) for t in totals):
        return totals.astype(np.int64)
    return totals


def bin_index(values: npt.ArrayLike, edges: tuple[float, ...], right: bool = True,
              include_lowest: bool = False) -> I64:
    """Histogram bin of each value, exactly as ``pd.cut(values, edges, right=right,
    include_lowest=include_lowest)``: bins ``(e_i, e_i+1]`` (``right``) or ``[e_i, e_i+1)``;
    the lowest edge belongs to the first bin only with ``include_lowest`` (and ``right``); the
    highest edge is outside when not ``right``. -1 outside and for NaN."""
    x = np.asarray(values, dtype=np.float64)
    e = np.asarray(edges, dtype=np.float64)
    idx = np.searchsorted(e, x, side="left" if right else "right") - 1
    if right and include_lowest:
        idx[x == e[0]] = 0
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


def cell_index(values: npt.ArrayLike, req: AggregateRequest) -> I64:
    """Cell of each clamped value among ``req.ncells`` equal cells over ``[lo, hi]``; -1 for
    NaN. A function of the value and the public request only: each row lands in one cell."""
    x = np.asarray(values, dtype=np.float64)
    nan = np.isnan(x)
    scale = req.ncells / (req.hi - req.lo)
    pos = np.floor((np.clip(np.where(nan, req.lo, x), req.lo, req.hi) - req.lo) * scale)
    idx = np.clip(pos, 0, req.ncells - 1).astype(np.int64)
    idx[nan] = -1
    return idx


def bucket_codes(codes: I64, ngroups: int, mask: Bools | None = None) -> I64:
    """Group codes with every dropped row (code < 0 or masked out) sent to bucket ``ngroups``,
    so grouped reductions are plain bincounts whose last bin is discarded."""
    drop = codes < 0
    if mask is not None:
        drop |= ~mask
    if not drop.any():
        return codes
    return np.where(drop, ngroups, codes)


def grouped_count(codes: I64, ngroups: int, mask: Bools | None = None) -> I64:
    """Rows per group (codes < 0, or == ngroups, are dropped)."""
    if (mask is None and codes.dtype in (np.int8, np.int16)
            and 1 < ngroups < 1 << (8 * codes.itemsize - 1)):
        # narrow codes read as unsigned: a negative one lands at 2**7 (2**15) or above, past
        # every group, so no drop bucket is written (a pass and an array fewer)
        wide = codes.view(np.uint8 if codes.dtype == np.int8 else np.uint16)
        return np.bincount(wide, minlength=ngroups + 1)[:ngroups].astype(np.int64)
    b = bucket_codes(codes, ngroups, mask)
    if ngroups == 1:  # one group: count the rows not sent to the drop bucket
        return np.array([np.count_nonzero(b == 0)], dtype=np.int64)
    return np.bincount(b, minlength=ngroups + 1)[:ngroups].astype(np.int64)


def grouped_sum_exact(codes: I64, values: F64, ngroups: int, max_abs: int,
                      mask: Bools | None = None) -> npt.NDArray[np.int64] | npt.NDArray[
                          np.object_]:
    """Exact sums per group of integer values (held in float64, |v| <= max_abs <= 2**53).

    Float bincounts are exact while every partial sum is an integer below 2**53, so rows are
    summed in chunks of 2**53 / max_abs rows (2**20 rows for the fixed-point default), and the
    chunk sums are added as integers (in int64 when ``n * max_abs < 2**62`` bounds every total,
    else as Python integers). Very large values are split as hi * 2**26 + lo first.
    """
    b = bucket_codes(codes, ngroups, mask)  # dropped rows sum into bucket ngroups, discarded
    in_int64 = max_abs <= (1 << 40) and b.size * (max_abs + 1) < (1 << 62)
    total = np.zeros(ngroups + 1, dtype=np.int64 if in_int64 else object)
    parts: list[tuple[F64, int]] = [(values, 1)]
    if max_abs > (1 << 40):
        hi = np.floor(values / float(1 << _SPLIT))
        parts = [(hi, 1 << _SPLIT), (values - hi * float(1 << _SPLIT), 1)]
        max_abs = max(max_abs >> _SPLIT, 1 << _SPLIT)
    chunk = max(1 << 10, (1 << 53) // (max_abs + 1))
    # rows whose sum int64 holds whatever their values: past them, the int64 partial sums go
    # into the Python-int total (2**23 rows at 2**40 already pass 2**63)
    flush = max(chunk, (1 << 62) // (max_abs + 1))
    single = ngroups == 1 and not bool((b == ngroups).any())
    for vals, mult in parts:
        acc = np.zeros(ngroups + 1, dtype=np.int64)
        held = 0  # rows summed into acc since it was last added to the total
        for start in range(0, max(b.size, 1), chunk):
            if not in_int64 and held + chunk > flush:
                total = total + acc.astype(object) * mult
                acc[:] = 0
                held = 0
            held += chunk
            if single:  # one group, nothing dropped: any summation order is exact here too
                acc[0] += int(vals[start : start + chunk].sum())
                continue
            s = np.bincount(b[start : start + chunk], weights=vals[start : start + chunk],
                            minlength=ngroups + 1)
            acc += s.astype(np.int64)
        if in_int64:  # every total is below n * max_abs < 2**62: int64 holds it exactly
            return acc[:ngroups]
        total = total + acc.astype(object) * mult
    return _int64_when_fits(total[:ngroups])


def grouped_bin_counts(codes: I64, bins: I64, ngroups: int, nbins: int,
                       mask: Bools | None = None) -> I64:
    """Counts per (group, bin), shape [ngroups, nbins]; negative codes or bins are dropped."""
    ok = (codes >= 0) & (bins >= 0) & (codes < ngroups)
    if mask is not None:
        ok &= mask
    flat = codes[ok].astype(np.int64, copy=False) * nbins + bins[ok]  # (narrow codes widened)
    return np.bincount(flat, minlength=ngroups * nbins).reshape(ngroups, nbins).astype(np.int64)


def poisson_sample(units: I64 | None, n: int, rate: Fraction, gen: np.random.Generator
                   ) -> Bools:
    """Keep each privacy unit (each row at row level) independently with probability
    ``rate``, which must be a dyadic fraction k / 2**53 (planning rounds it up). A unit's rows
    are kept or dropped together via a salted pseudo-random priority of the unit."""
    if rate.denominator > (1 << 53) or (1 << 53) % rate.denominator:
        raise ValueError("sample rate must be a multiple of 2**-53")
    k = np.uint64(rate.numerator * ((1 << 53) // rate.denominator))
    if units is None:
        draws = gen.integers(0, 1 << 53, size=n, dtype=np.uint64)
    else:
        salt = int(gen.integers(0, 2**63))
        draws = keyed_priority(units, np.zeros_like(units), salt) >> np.uint64(11)
    return draws < k


def distinct_units_per_group(units: I64, groups: I64, ngroups: int, mask: Bools) -> I64:
    """Number of distinct units per group among masked rows (for DP key selection)."""
    ok = mask & (units >= 0) & (groups >= 0) & (groups < ngroups)
    u, g = units[ok], groups[ok]
    if u.size == 0:
        return np.zeros(ngroups, dtype=np.int64)
    nu = int(u.max()) + 1
    pairs = np.unique(g.astype(np.int64, copy=False) * nu + u)
    return np.bincount(pairs // nu, minlength=ngroups).astype(np.int64)


def fixed_point_total(values: np.ndarray, req: AggregateRequest) -> tuple[int, int] | None:
    """``(sum(fixed_point(values, req)), non-missing values)`` in one cache-blocked pass, for
    a float64 column (None otherwise: the caller takes the general path).

    Same integers as :func:`fixed_point`: scaling by the unit (a power of two) is exact and
    commutes with clamping and with the shift's subtraction, so ``rint(clip(x s, lo s, hi s)
    - shift s)`` is ``rint((clip(x, lo, hi) - shift) s)``. Each block's sum is exact in float64
    (|value| <= 2**34 and 2**16 values stay below 2**53) and blocks add as Python integers. A
    block whose sum is NaN holds missing values; only that block is scanned for them. Large
    arrays are cut at block boundaries and the ranges run on several threads
    (:mod:`dpframe.core.exact.parallel`): integer totals add up the same in any order.
    """
    x = np.asarray(values)
    max_abs = max(abs(req.ilo), abs(req.ihi))
    if x.dtype != np.float64 or req.center is not None or max_abs * BLOCK_ROWS >= 1 << 53:
        return None
    parts = map_ranges(lambda a, b: _fixed_point_blocks(x[a:b], req), x.size)
    return sum(t for t, _ in parts), x.size - sum(m for _, m in parts)


def _fixed_point_into(chunk: F64, b: F64, req: AggregateRequest) -> None:
    """:func:`fixed_point` of one block of a float64 column written into ``b`` (as long as
    ``chunk``), missing values left NaN: scaled first, then clamped, shifted and rounded (the
    same integers: scaling by a power of two is exact and commutes with the rest)."""
    scale = req.scale
    with np.errstate(over="ignore"):  # |x| near the float limit: inf, then clipped
        np.multiply(chunk, scale, out=b)  # (silently: a warning would tell of the data)
    np.clip(b, req.lo * scale, req.hi * scale, out=b)  # NaN stays NaN
    if req.shift:
        np.subtract(b, req.shift * scale, out=b)
    np.rint(b, out=b)
    if req.rounds_past_bounds:
        np.clip(b, req.ilo, req.ihi, out=b)


def _fixed_point_blocks(x: F64, req: AggregateRequest) -> tuple[int, int]:
    """The exact total of ``fixed_point(x, req)`` and the number of missing values, block by
    block in one reused buffer (the pass of :func:`fixed_point_total`)."""
    fill = _missing_integer(req)
    buf = np.empty(min(BLOCK_ROWS, max(x.size, 1)))
    total, missing = 0, 0
    for start in range(0, x.size, BLOCK_ROWS):
        chunk = x[start:start + BLOCK_ROWS]
        b = buf[:chunk.size]
        _fixed_point_into(chunk, b, req)
        block_sum = float(b.sum())
        if block_sum != block_sum:  # NaN: missing values in this block count as ``fill``
            nan = np.isnan(b)
            missing += int(np.count_nonzero(nan))
            b[nan] = fill
            block_sum = float(b.sum())
        total += int(block_sum)
    return total, missing


#: Below this many rows a grouped fixed-point sum takes the general path: its full-size
#: arrays are small, and the blocked pass's fixed cost (about 25 us) would dominate.
SMALL_GROUPED_ROWS = 1 << 14


def grouped_fixed_point_total(codes: npt.NDArray[np.signedinteger[Any]], values: np.ndarray,
                              req: AggregateRequest, ng: int
                              ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """``(grouped_sum_exact(codes, fixed_point(values, req), ng), non-missing values per
    group)`` in one cache-blocked pass, for a float64 column whose totals int64 holds (None
    otherwise: the caller takes the general path). Rows of a code < 0 or == ``ng`` are
    dropped. Fewer than :data:`SMALL_GROUPED_ROWS` rows: None too.

    The integers are :func:`fixed_point`'s (:func:`_fixed_point_into`). Each block's per-group
    bincount is exact in float64 (|value| <= 2**36 and 2**16 values stay below 2**53), blocks
    add as int64 (every total is below n * max_abs < 2**62), and a block whose sums hold a NaN
    has missing values, counted as ``fill`` like fixed_point's, found in that block only. No
    array of every row is made (a 1e7-row grouped sum made three); ranges run on several
    threads, their integer totals adding up the same in any order."""
    x = np.asarray(values)
    max_abs = max(abs(req.ilo), abs(req.ihi))
    if (x.dtype != np.float64 or req.center is not None or max_abs * BLOCK_ROWS >= 1 << 53
            or x.size * (max_abs + 1) >= 1 << 62 or codes.size != x.size
            or x.size < SMALL_GROUPED_ROWS):
        return None
    parts = map_ranges(lambda a, b: _grouped_fixed_point_blocks(codes[a:b], x[a:b], req, ng),
                       x.size)
    sums, counts = (np.add.reduce([p[i] for p in parts], axis=0) for i in (0, 1))
    return sums[:ng].astype(np.int64, copy=False), counts[:ng].astype(np.int64, copy=False)


def _grouped_fixed_point_blocks(codes: npt.NDArray[np.signedinteger[Any]], x: F64,
                                req: AggregateRequest, ng: int
                                ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The pass of :func:`grouped_fixed_point_total` over one range: per-group int64 totals
    and non-missing counts, ``ng + 1`` long (the last: dropped rows)."""
    fill = _missing_integer(req)
    buf = np.empty(min(BLOCK_ROWS, max(x.size, 1)))
    sums = np.zeros(ng + 1, dtype=np.int64)
    counts = np.zeros(ng + 1, dtype=np.int64)
    for start in range(0, x.size, BLOCK_ROWS):
        chunk = x[start:start + BLOCK_ROWS]
        cb = codes[start:start + BLOCK_ROWS]
        if cb.size and int(cb.min()) < 0:
            cb = np.where(cb < 0, ng, cb)
        b = buf[:chunk.size]
        _fixed_point_into(chunk, b, req)
        block = np.bincount(cb, weights=b, minlength=ng + 1)
        counts += np.bincount(cb, minlength=ng + 1)
        if np.isnan(block).any():  # missing values in this block count as ``fill``
            nan = np.isnan(b)
            counts -= np.bincount(cb[nan], minlength=ng + 1)
            b[nan] = fill
            block = np.bincount(cb, weights=b, minlength=ng + 1)
        sums += block.astype(np.int64)
    return sums, counts


def as_counts(total: int) -> np.ndarray:
    """One group's exact total as grouped_sum_exact returns it (int64, or object if huge)."""
    return _int64_when_fits(np.array([total], dtype=object))


def dropped_rows(units: I64, groups: I64, keep: Bools, cap: int,
                 before: I64 | None = None) -> int:
    """Rows with a unit and a group that contribution bounding dropped, each unit's counted
    up to ``cap`` (``diagnostics=``): one unit changes the total by at most ``cap``.

    ``before``: per row, rows of its unit that a pre-selection dropped earlier (a scan's heavy
    slice, a Dask partition: :func:`carried_drops`), counted with the unit's rows dropped
    here, on its rows with a unit and a group (a unit that sampling leaves out, its group codes
    -1, counts none). Each unit's term is then ``min(rows it had - rows it kept, cap)``, the
    law of bounding all its rows at once, however the rows were batched or pre-selected."""
    _, per_unit = _drops_per_unit(units, groups, keep, before)
    return 0 if per_unit is None else int(np.minimum(per_unit, cap).sum())


def _drops_per_unit(units: I64, groups: I64, keep: Bools, before: I64 | None
                    ) -> tuple[Bools, I64 | None]:
    """The rows with a unit and a group, and per unit code the rows of them dropped: those
    ``keep`` drops plus ``before`` (exact integers); None when no row has a unit and a group."""
    valid = (units >= 0) & (groups >= 0)
    if not bool(valid.any()):
        return valid, None
    nu = int(units[valid].max()) + 1
    per_unit = np.bincount(units[valid & ~keep].astype(np.int64), minlength=nu)
    if before is not None:
        np.add.at(per_unit, units[valid].astype(np.int64, copy=False),
                  before[valid].astype(np.int64, copy=False))
    return valid, per_unit


def carried_drops(units: I64, groups: I64, keep: Bools, before: I64 | None = None) -> I64:
    """What a pre-selection hands on with the rows it keeps, for :func:`dropped_rows` to count
    later: per kept row (in the order of ``np.flatnonzero(keep)``), the rows of its unit with
    a unit and a group dropped so far (``before``, on the block's rows, plus those ``keep``
    drops), all on the unit's first kept row, 0 on the others. Every unit with a row keeps
    one (each contribution bound is at least 1), so no unit's count is lost, and the unit's
    total is the rows it had less the rows kept, whatever the blocks."""
    kept = np.flatnonzero(keep)
    out = np.zeros(kept.size, dtype=np.int64)
    valid, per_unit = _drops_per_unit(units, groups, keep, before)
    if not kept.size or per_unit is None:
        return out
    kept_units = units[kept].astype(np.int64)
    ok = valid[kept]
    _, first = np.unique(kept_units[ok], return_index=True)
    at = np.flatnonzero(ok)[first]
    out[at] = per_unit[kept_units[at]]
    return out


def bounded_rows(request: ComputeRequest, group_codes: I64, unit_codes: I64 | None, ng: int,
                 gen: np.random.Generator | None, dropped_before: I64 | None = None
                 ) -> tuple[I64, npt.NDArray[np.intp] | None, int]:
    """Group codes after Poisson sampling of units and contribution bounding, and the rows
    they are for: every row (None), each dropped row sent to bucket ``ng``; or, when bounding
    kept at most half of the rows, the kept rows' indices and their codes alone (later passes
    then read only those: one group per unit keeps about one row in nine at 10 rows a unit).
    Both forms give the same aggregates. ``gen`` is None only when the request draws nothing
    at random (:attr:`ComputeRequest.draws_at_random`). Codes keep their signed type (a
    narrow one holds ``ng`` too: :func:`~dpframe.backends.base.group_code_dtype`); every
    reduction reads them as they are, or widens the rows it multiplies. Third: the rows
    bounding dropped, per unit up to ``request.diagnostics_cap`` (0 without diagnostics), with
    the rows a pre-selection dropped before (``dropped_before``: :func:`carried_drops`)."""
    group_codes = _signed_codes(group_codes)
    if not request.draws_at_random:
        return bucket_codes(group_codes, ng), None, 0
    assert gen is not None, "sampling and bounding draw at random: the caller passes a generator"
    if request.sample_rate is not None:
        group_codes = np.where(poisson_sample(unit_codes, group_codes.size, request.sample_rate,
                                              gen), group_codes, -1)
    if not request.privacy_unit:
        return bucket_codes(group_codes, ng), None, 0
    assert unit_codes is not None
    by = request.by
    mask, rows = bound_rows(unit_codes, group_codes if by else None, request.rows_per_group,
                            request.groups_per_unit, gen, request.rows_per_unit if by else None)
    dropped = (0 if request.diagnostics_cap is None
               else dropped_rows(unit_codes, group_codes, mask, request.diagnostics_cap,
                                 dropped_before))
    if rows is None:
        if np.count_nonzero(mask) * 2 > mask.size:
            return bucket_codes(group_codes, ng, mask), None, dropped
        rows = np.flatnonzero(mask)
    return bucket_codes(group_codes[rows], ng), rows, dropped


def _signed_codes(codes: npt.ArrayLike) -> npt.NDArray[np.signedinteger[Any]]:
    """Group codes as a signed integer array: as they are when they are one (int8 for a few
    keys: an eighth of the bytes of every pass), else as int64."""
    a = np.asarray(codes)
    return a if a.dtype.kind == "i" else a.astype(np.int64)
