"""Local differential privacy: randomizers run on each respondent's value, and their estimators.

In the local model every respondent's value is randomized *before* it is collected, so the
guarantee holds per respondent and against the collector itself: for any two values ``x, x'``
and any report ``y``, ``P(report = y | x) <= e^eps * P(report = y | x')``. Nothing here is
charged to a :class:`~dpframe.Session`: the budget belongs to each respondent, and the
estimators are post-processing of the reports. Randomizing the same respondent's value twice
spends ``eps`` twice for that respondent; this package cannot see that, the caller must.

Mechanisms (``q = e^-eps``, ``k`` declared categories):

* randomized response (k = 2) and k-ary randomized response (k-RR): report the true value with
  probability ``p = e^eps / (e^eps + k - 1) = 1 / (1 + (k - 1) q)``, each other category with
  probability ``p' = 1 / (e^eps + k - 1)``; ``p / p' = e^eps`` exactly.
* the two-coin survey design (``preset="two_coin"``): ``p = 3/4``, i.e. eps = ln 3.
* basic one-time RAPPOR: one-hot bit vector, every bit flipped to a fresh fair coin with
  probability ``f = 2 / (1 + e^(eps/2))``, i.e. each bit is binary RR with eps/2.

Every probability is realized exactly, never through a floating-point approximation
(:mod:`dpframe.local._sampling`). Modules: :mod:`~dpframe.local.randomizers`,
:mod:`~dpframe.local.estimators`, :mod:`~dpframe.local.accessor` (``df.dp.local``); the
offset distribution (:mod:`~dpframe.local._design`), its sampler
(:mod:`~dpframe.local._sampling`) and the values' encoding (:mod:`~dpframe.local._encoding`)
are internal.
"""

from __future__ import annotations

from ._design import TWO_COIN_EPSILON
from .accessor import LocalAccessor
from .estimators import estimate_frequencies, project_simplex
from .randomizers import (
    krr_probabilities,
    randomized_response,
    rappor,
    rappor_f,
    rappor_probabilities,
    rr_probabilities,
)

__all__ = [
    "TWO_COIN_EPSILON",
    "LocalAccessor",
    "estimate_frequencies",
    "krr_probabilities",
    "project_simplex",
    "randomized_response",
    "rappor",
    "rappor_f",
    "rappor_probabilities",
    "rr_probabilities",
]
