"""dpframe.testing: the statistics of the privacy audit (docs/audit.md).

Clopper-Pearson intervals, epsilon lower bounds over events (Bonferroni, complements, both
directions, delta), threshold selection on calibration draws and ``audit_release``: the bounds
must hold with probability at least 1 - alpha, and come close to the true epsilon of a tight
mechanism given enough draws.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable

import numpy as np
import pytest

from dpframe.testing import (
    Threshold,
    audit_release,
    choose_thresholds,
    clopper_pearson,
    epsilon_lower_bound,
    event_bounds,
)

ALPHA = 1e-3


@pytest.mark.audit
def test_testing_is_public_and_not_imported_with_dpframe() -> None:
    """``dpf.testing`` works, and ``import dpframe`` imports neither it nor scipy."""
    code = ("import sys, dpframe as dpf\n"
            "print('dpframe.testing' in sys.modules, 'scipy' in sys.modules)\n"
            "print(dpf.testing.audit_release.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False", "dpframe.testing"]


# -- Clopper-Pearson -----------------------------------------------------------------------------

@pytest.mark.audit
@pytest.mark.parametrize("pure", [False, True])
def test_clopper_pearson_closed_forms(pure: bool) -> None:
    for n in (1, 7, 1000, 250_000):
        for a in (0.5, 1e-3, 1e-6):
            lo, hi = clopper_pearson(0, n, a, pure=pure)
            assert lo == 0.0
            assert hi == pytest.approx(1 - (a / 2) ** (1 / n), rel=1e-6)
            assert hi >= 1 - (a / 2) ** (1 / n)  # rounded outward
            lo, hi = clopper_pearson(n, n, a, pure=pure)
            assert hi == 1.0
            assert lo == pytest.approx((a / 2) ** (1 / n), rel=1e-6)
            assert lo <= (a / 2) ** (1 / n)


@pytest.mark.audit
def test_clopper_pearson_pure_python_matches_scipy() -> None:
    pytest.importorskip("scipy")
    for n, k in [(10, 3), (37, 1), (1000, 500), (1000, 999), (250_000, 17),
                 (2_000_000, 120_000), (2_000_000, 1)]:
        for a in (0.5, 1e-3, 1e-7):
            lo, hi = clopper_pearson(k, n, a)
            plo, phi = clopper_pearson(k, n, a, pure=True)
            assert plo == pytest.approx(lo, rel=1e-6) and phi == pytest.approx(hi, rel=1e-6)


@pytest.mark.audit
def test_clopper_pearson_covers() -> None:
    """Empirical coverage of the two-sided interval is at least 1 - alpha."""
    rng = np.random.default_rng(11)
    for n, p in ((30, 0.1), (400, 0.5), (2000, 0.01)):
        ks = rng.binomial(n, p, size=1500)
        miss = sum(not (lo <= p <= hi) for lo, hi in (clopper_pearson(int(k), n, 0.1)
                                                      for k in ks))
        assert miss / ks.size <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / ks.size)


@pytest.mark.audit
def test_clopper_pearson_validates() -> None:
    for k, n, a in ((-1, 5, 0.1), (6, 5, 0.1), (0, 0, 0.1), (1, 5, 0.0), (1, 5, 1.0)):
        with pytest.raises(ValueError):
            clopper_pearson(k, n, a)


# -- epsilon lower bounds ------------------------------------------------------------------------

def _rr(eps: float, bit: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Randomized response: the true bit with probability e^eps / (1 + e^eps). Its privacy
    loss is exactly eps on the event {output = 1}: the tightest possible case."""
    keep = rng.random(n) < math.exp(eps) / (1 + math.exp(eps))
    return np.where(keep, bit, 1 - bit).astype(np.float64)


def _const(x: np.ndarray) -> Callable[[], np.ndarray]:
    return lambda: x


@pytest.mark.audit
def test_bound_is_tight_with_many_draws() -> None:
    rng = np.random.default_rng(1)
    d, d2 = _rr(1.0, 1, 200_000, rng), _rr(1.0, 0, 200_000, rng)
    lb = epsilon_lower_bound(d, d2, Threshold(0.5), ALPHA)
    assert 0.95 < lb <= 1.0
    same = epsilon_lower_bound(d, _rr(1.0, 1, 200_000, rng), Threshold(0.5), ALPHA)
    assert same < 0.03


@pytest.mark.audit
def test_bound_is_sound_with_event_selection() -> None:
    """Over many audits of an exactly tight mechanism with data-driven event selection, the
    bound exceeds the true epsilon in at most an alpha fraction of them."""
    rng = np.random.default_rng(2)
    alpha, reps, hits = 0.2, 300, 0
    for _ in range(reps):
        d, d2 = _rr(1.0, 1, 400, rng), _rr(1.0, 0, 400, rng)
        r = audit_release(_const(d), _const(d2), 400, None, alpha, claimed=1.0)
        hits += r.violation
    assert hits / reps <= alpha


@pytest.mark.audit
def test_delta_is_subtracted() -> None:
    """Output 2 happens with probability 0.2 under D and never under D': (eps, 0.25)-DP
    allows that, (eps, 0.1)-DP does not."""
    rng = np.random.default_rng(3)
    n = 20_000
    d = np.where(rng.random(n) < 0.2, 2.0, 0.0)
    d2 = np.zeros(n)
    assert epsilon_lower_bound(d, d2, Threshold(1.0), ALPHA, delta=0.25) == 0.0
    b = event_bounds(d, d2, Threshold(1.0), ALPHA, delta=0.1, claimed_epsilon=1.0)
    assert b.eps_lower_bound > 4 and b.event == "output > 1" and b.direction == "D vs D'"
    assert b.delta_lower_bound is not None and 0.18 < b.delta_lower_bound < 0.2


@pytest.mark.audit
def test_bonferroni_over_events() -> None:
    rng = np.random.default_rng(4)
    d, d2 = _rr(1.0, 1, 5000, rng), _rr(1.0, 0, 5000, rng)
    events = [Threshold(0.5), Threshold(-1.0), Threshold(2.0)]
    b = event_bounds(d, d2, events, ALPHA)
    assert b.events_tried == 3
    k = int((d > 0.5).sum())
    assert b.event == "output > 0.5" and b.direction == "D vs D'"
    assert b.p_num == clopper_pearson(k, 5000, ALPHA / 3)
    assert b.eps_lower_bound < epsilon_lower_bound(d, d2, Threshold(0.5), ALPHA)


@pytest.mark.audit
def test_complement_and_reverse_direction() -> None:
    rng = np.random.default_rng(5)
    d, d2 = _rr(1.0, 0, 50_000, rng), _rr(1.0, 1, 50_000, rng)
    b = event_bounds(d, d2, Threshold(0.5), ALPHA)
    assert b.eps_lower_bound > 0.9
    assert (b.event, b.direction) in (("output <= 0.5", "D vs D'"), ("output > 0.5", "D' vs D"))


@pytest.mark.audit
def test_explicit_events_use_all_draws_and_chosen_ones_half() -> None:
    rng = np.random.default_rng(6)
    d, d2 = _rr(1.0, 1, 1000, rng), _rr(1.0, 0, 1000, rng)
    r = audit_release(lambda: d, lambda: d2, 1000, [Threshold(0.5)], claimed=1.0)
    assert r.evaluation_trials == 1000 and r.events_tried == 1
    r = audit_release(lambda: d, lambda: d2, 1000, claimed=1.0, max_events=3)
    assert r.evaluation_trials == 500 and r.events_tried <= 3
    assert r.trials == 1000 and not r.violation and r.ok


@pytest.mark.audit
def test_choose_thresholds_finds_the_tail_event() -> None:
    rng = np.random.default_rng(7)
    d = rng.laplace(0.0, 1.0, 20_000)
    d2 = rng.laplace(1.0, 1.0, 20_000)
    ts = choose_thresholds(d, d2, 2)
    assert len(ts) == 2 and all(isinstance(t, Threshold) for t in ts)
    # for a Laplace shift the ratio e^eps holds beyond the shifted centre (or below 0)
    assert any(t.t >= 0.9 or t.t <= 0.1 for t in ts)


@pytest.mark.audit
def test_released_event_name() -> None:
    assert str(Threshold(-math.inf)) == "released"
    assert Threshold(-math.inf).complement() == "not released"


@pytest.mark.audit
def test_bad_inputs() -> None:
    with pytest.raises(ValueError):
        epsilon_lower_bound([], [1.0], Threshold(0), ALPHA)
    with pytest.raises(ValueError):
        epsilon_lower_bound([1.0], [1.0], [], ALPHA)
    with pytest.raises(ValueError):
        epsilon_lower_bound([1.0], [1.0], Threshold(0), 0.0)
    with pytest.raises(ValueError):
        epsilon_lower_bound([1.0], [1.0], Threshold(0), ALPHA, delta=1.0)
    with pytest.raises(ValueError):
        audit_release(lambda: np.zeros(0), lambda: np.zeros(1), 10, claimed=1.0)
