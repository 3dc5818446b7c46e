"""``diagnostics=eps``: noisy counts of the rows that clamping and contribution bounding changed.

An interval covers the clamped, bounded value, not the raw one (docs/concepts.md): the bias of
clamping and bounding is outside it. These two counts show its size, at a price:

* ``rows_clamped``: rows of the release (kept by bounding, with a declared key) with a
  non-missing value outside its column's bounds (a histogram's: outside its edges), each row
  counted once however many of its columns were clamped;
* ``rows_dropped``: rows with a unit and a key that contribution bounding dropped, **each unit's
  counted up to the cap** ``D = min(T, k R)`` (the most rows it may keep; 1 at row level, where
  nothing is dropped). A unit with more dropped rows adds ``D``: the count is a lower bound of
  the rows dropped, and says so in its provenance (``rows_dropped_cap``). The term of a unit is
  a function of its own rows and randomness on every backend: rows a scan or Dask dropped
  while pre-selecting are handed on with the unit's kept rows and counted with bounding's
  (:func:`~dpframe.core.exact.transform.carried_drops`), never lost with a batch or a partition.

Each released count states, beside its value and interval, its epsilon, mechanism, noise scale,
sensitivity and (``rows_dropped``) the cap: ``.attrs["dp"]["diagnostics"][name].attrs["dp"]``
on a result, the export metadata's ``"diagnostics"``, the CLI's ``--json``.

Privacy: bounding is stable (a unit's kept rows depend only on its own rows and fresh
randomness), and a unit keeps at most ``D`` rows. Adding or removing one unit (or replacing
its rows) therefore moves ``rows_clamped`` by at most ``D`` (its kept rows, each counted at
most once) and ``rows_dropped`` by at most ``D`` (its capped term; no other unit's term moves).
Without the cap one unit's dropped rows are unbounded, and so would be the sensitivity. Each
count gets two-sided geometric noise of scale ``D / (eps / 2)``: ``eps / 2``-DP each, ``eps``
for both (basic composition), charged with the query (sequential composition: the query's
epsilon plus ``eps``, in the same charge, before any noise). The counts are totals over the
release, so disjoint groups need no split. The backends only count
(:func:`~dpframe.core.exact.primitives.clamped_rows`,
:func:`~dpframe.core.exact.transform.dropped_rows`);
the noise is added here, after the charge.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .noise.mechanisms import NoiseSpec, noise_spec
from .noise.rng import RandomSource

#: The two released counts, in order.
NAMES = ("rows_clamped", "rows_dropped")


@dataclass(frozen=True)
class DiagnosticsPlan:
    """The public half of ``diagnostics=``: its epsilon, the per-unit cap ``D`` (the
    sensitivity of both counts) and the geometric noise of each."""

    epsilon: Fraction
    cap: int
    noise: NoiseSpec

    def describe(self, level: float = 0.95) -> dict[str, object]:
        return {"epsilon": float(self.epsilon), "sensitivity": self.cap,
                "noise_scale": self.noise.scale, "rows_dropped_cap": self.cap,
                "ci_half_width": self.noise.half_width(level)}

    def count_description(self, name: str, level: float = 0.95) -> dict[str, object]:
        """What the provenance states of one released count: its own epsilon (half of
        ``diagnostics=``), the mechanism, its sensitivity ``D``, noise scale and interval, and
        for ``rows_dropped`` the cap ``rows_dropped_cap`` (each unit's dropped rows counted up
        to ``D``: the count is a lower bound of the rows dropped)."""
        out: dict[str, object] = {
            "epsilon": float(self.epsilon / 2), "mechanism": "geometric",
            "sensitivity": self.cap, "noise_scale": self.noise.scale, "ci_level": level,
            "ci_half_width": self.noise.half_width(level)}
        if name == "rows_dropped":
            out["rows_dropped_cap"] = self.cap
        return out


def plan_diagnostics(epsilon: Fraction, cap: int) -> DiagnosticsPlan:
    """Both counts at ``epsilon / 2`` each with sensitivity ``cap`` (module docstring)."""
    return DiagnosticsPlan(epsilon, cap, noise_spec("laplace", Fraction(cap), epsilon / 2,
                                                    integer=True))


def release_diagnostics(plan: DiagnosticsPlan, exact: tuple[int, int] | None,
                        rng: RandomSource, level: float) -> dict[str, dict[str, object]]:
    """The two noisy counts with their ``level`` intervals (after the charge): ``{name:
    {"value", "lower", "upper", ...}}``, each with what its noise was
    (:meth:`DiagnosticsPlan.count_description`: epsilon, noise scale, sensitivity, the cap).
    A backend that returned no counts (none needed: nothing computed) releases noise on zero,
    like any empty release."""
    counts = np.array(exact if exact is not None else (0, 0), dtype=np.int64)
    noisy = plan.noise.add_noise(counts, Fraction(1), rng)
    half = int(plan.noise.half_width(level))
    return {name: {"value": int(v), "lower": int(v) - half, "upper": int(v) + half,
                   **plan.count_description(name, level)}
            for name, v in zip(NAMES, noisy.tolist(), strict=True)}


__all__ = ["NAMES", "DiagnosticsPlan", "plan_diagnostics", "release_diagnostics"]
