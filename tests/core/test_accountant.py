"""The pluggable accountant (issue 47, item 1): dp_accounting's own numbers, the session's
refusals at the edge, recomposition from recorded events, pure-DP sessions unchanged."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld

import dpframe as dpf
from dpframe.core.accountant import (
    BasicAccountant,
    Component,
    PLDAccountant,
    PrivacyEvent,
    RDPAccountant,
    accountant_for,
    compose_events,
)
from dpframe.core.accounting import PrivacyCost
from dpframe.engine.ledger.charges import entry_cost, event_json, fold
from tests.audit.findings_pld import counts_until_refused

BUDGET = (Fraction(1), Fraction(1, 10**6))


def _laplace(scale: str) -> PrivacyEvent:
    return PrivacyEvent((Component("laplace", 1, Fraction(scale)),))


def test_laplace_counts_match_dp_accounting() -> None:
    """50 two-sided geometric counts: dp_accounting's discrete Laplace PLD, same numbers up to
    the stated widening (1e-9 relative, 1e-14 absolute)."""
    ours = compose_events([_laplace("28.88")] * 50, PLDAccountant(BUDGET))
    theirs = pld.from_discrete_laplace_mechanism(1 / 28.88).self_compose(50)
    ref = theirs.get_delta_for_epsilon(1.0)
    assert ref <= float(ours[1]) <= ref * (1 + 1e-8) + 2e-14
    # continuous Laplace (the 28.88) fits, the discrete noise dpframe draws does not
    assert pld.from_laplace_mechanism(28.88).self_compose(50).get_delta_for_epsilon(1.0) <= 1e-6
    assert ours[1] > BUDGET[1]


def test_gaussian_releases_match_the_analytic_gaussian() -> None:
    """50 discrete Gaussians of sigma 29.95: within a hair of the continuous composition
    (dp_accounting's PLD and the exact Gaussian DP curve) and proven within the budget."""
    ev = PrivacyEvent((Component("gaussian", 1, Fraction("29.95") ** 2),))
    eps, delta = compose_events([ev] * 50, PLDAccountant(BUDGET))
    cont = pld.from_gaussian_mechanism(29.95).self_compose(50).get_delta_for_epsilon(1.0)
    assert delta <= BUDGET[1] and float(delta) <= cont * 1.05
    assert eps <= 1
    # sigma 29.0 is too little noise for 50 releases at (1, 1e-6)
    ev = PrivacyEvent((Component("gaussian", 1, Fraction(29) ** 2),))
    assert compose_events([ev] * 50, PLDAccountant(BUDGET))[1] > BUDGET[1]


def test_rdp_is_looser_than_pld_and_basic_is_exact() -> None:
    events = [_laplace("30")] * 50
    p = compose_events(events, PLDAccountant(BUDGET))
    r = compose_events(events, RDPAccountant(BUDGET))
    assert p[0] < r[0] < Fraction(50, 30)
    assert isinstance(accountant_for("pld", (Fraction(1), Fraction(0))), BasicAccountant)
    with pytest.raises(dpf.ValidationError):
        accountant_for("nope", BUDGET)


def test_event_json_round_trip() -> None:
    ev = PrivacyEvent((Component("laplace", 3, Fraction(7, 2)), Component("gaussian", 2, 9),
                       Component("approx", Fraction(1, 10), Fraction(1, 10**7))))
    assert PrivacyEvent.from_json(ev.to_json()) == ev
    with pytest.raises(dpf.ValidationError):
        PrivacyEvent.from_json({"v": 99, "parts": []})
    assert ev.to_dp_event() is not None


def test_session_accepts_fifty_split_counts_and_refuses_the_51st() -> None:
    s = dpf.Session(1, 1e-6, seed=1)
    assert s.accountant == "pld"
    eps = s.split(50)
    assert 1 / 29.2 < eps < 1 / 29.1  # basic composition: 1/50
    assert counts_until_refused(s, eps, 51) == 50
    se, sd = s.spent_exact
    assert se <= 1 and sd <= Fraction(1, 10**6)
    # recomposed from the recorded events: the same spend
    again = fold((entry_cost(e) for e in s.ledger_store.entries()),
                 s.accountant_object.start()).spend()
    assert (again.epsilon, again.delta) == (se, sd)
    assert s.basic_spend()[0] > 1  # what basic composition would have spent
    assert "pld" in (s.report() or "")


def test_basic_accountant_refuses_where_pld_accepts() -> None:
    s = dpf.Session(1, 1e-6, accountant="basic", seed=1)
    assert s.accountant == "basic"
    assert counts_until_refused(s, 1 / 29.15, 50) == 29


def test_pure_dp_sessions_are_exact_and_unchanged() -> None:
    s = dpf.Session(1, seed=1)
    assert s.accountant == "basic"
    assert s.split(100) == pytest.approx(0.01)
    assert counts_until_refused(s, 0.01, 101) == 100
    assert s.spent_exact == (Fraction(1), Fraction(0))


def test_pld_never_worse_than_basic_for_one_release() -> None:
    """A single pure release of the whole epsilon fits (the basic bound is kept)."""
    s = dpf.Session(Fraction(1, 3), 1e-6, seed=1)
    assert counts_until_refused(s, 1 / 3, 1) == 1
    assert s.spent_exact[0] <= Fraction(1, 3)


def test_file_ledgers_record_events_for_every_accountant(tmp_path: object) -> None:
    """Schema-4 ledger files record events: PLD (the default), RDP and basic sessions open them
    (tests/engine/ledger/test_events.py); an unknown name is still refused."""
    import pathlib

    for name in ("pld", "rdp", "basic"):
        path = pathlib.Path(str(tmp_path)) / f"{name}.sqlite"
        assert dpf.Session(1, 1e-6, ledger=path, accountant=name).accountant == name
    assert dpf.Session(1, 1e-6, ledger=pathlib.Path(str(tmp_path)) / "d.sqlite"
                       ).accountant == "pld"
    with pytest.raises(dpf.ValidationError):
        dpf.Session(1, 1e-6, ledger=pathlib.Path(str(tmp_path)) / "x.sqlite", accountant="zz")


def test_cost_event_is_not_part_of_equality() -> None:
    assert PrivacyCost(1, event=_laplace("2")) == PrivacyCost(1)


def test_charge_many_is_all_or_none_under_pld() -> None:
    """A batch (``dpframe run`` reserves a run so) is composed as a whole: 51 split releases
    are refused together, nothing charged; 50 fit."""
    s = dpf.Session(1, 1e-6)
    eps = Fraction(s.split(50))
    meta = {"query": "count", "columns": [], "mechanism": "laplace"}
    cost = PrivacyCost(eps, event=PrivacyEvent((Component("laplace", 1, 1 / eps),)))
    with pytest.raises(dpf.BudgetExceededError):
        s.charge_many([(cost, meta)] * 51)
    assert s.spent_exact == (0, 0) and len(s.ledger) == 0
    assert len(s.charge_many([(cost, meta)] * 50)) == 50
    assert not s.fits(cost)


def test_fifty_gaussian_counts_at_the_split_fit_and_the_51st_does_not() -> None:
    """``split(50, mechanism="gaussian")``: 50 real Gaussian counts of sigma < 29.95 (zCDP
    needed 32.04) fit (1, 1e-6); the 51st is refused."""
    s = dpf.Session(1, 1e-6, seed=3)
    eps = s.split(50, mechanism="gaussian")
    df = pd.DataFrame({"x": np.arange(20)})
    done = 0
    for _ in range(51):
        try:
            df.dp(s).count(epsilon=eps, delta=1e-6 / 50, mechanism="gaussian")
        except dpf.BudgetExceededError:
            break
        done += 1
    assert done == 50
    part = PrivacyEvent.from_json(s.ledger_store.entries()[-1]["event"]).parts[0]
    assert part.kind == "gaussian" and float(part.b) ** 0.5 < 29.95
    with pytest.raises(dpf.ValidationError):
        dpf.Session(1).split(5, mechanism="gaussian")


def _mixed_costs() -> list[PrivacyCost]:
    """Laplace counts of three scales, (epsilon, delta) events, Gaussian releases and a
    two-part release, interleaved."""
    lap = [Fraction(1, 40), Fraction(1, 25), Fraction(3, 100)]
    out: list[PrivacyCost] = []
    for i in range(24):
        e = lap[i % 3]
        if i % 5 == 1:
            out.append(PrivacyCost(e, Fraction(1, 10**8),
                                   event=PrivacyEvent.approx(e, Fraction(1, 10**8))))
        elif i % 7 == 3:
            out.append(PrivacyCost(Fraction(1, 20), Fraction(1, 10**8), event=PrivacyEvent(
                (Component("gaussian", Fraction(1), Fraction(900)),))))
        elif i % 11 == 5:
            out.append(PrivacyCost(2 * e, event=PrivacyEvent(
                (Component("laplace", Fraction(1), 1 / e),) * 2)))
        else:
            out.append(PrivacyCost(e, event=PrivacyEvent(
                (Component("laplace", Fraction(1), 1 / e),))))
    return out


def test_incremental_pld_is_the_full_recomposition_to_the_bit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 47 (the ledger's PLD cost): a session's totals compose each new release's
    components onto the PLD kept from the releases before, one ``compose`` per component;
    the result at every step equals, exactly (the same Fractions), a recomposition of the
    same releases from nothing."""
    acc = accountant_for("pld", (Fraction(1, 2), Fraction(1, 10**6)))
    costs = _mixed_costs()
    calls = {"n": 0}
    real = pld.PrivacyLossDistribution.compose

    def counted(self: object, other: object, *a: object, **k: object) -> object:
        calls["n"] += 1
        return real(self, other, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(pld.PrivacyLossDistribution, "compose", counted)
    t = acc.start()
    steps = []
    for c in costs:
        t = t.add(c)
        steps.append((t.spend(), t.composed()))
    parts = sum(len(PrivacyEvent.from_json(event_json(c)).parts) for c in costs)
    gaussian_steps = sum(1 for k in range(len(costs))
                         if any(c.rho is not None or c.event.parts[0].kind == "gaussian"
                                for c in costs[:k + 1]))
    # each component composed once (the first needs none), plus the Gaussian part per step
    assert calls["n"] <= parts + gaussian_steps
    assert steps[-1][1][0] > acc.budget[0] / 2  # past the basic bound: the PLD decided
    for k in range(1, len(costs) + 1):
        fresh = acc.start()
        for c in costs[:k]:
            fresh = fresh.add(c)
        assert (fresh.spend(), fresh.composed()) == steps[k - 1]
    assert t.add(costs[0]) is t.add(costs[0])  # a check and its charge share one composition


def test_incremental_pld_keeps_no_history_alive() -> None:
    """Only the live totals hold a composed PLD: earlier totals are freed (nothing points back
    at them) and a link that holds its PLD forgets the links before it."""
    import gc
    import weakref

    acc = accountant_for("pld", (Fraction(1, 2), Fraction(1, 10**6)))
    costs = _mixed_costs()
    t = acc.start().add(costs[0])
    t.composed()
    ref = weakref.ref(t)
    for c in costs[1:]:
        t = t.add(c)
        t.composed()
        assert t.chain is not None and t.chain.prev is None
    gc.collect()
    assert ref() is None
