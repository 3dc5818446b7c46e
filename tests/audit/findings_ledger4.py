"""PLD accounting in a ledger file (issue 47, item 1, schema 4): an exact audit of the
composition a file-ledger session enforces across a reopen.

A (1, 1e-6) session on a new ledger file (PLD, its default for delta > 0) answers Laplace
counts at ``Session.split(50)``'s epsilon; half-way the session is dropped and a new one opens
the file (its spend recomposed from the recorded events), and it goes on until refused. As in
:mod:`.findings_pld`, the composed privacy loss of the accepted counts is a sum of independent
+-eps_i variables whose exact epsilon at delta 1e-6 is compared with the budget's 1; the noise
scales are read from the events the file recorded.

The broken control recomposes the reopened file while ignoring the first recorded event (as
if a migration or a reader dropped it): the reopened session then accepts a 51st count, and
the exact composition exceeds the budget.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dpframe as dpf
from dpframe.core.accountant import PrivacyEvent
from dpframe.core.accounting import PrivacyCost
from dpframe.engine.ledger import SqliteLedger
from dpframe.engine.ledger import events as events_module

from .findings_pld import BUDGET, N, _exact_epsilon, counts_until_refused, laplace_losses


def file_ledger_composition(seed: int) -> tuple[float, float, float, str]:
    """The exact epsilon (at the budget's delta) of every count the file ledger accepted."""
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "budget.sqlite")
        s = dpf.Session(*BUDGET, ledger=path, seed=seed)
        assert s.accountant == "pld"
        eps = s.split(N)
        accepted = counts_until_refused(s, eps, N // 2)
        del s
        again = dpf.Session(*BUDGET, ledger=path, seed=seed + 1)
        accepted += counts_until_refused(again, eps, N)
        del again
        led = SqliteLedger(path, readonly=True)
        losses = laplace_losses(led.entries())
        led.close()
    exact = _exact_epsilon(losses, BUDGET[1])
    return exact, BUDGET[0], BUDGET[1], (
        f"{accepted} counts at epsilon {eps:g} accepted across a reopen of the ledger file; "
        f"exact composed epsilon at delta {BUDGET[1]:g}: {exact:.6f}")


@contextlib.contextmanager
def recomposition_ignores_one_event() -> Iterator[None]:
    """BROKEN on purpose: the file's recomposition reads entry #1 as costing nothing."""
    real = events_module._entry_cost

    def entry_cost(path: Path, rid: Any, *rest: Any) -> PrivacyCost:
        if rid == 1:
            return PrivacyCost(0, event=PrivacyEvent.approx(Fraction(0), Fraction(0)))
        return real(path, rid, *rest)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(events_module, "_entry_cost", entry_cost)
        yield


__all__ = ["file_ledger_composition", "recomposition_ignores_one_event"]
