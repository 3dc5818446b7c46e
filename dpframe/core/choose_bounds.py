"""A DP choice of contribution bounds: T (``max_rows_per_unit``), k (``max_groups_per_unit``)
and R (``max_rows_per_group``) for the release a user is about to run.

**Mechanism.** The backend computes, exactly, each privacy unit's number of rows in each group
of the intended grouping (one private-key group-by over ``(unit, *by)``, no noise). From those
the core builds up to three histograms over the candidate ladder (1, 2, 3, 5, 7, 10, 15, 20, ... up
to a declared ``cap``; bin i holds the units whose count n has ``c[i-1] < n <= c[i]``, a last
bin those above the cap):

* ``rows``: each unit's rows in the release (the T histogram);
* ``groups``: each unit's number of groups (k; only with ``by``);
* ``max_rows``: each unit's largest number of rows in one group (R; only with ``by``).

Each histogram is released with discrete Laplace (geometric) noise at an equal share of
``epsilon``. Everything after that is post-processing of the noisy histograms and public
parameters: bins above the highest bin whose noisy count passes a tail threshold are read as
empty, and the bounds are the candidates that minimise the estimated per-group RMSE of the
intended release at ``release_epsilon`` (``release=``, below) over ``groups`` groups (the
declared keys' combinations): its noise for the sensitivity ``s = min(T, k R)`` against the
bias of the rows the bounds drop. Rows dropped by T are read from the ``rows`` histogram, by R
from ``max_rows`` times the average number of groups of a unit (the largest group's excess in
every group: an upper bound for each unit), by k from ``groups`` times the average rows of a
unit in a group; each bin's units are taken at the bin's midpoint. With ``D`` the rows dropped
per group, ``N`` the rows per group (from ``rows``) and ``n = max(N - D, 1)`` those kept, the
error models (in units of ``M = hi - lo``, the declared value bounds' width; ``e`` =
``release_epsilon``) are:

* ``"count"``: a Laplace count, noise ``sqrt(2) s / e`` rows; each dropped row costs 1:
  ``sqrt(2 (s/e)**2 + D**2)`` (in rows).
* ``"sum"`` (the default): a Laplace sum, noise ``sqrt(2) s M / e``; each dropped row costs
  ``M/2`` on average: ``sqrt(2 (s/e)**2 + (D/2)**2)``.
* ``"mean"``: a noisy sum over a noisy count, each at ``e/2`` (:mod:`~dpframe.core.aggregates.
  mean`): the shifted sum's noise ``sqrt(2) s M / e`` and the count's ``2 sqrt(2) s / e`` times
  at most ``M/2``, over the ``n`` kept rows; the dropped rows move the mean by at most their
  share times ``M/2``: ``sqrt(4 (s/e)**2 / n**2 + (D / (2 N))**2)``.
* ``"quantile"``: the exponential mechanism over ``2**16`` cells, each group at ``e R / s``
  (:func:`~dpframe.core.sensitivity.quantile_group_share`): its expected rank error is at most
  ``2 s ln(cells) / e`` rows (McKenna and Sheldon 2020), as a share of the ``n`` kept rows; the
  dropped rows move the rank by about ``D/2``: ``sqrt((2 s ln(cells) / e)**2 / n**2 +
  (D / (2 N))**2)`` (a rank error, as a share of the rows).

Each bound that does not bind is ``None`` in the result: not declared, so the release derives
it (k and R default to T, T to ``k R``: :func:`~dpframe.core.sensitivity.contribution`) and it
never drops a row the others keep. The result always names all three bounds.

**Why a noisy histogram rather than the exponential mechanism.** A utility that counts dropped
rows has sensitivity ``cap`` (one unit can hold ``cap`` rows), so at the budgets people spend
on a bound choice (0.05-0.1) the exponential mechanism's error swamps the trade between
candidates; a rank utility (a DP quantile) has sensitivity 1 but ties above the largest count,
so it needs a prior that decides the answer. A histogram of unit counts has sensitivity 1, its
noise is a few tens of units per bin at epsilon 0.03, and the whole bias-noise trade is then
computed without further privacy cost.

**Privacy proof.** Under ``add_remove`` a neighbour adds or removes one unit with all its rows:
that unit's row count, group count and largest group count each fall in exactly one bin of
their histogram, and no other unit's counts change, so each histogram moves by 1 in one bin:
L1 sensitivity 1. Under ``change_one`` the unit's rows are replaced: one bin loses one, another
gains one: sensitivity 2. The discrete Laplace mechanism at scale ``sensitivity / eps_i`` is
``eps_i``-DP; the shares sum to ``epsilon`` (basic composition) and the choice is
post-processing, so the whole is ``(epsilon, 0)``-DP. Rows whose unit is missing belong to no
unit and are in no histogram (the release drops them too).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ValidationError
from .exact.compute import DEFAULT_QUANTILE_CELLS, AggregateRequest, ComputeRequest, ExactAggregates
from .noise.mechanisms import noise_spec
from .noise.rng import RandomSource
from .sensitivity import Relation

#: The names of the three bounds, as ``df.dp(...)`` takes them.
BOUND_NAMES = ("max_rows_per_unit", "max_groups_per_unit", "max_rows_per_group")
#: The histogram that informs each bound.
_HISTOGRAM_OF = {"max_rows_per_unit": "rows", "max_groups_per_unit": "groups",
                 "max_rows_per_group": "max_rows"}
#: The largest cap (candidates past it would only add empty bins).
MAX_CAP = 1_000_000
#: The probability that some empty bin's noise passes the tail threshold (per histogram).
TAIL_PROBABILITY = 0.05
_ROWS = AggregateRequest("rows")
#: The releases a choice can tune for (``release=``; module docstring: their error models).
RELEASES = ("count", "sum", "mean", "quantile")


#: The candidates of one decade (times 1, 10, 100, ...): about 1.5x apart.
DECADE = (1, 1.5, 2, 3, 5, 7)


def ladder(cap: int) -> tuple[int, ...]:
    """The candidates: 1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, ... below ``cap``, then
    ``cap`` itself (each at most about 1.5x the one before)."""
    out: list[int] = []
    decade = 1
    while True:
        for m in DECADE:
            c = int(m * decade)
            if c >= cap:
                return (*out, cap)
            if not out or c > out[-1]:
                out.append(c)
        decade *= 10


@dataclass(frozen=True)
class BoundsRequest:
    """A bound choice, validated: everything public it depends on."""

    epsilon: Fraction
    privacy_unit: str
    by: tuple[str, ...] = ()
    keys: Mapping[str, tuple[object, ...]] = field(default_factory=dict)
    cap: int = 1000
    release_epsilon: Fraction = Fraction(1)
    relation: Relation = "add_remove"
    release: str = "sum"

    def __post_init__(self) -> None:
        if not isinstance(self.privacy_unit, str) or not self.privacy_unit:
            raise ValidationError("choose_contribution_bounds needs a privacy_unit: declare it in "
                                  "df.dp(..., privacy_unit=...)")
        if self.epsilon <= 0 or self.release_epsilon <= 0:
            raise ValidationError("epsilon and release_epsilon must be positive")
        if isinstance(self.cap, bool) or not isinstance(self.cap, int) or not (
                1 <= self.cap <= MAX_CAP):
            raise ValidationError(f"cap must be an integer in [1, {MAX_CAP}]")
        if self.privacy_unit in self.by:
            raise ValidationError("the privacy unit cannot be a groupby column here")
        if self.relation not in ("add_remove", "change_one"):
            raise ValidationError(f"unknown neighbouring relation {self.relation!r}")
        if not isinstance(self.release, str) or self.release not in RELEASES:
            raise ValidationError(f"release must be one of {', '.join(map(repr, RELEASES))}: "
                                  "the release the bounds are tuned for")

    @property
    def histograms(self) -> tuple[str, ...]:
        """The histograms released: ``rows``, and with ``by`` also ``groups``, ``max_rows``."""
        return ("rows", "groups", "max_rows") if self.by else ("rows",)

    @property
    def candidates(self) -> tuple[int, ...]:
        return ladder(self.cap)

    @property
    def sensitivity(self) -> int:
        """Each histogram's L1 sensitivity (module docstring)."""
        return 1 if self.relation == "add_remove" else 2

    @property
    def share(self) -> Fraction:
        """Each histogram's epsilon."""
        return self.epsilon / len(self.histograms)

    @property
    def columns(self) -> list[str]:
        return [self.privacy_unit, *self.by]

    def compute_request(self) -> ComputeRequest:
        """The exact half: rows per observed (unit, *by) key (data only, no unit bounding)."""
        return ComputeRequest((_ROWS,), by=(self.privacy_unit, *self.by), private_keys=True)

    def description(self) -> str:
        by = f"groupby({','.join(self.by)})." if self.by else ""
        return f"{by}choose_contribution_bounds({self.privacy_unit})"


def exact_histograms(request: BoundsRequest, exact: ExactAggregates
                     ) -> dict[str, npt.NDArray[np.int64]]:
    """The exact histograms (unit counts per candidate bin) from per-(unit, group) rows.

    Pairs whose group key is not among the declared public keys are left out (the release
    drops those rows)."""
    per_pair = np.asarray(exact.values[_ROWS.key], dtype=np.int64)
    declared = [set(request.keys[c]) if c in request.keys else None for c in request.by]
    units: dict[object, int] = {}
    index = np.empty(len(exact.keys), dtype=np.int64)
    keep = np.ones(len(exact.keys), dtype=bool)
    for i, key in enumerate(exact.keys):
        index[i] = units.setdefault(key[0], len(units))
        for label, allowed in zip(key[1:], declared, strict=True):
            if allowed is not None and not _member(label, allowed):
                keep[i] = False
    index, per_pair = index[keep], per_pair[keep]
    n = len(units)
    rows = np.bincount(index, weights=per_pair, minlength=n).astype(np.int64)
    present = rows > 0
    counts = {"rows": rows[present]}
    if request.by:
        groups = np.bincount(index, minlength=n).astype(np.int64)
        top = np.zeros(n, dtype=np.int64)
        np.maximum.at(top, index, per_pair)
        counts["groups"], counts["max_rows"] = groups[present], top[present]
    edges = np.asarray(request.candidates, dtype=np.int64)
    return {name: np.bincount(np.searchsorted(edges, counts[name], side="left"),
                              minlength=edges.size + 1).astype(np.int64)
            for name in request.histograms}


def _member(label: object, allowed: set[object]) -> bool:
    try:
        return label in allowed
    except TypeError:  # unhashable: never a declared key
        return False


@dataclass
class ChosenBounds:
    """The chosen bounds (all three; None for those that do not bind) and the provenance."""

    bounds: dict[str, int | None]
    provenance: dict[str, Any]


def noisy_histograms(request: BoundsRequest, exact: ExactAggregates, rng: RandomSource
                     ) -> dict[str, npt.NDArray[np.int64]]:
    """The mechanism (after the charge): each exact histogram with discrete Laplace noise of
    scale ``sensitivity / share`` (module docstring: ``epsilon``-DP in all). Everything else
    :func:`choose` does is post-processing of these."""
    return add_histogram_noise(request, exact_histograms(request, exact), rng)


def add_histogram_noise(request: BoundsRequest, hist: Mapping[str, npt.NDArray[np.int64]],
                        rng: RandomSource) -> dict[str, npt.NDArray[np.int64]]:
    """Independent discrete Laplace noise of scale ``sensitivity / share`` on every bin (any
    array shape: the audit stacks many releases' histograms)."""
    spec = _spec(request)
    return {name: spec.add_noise(h, Fraction(1), rng) for name, h in hist.items()}


def _spec(request: BoundsRequest) -> Any:
    return noise_spec("laplace", Fraction(request.sensitivity), request.share, integer=True)


def choose(request: BoundsRequest, exact: ExactAggregates, rng: RandomSource) -> ChosenBounds:
    """Release the noisy histograms (after the charge) and choose the bounds from them."""
    spec = _spec(request)
    noisy = noisy_histograms(request, exact, rng)
    threshold = _tail_threshold(float(spec.int_scale), len(request.candidates) + 1)
    bounds, err = _best(request, {k: _denoised(v, threshold) for k, v in noisy.items()})
    provenance: dict[str, Any] = {
        "mechanism": "geometric histograms of per-unit counts",
        "epsilon": float(request.epsilon), "delta": 0.0,
        "epsilon_per_histogram": float(request.share),
        "noise_scale": float(spec.int_scale), "sensitivity": request.sensitivity,
        "candidates": list(request.candidates), "cap": request.cap,
        "histograms": {k: [int(x) for x in v] for k, v in noisy.items()},
        "tail_threshold": threshold, "release_epsilon": float(request.release_epsilon),
        "release": request.release,
        "groups": _group_count(request), "estimated_rmse_over_M": err,
        "privacy_unit": request.privacy_unit, "by": list(request.by),
        "bounds": dict(bounds),
    }
    return ChosenBounds(bounds, provenance)


def _tail_threshold(scale: float, bins: int) -> float:
    """The count below which a noisy bin is read as empty: an empty bin's discrete Laplace
    noise exceeds it with probability at most ``TAIL_PROBABILITY / bins``."""
    return scale * math.log(bins / TAIL_PROBABILITY)


def _denoised(h: np.ndarray, threshold: float) -> npt.NDArray[np.float64]:
    """The noisy histogram read for the choice: bins above the highest bin whose count
    reaches ``threshold`` are empty (their noise would pass for a tail of heavy units: an
    empty bin passes the threshold with probability ``TAIL_PROBABILITY / bins``); the bins
    below it keep their noisy counts, negative ones read as 0."""
    out = np.maximum(np.asarray(h, dtype=np.float64), 0.0)
    above = np.flatnonzero(out >= threshold)
    top = int(above[-1]) if above.size else -1
    out[top + 1:] = 0.0
    return out


def _group_count(request: BoundsRequest) -> int:
    """The intended release's number of groups: the declared keys' combinations, else 1."""
    return math.prod(len(request.keys.get(c, ())) or 1 for c in request.by)


def _midpoints(candidates: Sequence[int]) -> npt.NDArray[np.float64]:
    """Each bin's representative count: the middle of ``(c[i-1], c[i]]``; twice the cap for
    the last bin (counts above the cap are not known)."""
    lo = np.array([0, *candidates], dtype=np.float64) + 1
    hi = np.array([*candidates, 2 * candidates[-1]], dtype=np.float64)
    return (lo + hi) / 2


def _drops(h: npt.NDArray[np.float64], mids: npt.NDArray[np.float64],
           options: Sequence[int | None]) -> list[float]:
    """Estimated excess over each option (None: no bound, nothing dropped)."""
    return [0.0 if c is None else float(np.sum(h * np.maximum(mids - c, 0.0)))
            for c in options]


def _drop_tables(request: BoundsRequest, hist: Mapping[str, npt.NDArray[np.float64]],
                 options: Sequence[int | None]) -> tuple[list[float], list[float], list[float]]:
    """Estimated rows dropped by each option of T, of k and of R."""
    mids = _midpoints(request.candidates)
    drop_t = _drops(hist["rows"], mids, options)
    if not request.by:
        return drop_t, [0.0] * len(options), [0.0] * len(options)
    units = float(np.sum(hist["groups"]))
    pairs = float(np.sum(hist["groups"] * mids))
    per_pair = max(float(np.sum(hist["rows"] * mids)) / pairs, 1.0) if pairs > 0 else 1.0
    per_unit = max(pairs / units, 1.0) if units > 0 else 1.0
    drop_k = [d * per_pair for d in _drops(hist["groups"], mids, options)]
    # R drops (n - R)+ in each of a unit's groups: at most its largest group's excess times
    # its number of groups, estimated with the average number of groups per unit
    drop_r = [d * per_unit for d in _drops(hist["max_rows"], mids, options)]
    return drop_t, drop_k, drop_r


def _sensitivity(t: int | None, k: int | None, r: int | None) -> int | None:
    """min(T, k R) (None: no finite bound)."""
    finite = [x for x in (t, None if k is None or r is None else k * r) if x is not None]
    return min(finite) if finite else None


def _error(release: str, s: float, dropped: float, rows: float) -> float:
    """The estimated per-group RMSE of ``release`` (module docstring) for sensitivity ``s`` over
    ``release_epsilon`` (``s`` here is ``s / e``), ``dropped`` rows dropped and ``rows`` rows
    per group."""
    if release == "count":
        return math.sqrt(2 * s ** 2 + dropped ** 2)
    if release == "sum":
        return math.sqrt(2 * s ** 2 + (dropped / 2) ** 2)
    kept = max(rows - dropped, 1.0)
    share = dropped / (2 * max(rows, 1.0))
    noise = 2 * s if release == "mean" else 2 * s * math.log(DEFAULT_QUANTILE_CELLS)
    return math.sqrt((noise / kept) ** 2 + share ** 2)


def _best(request: BoundsRequest, hist: Mapping[str, npt.NDArray[np.float64]]
          ) -> tuple[dict[str, int | None], float]:
    """The bounds minimising the estimated per-group RMSE of ``request.release`` at
    ``release_epsilon`` (:func:`_error`); ties go to the smaller sensitivity, then to fewer
    bounds (the search order). Ungrouped: T alone. Every bound is named; None where it does
    not bind."""
    options: list[int | None] = [*request.candidates, None]
    drops = _drop_tables(request, hist, options)
    g, e = _group_count(request), float(request.release_epsilon)
    rows = float(np.sum(hist["rows"] * _midpoints(request.candidates))) / g
    n = len(options)
    kr = range(n) if request.by else range(n - 1, n)
    best: tuple[float, float, int, tuple[int, int, int]] | None = None
    for t, k, r in itertools.product(range(n), kr, kr):
        s = _sensitivity(options[t], options[k], options[r])
        if s is None:
            continue
        err = _error(request.release, s / e, (drops[0][t] + drops[1][k] + drops[2][r]) / g,
                     rows)
        key = (err, float(s), sum(options[i] is not None for i in (t, k, r)), (t, k, r))
        best = key if best is None or key < best else best
    assert best is not None
    return {name: options[i] for name, i in zip(BOUND_NAMES, best[3], strict=True)}, best[0]
