"""The attacker's review of the local model (randomized response, k-RR, RAPPOR): one scenario
per finding.

Local randomizers charge no session: the claim is the epsilon of the local guarantee, which
covers changing one respondent's value (``change_one``), and each release reads its randomness
from the fresh seeded session :func:`support.runs` hands it (``rng=s.rng``). As in
:mod:`tests.audit.findings`, an exception is an outcome like any other (``REFUSED``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dpf

from .findings import outcome
from .scenario import Built
from .support import Frames, Release, runs

#: The local epsilon the scenarios randomize with (and claim).
EPS = 1.0


def local_finding(frames: Frames, release: Release, epsilon: float = EPS
                  ) -> Callable[[int], Built]:
    """Runs of ``release`` on the two datasets (a changed respondent: ``change_one``), with
    exceptions as outcomes, claiming the local ``epsilon`` (no session is charged)."""
    safe = outcome(release)

    def build(seed: int) -> Built:
        d, d2 = frames()
        run_d, run_d2 = runs(safe, d, d2, seed, "change_one")
        return run_d, run_d2, float(epsilon), 0.0

    return build


def finding_local_spelling() -> Callable[[int], Built]:
    """L1. Randomized response without ``categories`` on an object column of 60 answers
    True / False; one respondent answers 1 instead of True (equal under ``==``). 0.1 read the
    implied categories from the values' types: every report and the estimate's labels turned
    from bool into int (statistic: 1 when the estimate's index is bool, REFUSED on an
    exception)."""

    def frames() -> tuple[pd.Series, pd.Series]:
        answers: list[Any] = [True, False] * 30
        return (pd.Series(answers, dtype=object),
                pd.Series([1, *answers[1:]], dtype=object))

    def rel(values: pd.Series, s: dpf.Session) -> list[float]:
        reports = dpf.local.randomized_response(values, EPS, rng=s.rng)
        est = dpf.local.estimate_frequencies(reports, EPS)
        return [float(est.index.dtype == np.dtype(bool))]

    return local_finding(frames, rel)


_INVALID: dict[str, object] = {"nan": np.nan, "undeclared": "maybe", "list": ["yes"]}


def finding_local_invalid_value(kind: str = "nan", mechanism: str = "rr"
                                ) -> Callable[[int], Built]:
    """L2. k-RR (or RAPPOR) over declared categories yes / no / unsure, 10 respondents; the last
    one's "no" becomes a NaN (or an undeclared "maybe", or a list). 0.1 refused the whole batch,
    with a message naming the kind of value; the fix reports a uniform category for it
    (statistic: the changed respondent's report as a number, its bit vector for RAPPOR,
    REFUSED on an exception)."""
    cats = ["yes", "no", "unsure"]
    bad = _INVALID[kind]

    def frames() -> tuple[pd.Series, pd.Series]:
        base: list[Any] = ["yes", "no"] * 5
        return pd.Series(base, dtype=object), pd.Series([*base[:-1], bad], dtype=object)

    def rel(values: pd.Series, s: dpf.Session) -> list[float]:
        if mechanism == "rappor":
            bits = dpf.local.rappor(values, EPS, cats, rng=s.rng).to_numpy()
            return [float(bits[-1] @ (1 << np.arange(len(cats))))]
        reports = dpf.local.randomized_response(values, EPS, cats, rng=s.rng)
        return [float(cats.index(reports.iloc[-1]))]

    return local_finding(frames, rel)

