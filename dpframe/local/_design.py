"""The offset distribution of randomized response, in exact arithmetic.

k-RR reports category ``(x + D) mod k`` for a data-independent offset ``D`` in ``{0..k-1}``
with ``P(D = 0) = p = 1 / (1 + (k - 1) q)`` and ``P(D = j) = p' = q / (1 + (k - 1) q)``,
``q = e^-eps``, so ``p / p' = e^eps`` exactly. ``epsilon`` is read as an exact rational by the
one number rule (0.1 is 1/10); ``q`` is never rounded: it is bounded rigorously by the core's
enclosure of ``exp(-x)`` (:mod:`dpframe.core.noise.samplers`), refined until every comparison the
sampler needs is certain (:mod:`dpframe.local._sampling`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from ..core.noise.samplers import exp_neg_fixed
from ..core.numbers import to_fraction
from ..errors import ValidationError

#: Privacy level of the two-coin survey design: truthful with probability 3/4, eps = ln 3.
TWO_COIN_EPSILON = math.log(3.0)

_MAX_PREC = 1 << 20

#: ``exp_neg_bounds(x, w)``: integers ``lo <= 2**w * exp(-x) <= hi`` (``hi - lo <= 3``) for a
#: rational ``x >= 0``, the core's rigorous enclosure, cached (designs ask for the same bounds
#: again and again).
exp_neg_bounds = lru_cache(maxsize=512)(exp_neg_fixed)


@dataclass(frozen=True)
class Design:
    """The offset distribution of k-RR: ``P(D=0) = 1/(1+(k-1)q)``, ``P(D=j) = q/(1+(k-1)q)``.

    ``q`` is either ``exp(-x)`` for an exact rational ``x > 0`` or an exact rational in (0, 1).
    """

    k: int
    x: Fraction | None = None
    q: Fraction | None = None

    def cut_floor(self, j: int, m: int) -> tuple[int, bool]:
        """``(floor(c_j * 2**m), inside)``; ``inside`` is False when ``c_j * 2**m`` is an integer.

        ``c_j = (1 + (j-1) q) / (1 + (k-1) q)`` decreases in ``q`` (j < k), so bounds on ``q``
        bound ``c_j``; ``c_j < 1`` always, so the floor is at most ``2**m - 1``.
        """
        k = self.k
        if self.q is not None:
            t = (1 + (j - 1) * self.q) / (1 + (k - 1) * self.q) * (1 << m)
            f = t.numerator // t.denominator
            return f, t.denominator != 1
        assert self.x is not None
        w = m + 64 + k.bit_length()
        top = (1 << m) - 1
        while True:
            ql, qh = exp_neg_bounds(self.x, w)
            one = 1 << w
            flo = ((one + (j - 1) * qh) << m) // (one + (k - 1) * qh)
            fhi = min(((one + (j - 1) * ql) << m) // (one + (k - 1) * ql), top)
            if flo == fhi:
                return flo, True  # c_j is irrational: never a cell endpoint
            if w > _MAX_PREC:  # pragma: no cover - would need c_j rational
                raise RuntimeError("could not separate a cut point from the dyadic grid")
            w *= 2

    def probabilities(self) -> tuple[float, float]:
        """``(p_keep, p_other)`` as floats (within 2**-100 of the exact values, then rounded)."""
        if self.q is not None:
            q = self.q
            return float(1 / (1 + (self.k - 1) * q)), float(q / (1 + (self.k - 1) * q))
        assert self.x is not None
        # q may be tiny: enough bits for a relative accuracy of 2**-100 down to float underflow.
        w = 160 + min(math.ceil(1.5 * float(self.x)), 1200) + self.k.bit_length()
        ql, _ = exp_neg_bounds(self.x, w)
        den = (1 << w) + (self.k - 1) * ql
        return float(Fraction(1 << w, den)), float(Fraction(ql, den))


def exact_epsilon(epsilon: object, name: str = "epsilon") -> Fraction:
    """An epsilon > 0 by the one number rule (:func:`dpframe.core.numbers.to_fraction`)."""
    return to_fraction(epsilon, name, positive=True)


def design_for(epsilon: object, k: int, preset: str | None) -> tuple[Design, float]:
    """The offset design of (k-ary) randomized response and the float epsilon it realizes."""
    if preset is None:
        if epsilon is None:
            raise ValidationError("epsilon is required (or preset='two_coin')")
        x = exact_epsilon(epsilon)
        return Design(k=k, x=x), float(x)
    if preset != "two_coin":
        raise ValidationError("preset must be 'two_coin' or None")
    if k != 2:
        raise ValidationError("preset='two_coin' needs exactly 2 categories")
    if epsilon is not None:
        e = float(exact_epsilon(epsilon))
        if not math.isclose(e, TWO_COIN_EPSILON, rel_tol=1e-9):
            raise ValidationError("preset='two_coin' fixes epsilon = ln 3; omit epsilon")
    return Design(k=2, q=Fraction(1, 3)), TWO_COIN_EPSILON


def rappor_design(epsilon: object) -> tuple[Design, float]:
    """The design of one RAPPOR bit (binary RR at eps/2) and the float epsilon of the report."""
    x = exact_epsilon(epsilon)
    return Design(k=2, x=x / 2), float(x)
