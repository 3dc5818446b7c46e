"""``count_distinct`` (and ``nunique``, pandas' name for it): distinct non-missing values of a
column per group.

``nunique`` is the same release: the same op, plan, noise, ledger entry and cache entry as
``count_distinct``, labelled ``nunique`` so the provenance's ``aggregate`` says the name the
user called (as ``max`` is the quantile's release labelled ``max``). One op keeps one plan, one
golden release and one audit surface; the label is public (the call's name).

Privacy: one unit adds or removes at most its ``R`` rows' values in each of its ``k`` groups, so
each group's number of distinct values moves by at most ``R`` whatever the other rows hold:
the count's sensitivity (docs/privacy.md#sensitivities). Backends give canonical value hashes
(equal values hash equal in every block); blocks merge by union of (group, hash) pairs.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ..exact.compute import AggregateRequest
from ..measure import AdditiveCount, MeasurePlan, PlanContext, Rows

if TYPE_CHECKING:
    from ..query import Measure, Query


class CountDistinct(AdditiveCount[None]):
    op = "count_distinct"
    names = ("count_distinct", "nunique")
    summary = "distinct values of a column per group, each unit's contribution bounded"
    zero_when_empty = True

    def front_doc(self, name: str) -> str:
        return (f"Noisy number of distinct values of ``column``, pandas' ``{name}``: the "
                "release of ``count_distinct`` (the same noise and charge), labelled "
                f"``{name}`` in ``.attrs['dp']``. Missing values are not counted.\n\n"
                "Example:\n"
                "    >>> import dpframe as dpf, pandas as pd, warnings\n"
                "    >>> warnings.simplefilter('ignore')  # seeded: insecure, docs only\n"
                "    >>> df = pd.DataFrame({'city': ['Oslo', 'Rome', None] * 40})\n"
                f"    >>> int(df.dp(dpf.Session(1e9, seed=1)).{name}('city', epsilon=1e6))\n"
                "    2")

    def check(self, m: Measure, query: Query) -> None:
        return None

    def plan(self, ctx: PlanContext, m: Measure, eps: Fraction, delta: Fraction,
             rho: Fraction | None) -> MeasurePlan[None]:
        s = ctx.count_sensitivity()
        return MeasurePlan(m, eps, delta, [AggregateRequest("distinct", m.column)],
                           {"count": ctx.additive(s, eps, delta, rho, True)}, None)

    def exact_counts(self, mp: MeasurePlan[None], rows: Rows) -> np.ndarray:
        n = len(rows.exact.keys)
        groups, _ = rows.exact.distinct.get(mp.requests[0].key,
                                            (np.zeros(0, dtype=np.int64), None))
        per_group = np.bincount(groups, minlength=n)[:n][rows.keep]
        return per_group.astype(np.int64)


COUNT_DISTINCT = CountDistinct()
