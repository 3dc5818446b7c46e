"""Continual release (issue 45, item 5): the binary-tree mechanism over a horizon, exactly.

Finding 89: one charge of epsilon covers every night of the horizon. The neighbouring streams
go through the real ``dpf.Continual`` (seeded sessions, the pandas backend, the unit bound
over the horizon): D has 20 units with rows every night in keys ``a`` and ``b``; D' one more
unit with two rows on night 1 (key ``a``), one on night 33 (key ``b``) and one on night 40
that its bound ``T = 3`` over the horizon drops. The exact (lattice) values of every node
released over the 64 nights are captured from the release path; each node gets independent
two-sided geometric noise of the recorded scale ``t``, so the pure-DP epsilon of the whole
released sequence is exactly ``sum |node(D) - node(D')| / t`` (the largest log-likelihood
ratio of the product of shifted discrete Laplace laws). It must not exceed the charge.

BROKEN: the node scale without the levels factor (``T / epsilon`` instead of
``L T / epsilon``, L = 7 levels for 64 nights): the same streams show 7 times the charge.

Finding 90: a re-run of a night replays its recorded nodes. Streams differing by one row on
night 2 (row unit, 8 nights, night 2 re-run after night 4): every node's copies in the ledger
(each an independent noisy release) count in the exact epsilon. BROKEN: a re-run that draws
fresh noise for the night's nodes (two independent copies) shows more than the charge.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.continual import TreeSpec
from dpframe.core.noise.mechanisms import noise_spec
from dpframe.fronts import continual as front

EPSILON = 1.0


@contextlib.contextmanager
def _captured() -> Iterator[dict[tuple[int, int], list[int]]]:
    """The exact nodes handed to the noise, as the release path computes them."""
    seen: dict[tuple[int, int], list[int]] = {}
    real = front.add_node_noise

    def spy(spec: TreeSpec, exact: Any, rng: Any) -> Any:
        seen.update({n: list(v) for n, v in exact.items()})
        return real(spec, exact, rng)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(front, "add_node_noise", spy)
        yield seen


def _epsilon(a: dict[tuple[int, int], list[int]], b: dict[tuple[int, int], list[int]],
             scale: Fraction, copies: dict[tuple[int, int], int] | None = None) -> float:
    assert a.keys() == b.keys()
    shift = sum((copies or {}).get(n, 1) * sum(abs(x - y) for x, y in zip(a[n], b[n], strict=True))
                for n in a)
    return float(Fraction(shift) / scale)


def _unit_stream(extra: bool) -> list[pd.DataFrame]:
    days = []
    for night in range(1, 65):
        rows = [(u, "ab"[u % 2]) for u in range(20)]
        if extra:
            rows += {1: [(99, "a"), (99, "a")], 33: [(99, "b")], 40: [(99, "a")]}.get(night, [])
        days.append(pd.DataFrame(rows, columns=["u", "g"]))
    return days


def _run_units(extra: bool, seed: int) -> tuple[dict[tuple[int, int], list[int]], Fraction, float]:
    with warnings.catch_warnings(), _captured() as seen:
        warnings.simplefilter("ignore")
        s = dpf.Session(EPSILON, privacy_unit="u", seed=seed)
        c = dpf.Continual(s, horizon=64, epsilon=EPSILON, by="g", keys=["a", "b"],
                          privacy_unit="u", max_rows_per_unit=3)
        for day in _unit_stream(extra):
            c.add(day)
        assert s.spent == (EPSILON, 0.0)
        return dict(seen), c.spec.noise.int_scale, s.spent[0]


def finding_continual_horizon(seed: int) -> tuple[float, float, float, str]:
    """89. The exact epsilon of 64 nights of released nodes against the one charge."""
    d, scale, charged = _run_units(False, seed)
    d2, scale2, _ = _run_units(True, seed)
    assert scale == scale2
    eps = _epsilon(d, d2, scale)
    return eps, charged, 0.0, (f"exact: sum of node shifts / node scale {float(scale):g} over "
                               f"{len(d)} nodes")


@contextlib.contextmanager
def no_levels_factor() -> Iterator[None]:
    """BROKEN on purpose: every node's noise planned for one level's sensitivity only."""
    def noise(self: TreeSpec) -> Any:
        return noise_spec("laplace", self.level_sensitivity, self.epsilon,
                          changed=self.changed, integer=self.integer,
                          min_granularity=None if self.integer else self.unit)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(TreeSpec, "noise", property(noise))
        yield


def _row_stream(extra: bool) -> list[pd.DataFrame]:
    return [pd.DataFrame({"x": range(10 + (extra and night == 2))}) for night in range(1, 9)]


def _run_rerun(extra: bool, seed: int) -> tuple[dict[tuple[int, int], list[int]], Fraction,
                                                   dict[tuple[int, int], int], float]:
    with warnings.catch_warnings(), _captured() as seen:
        warnings.simplefilter("ignore")
        s = dpf.Session(EPSILON, seed=seed)
        c = dpf.Continual(s, horizon=8, epsilon=EPSILON)
        days = _row_stream(extra)
        for day in days[:4]:
            c.add(day)
        c.add(days[1], night=2)  # the re-run of night 2
        for day in days[4:]:
            c.add(day)
        copies: dict[tuple[int, int], int] = {}
        for e in s.ledger_store.entries():
            for j, k, _ in e["details"].get("nodes", []):
                copies[(j, k)] = copies.get((j, k), 0) + 1
        return dict(seen), c.spec.noise.int_scale, copies, s.spent[0]


def finding_continual_rerun(seed: int) -> tuple[float, float, float, str]:
    """90. A re-run night's nodes, counted as often as the ledger holds noisy copies."""
    d, scale, copies, charged = _run_rerun(False, seed)
    d2, _, copies2, _ = _run_rerun(True, seed)
    assert copies == copies2
    eps = _epsilon(d, d2, scale, copies)
    return eps, charged, 0.0, f"exact: node shifts times copies ({max(copies.values())} max)"


@contextlib.contextmanager
def rerun_draws_again() -> Iterator[None]:
    """BROKEN on purpose: a re-run of a night adds fresh noise to its nodes again."""
    real_add, real_night = front.Continual.add, front.Continual._release_night
    exact_of: dict[tuple[int, int], Any] = {}

    def night(self: Any, n: int, exact: Any) -> None:
        exact_of[(id(self), n)] = exact
        real_night(self, n, exact)

    def add(self: Any, day: Any, night: int | None = None, **kw: Any) -> Any:
        if night is not None and night <= self.nights:
            real_night(self, night, exact_of[(id(self), night)])
            return self.result(night)
        return real_add(self, day, night, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(front.Continual, "_release_night", night)
        mp.setattr(front.Continual, "add", add)
        yield
