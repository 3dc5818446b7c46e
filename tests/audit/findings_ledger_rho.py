"""Finding 76 (issue 43, item 6, the residual of finding 74): a Gaussian rho total lowered in a
ledger's checkpoint and head, within the bounds finding 74's check held it to, was caught by
``ledger verify`` only, not on open. An exact audit of what a basic session spends across such
a forgery.

A basic session of budget (1, 1e-6) on a ledger file answers Gaussian counts (L2 sensitivity 1)
at epsilon 0.25, delta 1e-8 each until it refuses one. Between two opens the attacker rewrites
the checkpoint's and the head's Gaussian rho sum to 1e-9 with the library's own functions, no
chained row touched (the spend, budget, unit and epsilon sums unchanged). The reopened session
goes on until refused (the fix: its open refuses the file, nothing charged). The accepted
counts' discrete Gaussian noises, read from the events the file recorded, compose as one
Gaussian of mu^2 = sum a^2 / variance (Dong, Roth and Su 2022: the continuous Gaussians
compose exactly so; the discrete ones are within their Theorem-C smoothing, negligible here):
its exact epsilon at delta 1e-6 (Balle and Wang's profile) is compared with the budget's 1.

The broken control is today's open without the recount (finding 74's bounds alone).
"""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.core.accountant import PrivacyEvent
from dpframe.core.accounting import SpendTotals
from dpframe.engine.ledger import chain as chain_module
from dpframe.engine.ledger.chain import (
    read_head,
    verify_chain,
    write_checkpoint,
    write_head,
)
from dpframe.engine.ledger.schema import frac_text

from .findings import gaussian_epsilon

BUDGET = (1.0, 1e-6)
EPS, DELTA = 0.25, 1e-8


def forge_rho(path: Path, rho: Fraction) -> None:
    """Rewrite the checkpoint (moved to the head) and the head with the Gaussian rho sum
    ``rho``, resealed with the library's own functions; no chained row touched."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        head = read_head(con, path, check_last=True)
        state = verify_chain(con, path)["state"]
        state["totals"][4] = frac_text(rho)
        write_checkpoint(con, state)
        t = head.totals
        write_head(con, replace(head, totals=SpendTotals(t.pure_eps, t.all_delta, t.g_eps,
                                                         t.g_delta, rho, t.any_g)))
        con.execute("COMMIT")
    finally:
        con.close()


def _gaussian_counts(s: dpf.Session, most: int = 200) -> int:
    """Gaussian counts until the session refuses one (its refusal reads every entry, so on a
    forged file the refusal itself is a ``LedgerError``): how many it accepted."""
    df = pd.DataFrame({"x": np.arange(10)})
    for done in range(most):
        try:
            df.dp(s).count(epsilon=EPS, delta=DELTA, mechanism="gaussian")
        except (dpf.BudgetExceededError, dpf.LedgerError):
            return done
    return most


def finding_forged_rho(seed: int) -> tuple[float, float, float, str]:
    """The exact epsilon (at the budget's delta) of every Gaussian count the file accepted
    across the forgery."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "budget.sqlite"
        s = dpf.Session(*BUDGET, ledger=str(path), seed=seed, accountant="basic")
        first = _gaussian_counts(s)
        del s
        forge_rho(path, Fraction(1, 10**9))
        again: dpf.Session | None = None
        with contextlib.suppress(dpf.LedgerError):
            again = dpf.Session(*BUDGET, ledger=str(path), seed=seed + 1, accountant="basic")
        refused = again is None
        second = 0 if again is None else _gaussian_counts(again)
        del again
        with sqlite3.connect(path) as con:  # the events the rows record (the chain is forged)
            texts = [r[0] for r in con.execute("SELECT event FROM entries ORDER BY id")]
    mu2 = 0.0
    for text in texts:
        (part,) = PrivacyEvent.from_json(json.loads(text)).parts
        assert part.kind == "gaussian"
        mu2 += float(part.a * part.a / part.b)
    exact = gaussian_epsilon(1.0, math.sqrt(mu2), BUDGET[1])
    return exact, BUDGET[0], BUDGET[1], (
        f"{first} Gaussian counts, rho forged, then {second} more "
        f"({'refused at open' if refused else 'reopened'}); exact "
        f"composed epsilon at delta {BUDGET[1]:g}: {exact:.4f}")


@contextlib.contextmanager
def open_without_recount() -> Iterator[None]:
    """BROKEN on purpose: finding 74's open, the totals held to the bounds only (the
    composition at most the recorded spend, the epsilon sums at least it)."""
    def bounds_only(conn: sqlite3.Connection, walk: object, spent: tuple[Fraction, Fraction]
                    ) -> bool:
        t = walk.totals  # type: ignore[attr-defined]
        composed = t.spend()
        return bool(composed.delta == spent[1] and composed.epsilon <= spent[0]
                    <= t.pure_eps + t.g_eps)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(chain_module, "_totals_agree", bounds_only)
        yield


__all__ = ["finding_forged_rho", "forge_rho", "open_without_recount"]
