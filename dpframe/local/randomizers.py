"""Local randomizers: randomized response (binary, two-coin, k-ary) and basic RAPPOR.

Each respondent's value is randomized on its own with exactly the stated probabilities
(:mod:`dpframe.local._sampling`), so every report is eps-LDP for its respondent. Nothing is
charged to a session.
"""

from __future__ import annotations

import numbers
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..core.noise.rng import RandomSource
from ..errors import ValidationError
from ._design import design_for, rappor_design
from ._encoding import (
    DECLARE,
    CategoriesArg,
    Codes,
    Encoded,
    codes_of,
    invalid_error,
    read_values,
    resolve_categories,
    values_out,
)
from ._sampling import apply_offsets, draw_offsets

#: What a respondent whose value is missing or not a declared category reports: ``"uniform"``
#: (the report of a uniformly random category) or ``"raise"`` (refuse the whole batch).
Invalid = Literal["uniform", "raise"]


def rr_probabilities(epsilon: float | None = None, *,
                     preset: str | None = None) -> tuple[float, float]:
    """``(p_keep, p_flip)`` of binary randomized response: ``e^eps / (e^eps + 1)`` and its
    complement (3/4 and 1/4 for the two-coin preset). These are the exact probabilities the
    sampler realizes, rounded to floats for analysis."""
    design, _ = design_for(epsilon, 2, preset)
    return design.probabilities()


def krr_probabilities(epsilon: float, k: int) -> tuple[float, float]:
    """``(p_keep, p_other)`` of k-ary RR: ``e^eps / (e^eps + k - 1)`` and ``1 / (e^eps + k - 1)``.

    The sampler realizes these exactly (:mod:`dpframe.local._sampling`); the floats are for
    analysis and the estimators. ``p_keep / p_other = e^eps``, so k-RR is eps-LDP.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 2:
        raise ValidationError("k must be an integer >= 2")
    design, _ = design_for(epsilon, int(k), None)
    return design.probabilities()


def rappor_f(epsilon: float) -> float:
    """RAPPOR's flip probability ``f = 2 / (1 + e^(eps/2))``."""
    _, q1 = rappor_probabilities(epsilon)
    return 2 * q1


def rappor_probabilities(epsilon: float) -> tuple[float, float]:
    """``(P(bit = 1 | it is the true category), P(bit = 1 | it is not))`` = ``(1 - f/2, f/2)``.

    Each bit is binary RR with eps/2: ``1 - f/2 = e^(eps/2) / (1 + e^(eps/2))``.
    """
    design, _ = rappor_design(epsilon)
    return design.probabilities()


def _check_rng(seed: int | None, rng: RandomSource | None) -> RandomSource:
    if seed is not None and rng is not None:
        raise ValidationError("pass either seed= or rng=, not both")
    if rng is not None:
        if not isinstance(rng, RandomSource):
            raise ValidationError("rng must be a dpframe RandomSource")
        return rng
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)
                             or int(seed) < 0):
        raise ValidationError("seed must be a non-negative integer or None")
    return RandomSource(None if seed is None else int(seed))


def _check_invalid(invalid: object) -> Invalid:
    if not isinstance(invalid, str) or invalid not in ("uniform", "raise"):
        raise ValidationError("invalid must be 'uniform' or 'raise'")
    return "uniform" if invalid == "uniform" else "raise"


def _encode(inp: Any, cats: list[Any], invalid: Invalid, name: str) -> Encoded:
    """The codes of the values; with ``invalid="raise"``, one fixed refusal for any invalid
    value (before any randomness is drawn)."""
    enc = codes_of(inp, cats)
    if enc.invalid is not None and invalid == "raise":
        raise invalid_error(name)
    return enc


def _with_uniform_invalid(enc: Encoded, k: int, source: RandomSource) -> Codes:
    """The codes with each invalid value replaced by an exactly uniform category drawn from
    ``source``. Called after the mechanism's own draws, so those (and every valid respondent's
    report, for a seeded source) are the same whether or not some value is invalid."""
    if enc.invalid is None:
        return enc.codes
    where = np.flatnonzero(enc.invalid)
    codes = enc.codes.astype(np.int64)  # a copy: never write into the caller's array
    codes[where] = source.below(np.full(where.size, k, dtype=np.uint64)).astype(np.int64)
    return codes


def randomized_response(values: Any, epsilon: float | None = None,
                        categories: CategoriesArg | None = None, *,
                        preset: str | None = None, seed: int | None = None,
                        rng: RandomSource | None = None, invalid: Invalid = "uniform",
                        name: str = "values") -> Any:
    """Randomized response: binary RR, the two-coin design, or k-ary RR over ``categories``.

    Each value is reported truthfully with probability ``p = e^eps / (e^eps + k - 1)`` and as
    each other declared category with probability ``p' = 1 / (e^eps + k - 1)`` (k = 2: binary
    RR, ``p = e^eps / (e^eps + 1)``; ``preset="two_coin"``: ``p = 3/4``, eps = ln 3).

    Categories are declared, never taken from the answers: ``categories=[...]``, or for a
    pandas Categorical the opt-in ``categories="categories"`` (its dtype's categories: public
    by the caller's say-so; ``astype("category")`` takes them from the values). Without
    ``categories`` they come from the dtype alone: ``[False, True]`` for a bool dtype,
    ``[0, 1]`` for a numeric one; a Categorical, a list, an object or string column is refused
    (a ``ValidationError`` decided by the dtype, whatever the values), so no respondent's
    answer can change the category set, k or anyone else's report.

    A value that is missing or not a declared category (under ``==``: True, 1 and 1.0 are one
    value) is *invalid*. By default (``invalid="uniform"``) its respondent reports a uniformly
    random category, exactly what k-RR reports for a uniformly random input, so the batch always
    completes and its output does not depend on which respondents were invalid except through
    their reports. ``invalid="raise"`` refuses the batch instead, with one message whatever the
    value was (for callers who validate their own raw data: the refusal itself depends on it).

    Privacy (eps-LDP per respondent): for inputs ``x != x'`` and any report ``y``,
    ``P(y | x) / P(y | x')`` is ``p / p'``, ``p' / p`` or 1, and ``p / p' = e^eps`` exactly
    because the sampler realizes these probabilities exactly (:mod:`dpframe.local._sampling`).
    Respondents are randomized independently, so releasing all reports is eps-DP for changing
    one respondent. An invalid respondent's report is uniform, a mixture of the reports of
    every input, so its ratio to any input's is also within ``e^eps``. No session budget is
    charged.

    Returns the same kind as ``values``: a Series (same index and name), an array or a list.
    ``seed=`` is deterministic and insecure (tests and docs only); the default reads the OS CSPRNG.
    """
    policy = _check_invalid(invalid)
    inp = read_values(values, name)
    cats = resolve_categories(inp, categories, name)
    k = len(cats)
    design, _ = design_for(epsilon, k, preset)
    source = _check_rng(seed, rng)
    enc = _encode(inp, cats, policy, name)
    offsets = draw_offsets(design, enc.codes.size, source)
    out = apply_offsets(_with_uniform_invalid(enc, k, source), offsets, k)
    return values_out(inp, out, enc.identity, cats)


def rappor(values: Any, epsilon: float, categories: CategoriesArg, *,
           seed: int | None = None, rng: RandomSource | None = None,
           invalid: Invalid = "uniform", name: str = "values") -> Any:
    """Basic one-time RAPPOR: one-hot bit vectors with every bit randomized.

    Each bit ``b`` of the one-hot encoding is reported as ``b`` with probability ``1 - f/2`` and
    as ``1 - b`` with probability ``f/2``, with ``f = 2 / (1 + e^(eps/2))`` (the permanent
    randomized response of Erlingsson et al. 2014 with one hash and no Bloom filter collisions).

    Privacy (eps-LDP per respondent): bits are independent given the value; two values'
    encodings differ in exactly two bits and each bit's likelihood ratio is at most
    ``(1 - f/2) / (f/2) = e^(eps/2)``, exactly realized by the sampler (each bit is binary RR
    at eps/2), so every report's likelihood ratio is at most ``e^eps``. No budget is charged.

    A value that is missing or not a declared category is invalid: by default
    (``invalid="uniform"``) its respondent encodes a uniformly random category, drawn exactly,
    and randomizes it like any other (a mixture of the valid reports, so still eps-LDP);
    ``invalid="raise"`` refuses the batch with one fixed message (see
    :func:`randomized_response`).

    ``categories`` are declared (a list), or for a pandas Categorical the opt-in
    ``"categories"`` (its dtype's categories), never taken from the answers.

    Returns a 2-D bool array (one column per category), or for a Series a DataFrame with the
    same index and one bool column per category.
    """
    policy = _check_invalid(invalid)
    inp = read_values(values, name)
    if categories is None:  # required: the number of bits would otherwise come from the data
        raise ValidationError(f"rappor needs categories: {DECLARE}")
    cats = resolve_categories(inp, categories, name)
    k = len(cats)
    design, _ = rappor_design(epsilon)
    source = _check_rng(seed, rng)
    enc = _encode(inp, cats, policy, name)
    n = enc.codes.size
    flips = draw_offsets(design, n * k, source)
    bits = flips.view(np.bool_).reshape(n, k)  # offsets are 0/1 bytes
    bits[np.arange(n), _with_uniform_invalid(enc, k, source)] ^= True
    if inp.series is not None:
        return pd.DataFrame(bits, index=inp.series.index,
                            columns=pd.Index(cats, tupleize_cols=False))
    return bits
