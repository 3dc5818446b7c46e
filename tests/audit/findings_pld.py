"""PLD accounting (issue 47, item 1): an exact audit of a session's composition.

A session of budget (1, 1e-6) (the PLD accountant, its default for delta > 0) answers Laplace
counts, each at the epsilon ``Session.split(50)`` gives, until it refuses one. Each count adds
two-sided geometric noise of integer sensitivity 1 to an integer: its privacy loss on the
worst neighbouring pair is exactly +eps_i with probability e^eps_i / (1 + e^eps_i) and -eps_i
otherwise, independently across releases (adaptive composition changes nothing here: the
noise is fixed in advance). So the composed privacy loss of the accepted releases is a sum of
independent two-point variables; its exact hockey-stick divergence
delta(eps) = E[(1 - e^(eps - L))_+] is computed over the whole distribution, and the least
epsilon with delta(eps) <= 1e-6 is compared with the budget's 1. The noise scales come from
the ledger's recorded events (what the releases drew).

The broken control composes while ignoring the first event (``ComposedTotals.add`` drops
it): the session then accepts a 51st count, and the exact composition exceeds the budget.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core import accountant as accountant_module
from dpframe.core.accountant import PrivacyEvent
from dpframe.core.accounting import PrivacyCost

BUDGET = (1.0, 1e-6)
N = 50


def _exact_delta(epsilons: list[float], eps: float) -> float:
    """delta(eps) of the sum of independent +-eps_i losses, exactly (a convolution of the
    two-point laws over the distinct values, log-domain weights)."""
    dist: dict[float, float] = {0.0: 1.0}
    for e in epsilons:
        p = 1.0 / (1.0 + math.exp(-e))
        nxt: dict[float, float] = {}
        for v, w in dist.items():
            for dv, pw in ((e, p), (-e, 1 - p)):
                k = round(v + dv, 12)
                nxt[k] = nxt.get(k, 0.0) + w * pw
        dist = nxt
    return sum(w * (1 - math.exp(eps - v)) for v, w in dist.items() if v > eps)


def _exact_epsilon(epsilons: list[float], delta: float) -> float:
    lo, hi = 0.0, sum(epsilons)
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _exact_delta(epsilons, mid) <= delta else (mid, hi)
    return hi


def laplace_losses(entries: Iterable[Mapping[str, Any]]) -> list[float]:
    """The epsilon of each ledger entry's privacy event: one Laplace count each (asserted)."""
    losses = []
    for e in entries:
        (part,) = PrivacyEvent.from_json(e["event"]).parts
        assert part.kind == "laplace" and part.a == 1
        losses.append(float(part.a / part.b))
    return losses


def counts_until_refused(s: dpf.Session, eps: float, most: int) -> int:
    """Release counts at ``eps`` (at most ``most``) until the session refuses one: how many it
    accepted."""
    df = pd.DataFrame({"x": np.arange(10)})
    for done in range(most):
        try:
            df.dp(s).count(epsilon=eps)
        except dpf.BudgetExceededError:
            return done
    return most


def pld_session_composition(seed: int) -> tuple[float, float, float, str]:
    """The exact epsilon (at the budget's delta) of every count the session accepted."""
    s = dpf.Session(*BUDGET, seed=seed)
    assert s.accountant == "pld"
    eps = s.split(N)
    accepted = counts_until_refused(s, eps, N + 5)
    exact = _exact_epsilon(laplace_losses(s.ledger_store.entries()), BUDGET[1])
    return exact, BUDGET[0], BUDGET[1], (
        f"{accepted} counts at epsilon {eps:g} (scale {1 / eps:.4g}) accepted; exact composed "
        f"epsilon at delta {BUDGET[1]:g}: {exact:.6f}")


@contextlib.contextmanager
def composition_ignores_one_event() -> Iterator[None]:
    """BROKEN on purpose: the accountant's totals drop the first release's event."""
    real = accountant_module.ComposedTotals.add

    def add(self: accountant_module.ComposedTotals, c: PrivacyCost
            ) -> accountant_module.ComposedTotals:
        out = real(self, c)
        if self.n == 0:  # forget it, but count it
            out = accountant_module.ComposedTotals(self.accountant, out.basic, (), (), 1)
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(accountant_module.ComposedTotals, "add", add)
        yield


__all__ = ["composition_ignores_one_event", "pld_session_composition"]
