"""The local model's categories (issue 31, item 1): one scenario per finding.

Randomized response without ``categories=`` on a pandas Categorical took the Categorical's
levels as the category set, and ``s.astype("category")`` takes its levels from the answers: one
respondent's answer decided the category set, k, and so every other respondent's report. As in
:mod:`tests.audit.findings_local`, the claim is the local epsilon (nothing is charged) and an
exception is the outcome ``REFUSED``.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

import dpframe as dpf

from .findings_local import EPS, local_finding
from .scenario import Built


def finding_local_categorical_levels() -> Callable[[int], Built]:
    """L3. Randomized response without ``categories`` on 61 answers a / b made a Categorical by
    ``astype("category")``; the last respondent answers "Smallville" instead of "a". 0.1 read
    the categories from the Categorical's levels, i.e. from the answers: binary RR became 3-RR
    for everyone and "Smallville" a possible report of every respondent (statistic: the number
    of categories of the reports, REFUSED on an exception). The fix refuses a Categorical
    without ``categories=[...]`` or the opt-in ``categories="categories"``, from the arguments
    and the dtype alone: a refusal on both sides."""

    def frames() -> tuple[pd.Series, pd.Series]:
        answers = ["a", "b"] * 30
        return (pd.Series([*answers, "a"]).astype("category"),
                pd.Series([*answers, "Smallville"]).astype("category"))

    def rel(values: pd.Series, s: dpf.Session) -> list[float]:
        reports = dpf.local.randomized_response(values, EPS, rng=s.rng)
        return [float(len(reports.cat.categories))]

    return local_finding(frames, rel)
