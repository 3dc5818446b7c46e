"""Exact samplers, vectorized across samples.

All samplers consume uniform 64-bit words from a :class:`~dpframe.core.rng.RandomSource` and
use only integer arithmetic, so the distribution of every output is exactly the stated one (no
floating-point approximation of probabilities; cf. Mironov 2012). They follow Canonne, Kamath
and Steinke, *The Discrete Gaussian for Differential Privacy* (NeurIPS 2020), Algorithms 1-3,
run as rejection loops over whole numpy arrays instead of one sample at a time: every element
follows exactly the sequential algorithm, the loop merely advances all pending elements at once.

Timing varies with the random draws (as in any rejection sampler); the data do not influence it
beyond the noise scale, which is public.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from .rng import RandomSource

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

#: Largest denominator handled by the int64 fast path (``den * K`` must stay below 2**63).
MAX_FAST_DEN = 1 << 40
_MAX_K = 1 << 22  # P(K > 2**22) in Algorithm 1 is 1 / (2**22)!, i.e. never; checked anyway.


def round_scale_up(scale: Fraction, max_den: int = MAX_FAST_DEN) -> Fraction:
    """The smallest fraction ``>= scale`` whose numerator fits the fast sampler.

    Rounding a noise scale *up* only adds noise, so every guarantee computed with the requested
    scale still holds; callers report the returned scale.
    """
    if scale <= 0:
        raise ValueError("scale must be positive")
    if scale.numerator <= max_den and scale.denominator < (1 << 62):
        return scale
    if scale >= max_den >> 2:
        raise ValueError("noise scale too large for the exact sampler; use a coarser granularity")
    # k / 2**j with k <= max_den, rounding up: j >= 0 is chosen so that scale * 2**j < max_den / 2.
    j = (max_den.bit_length() - 2) - math.ceil(scale).bit_length()
    out = Fraction(math.ceil(scale * (1 << j)), 1 << j)
    assert out >= scale and out.numerator <= max_den
    return out


def _bernoulli_exp_neg_unit(num: npt.NDArray[np.uint64], den: npt.NDArray[np.uint64],
                            rng: RandomSource) -> Bools:
    """Bernoulli(exp(-num/den)) for 0 <= num/den <= 1 (CKS 2020, Algorithm 1).

    K <- 1; while Bernoulli(gamma / K): K <- K + 1; return K odd. P(K odd) = exp(-gamma).
    """
    n = num.size
    k = np.ones(n, dtype=np.uint64)
    final_k = np.empty(n, dtype=np.uint64)
    todo = np.arange(n)
    while todo.size:
        kt = k[todo]
        if int(kt.max()) > _MAX_K:  # pragma: no cover - probability 1/(2**22)!
            raise RuntimeError("Bernoulli(exp(-x)) loop exceeded its bound")
        a = rng.below(den[todo] * kt) < num[todo]
        stop = todo[~a]
        final_k[stop] = k[stop]
        todo = todo[a]
        k[todo] += np.uint64(1)
    return (final_k & np.uint64(1)).astype(bool)


def bernoulli_exp_neg(num: npt.ArrayLike, den: npt.ArrayLike, rng: RandomSource) -> Bools:
    """Exact Bernoulli(exp(-num_i / den_i)) for integers num_i >= 0, 1 <= den_i <= 2**40.

    For gamma > 1 (CKS 2020, Algorithm 1): exp(-gamma) = exp(-1)**floor(gamma) *
    exp(-(gamma - floor(gamma))), so floor(gamma) independent Bernoulli(exp(-1)) trials must all
    succeed before one Bernoulli(exp(-frac)).
    """
    nu = np.asarray(num, dtype=np.int64).reshape(-1)
    de = np.asarray(den, dtype=np.int64).reshape(-1)
    nu, de = np.broadcast_arrays(nu, de)
    if nu.size and (int(nu.min()) < 0 or int(de.min()) < 1 or int(de.max()) > MAX_FAST_DEN):
        raise ValueError("bernoulli_exp_neg needs num >= 0 and 1 <= den <= 2**40")
    whole = nu // de
    frac = (nu - whole * de).astype(np.uint64)
    out = np.ones(nu.size, dtype=bool)
    todo = np.flatnonzero(whole > 0)
    left = whole[todo]
    one = np.ones(1, dtype=np.uint64)
    while todo.size:
        b = _bernoulli_exp_neg_unit(np.repeat(one, todo.size), np.repeat(one, todo.size), rng)
        out[todo[~b]] = False
        keep = b & (left > 1)
        todo, left = todo[keep], left[keep] - 1
    idx = np.flatnonzero(out)
    out[idx] = _bernoulli_exp_neg_unit(frac[idx], de[idx].astype(np.uint64), rng)
    return out


def _geometric_exp_neg_one(n: int, rng: RandomSource) -> npt.NDArray[np.uint64]:
    """V with P(V = v) = (1 - e^-1) e^-v: count successes of Bernoulli(exp(-1)) until a failure."""
    v = np.zeros(n, dtype=np.uint64)
    todo = np.arange(n)
    one = np.ones(1, dtype=np.uint64)
    while todo.size:
        a = _bernoulli_exp_neg_unit(np.repeat(one, todo.size), np.repeat(one, todo.size), rng)
        todo = todo[a]
        v[todo] += np.uint64(1)
    return v


def discrete_laplace(scale: Fraction, n: int, rng: RandomSource) -> I64:
    """``n`` exact draws of the discrete Laplace (two-sided geometric) distribution.

    P(Y = y) proportional to exp(-|y| / scale) over the integers, for a rational ``scale = s/r``
    with s <= 2**40 (use :func:`round_scale_up` first). CKS 2020, Algorithm 2: U uniform in
    [0, s) kept with probability exp(-U/s), plus s times a geometric(exp(-1)) count, gives X
    geometric with ratio exp(-1/s); Y = floor(X / r) is geometric with ratio exp(-r/s); a fair
    sign with the negative zero rejected makes it two-sided.
    """
    scale = Fraction(scale)
    s, r = scale.numerator, scale.denominator
    if s <= 0:
        raise ValueError("scale must be positive")
    if s > MAX_FAST_DEN or r >= (1 << 62):
        raise ValueError("scale too fine for the exact sampler: round it up with round_scale_up")
    out = np.empty(n, dtype=np.int64)
    filled = 0
    s64 = np.uint64(s)
    while filled < n:
        m = int((n - filled) * 1.8) + 64
        u = rng.below(np.full(m, s, dtype=np.uint64))
        d = bernoulli_exp_neg(u.astype(np.int64), np.full(m, s, dtype=np.int64), rng)
        u = u[d]
        v = _geometric_exp_neg_one(u.size, rng)
        y = ((u + s64 * v) // np.uint64(r)).astype(np.int64)
        neg = rng.fair_bits(y.size)
        keep = ~(neg & (y == 0))
        vals = np.where(neg, -y, y)[keep]
        take = min(vals.size, n - filled)
        out[filled : filled + take] = vals[:take]
        filled += take
    return out


def _bernoulli_lt(frac: npt.NDArray[np.object_], den: npt.NDArray[np.object_],
                  rng: RandomSource) -> Bools:
    """Exact Bernoulli(frac_i / den_i) for Python-int rationals in [0, 1].

    Compares a uniform real U in [0, 1) to p lazily: the first 64 bits of U decide unless they
    equal floor(p * 2**64) (probability 2**-64), in which case the remaining bits decide exactly
    through an arbitrary-precision draw.
    """
    n = frac.size
    if n == 0:
        return np.zeros(0, dtype=bool)
    thr_obj = (frac * (1 << 64)) // den
    full = thr_obj >= (1 << 64)  # p == 1
    thr = np.where(full, 0, thr_obj).astype(np.uint64)
    w = rng.words(n)
    out = (w < thr) | full
    for i in np.flatnonzero((w == thr) & ~full):  # pragma: no cover - probability 2**-64
        rest = int(frac[i]) * (1 << 64) - int(w[i]) * int(den[i])
        out[i] = rng.below_int(int(den[i])) < rest
    return out


def _bernoulli_exp_neg_big(num: npt.NDArray[np.object_], den: int, rng: RandomSource) -> Bools:
    """Exact Bernoulli(exp(-num_i / den)) for arbitrary-size Python ints (CKS Algorithm 1)."""
    whole = (num // den).astype(np.int64)
    frac = num - whole.astype(object) * den
    out = np.ones(num.size, dtype=bool)
    todo = np.flatnonzero(whole > 0)
    left = whole[todo]
    one = np.ones(1, dtype=np.uint64)
    while todo.size:
        b = _bernoulli_exp_neg_unit(np.repeat(one, todo.size), np.repeat(one, todo.size), rng)
        out[todo[~b]] = False
        keep = b & (left > 1)
        todo, left = todo[keep], left[keep] - 1
    idx = np.flatnonzero(out)
    f = frac[idx]
    k = np.ones(idx.size, dtype=np.int64)
    final_k = np.empty(idx.size, dtype=np.int64)
    todo = np.arange(idx.size)
    while todo.size:
        a = _bernoulli_lt(f[todo], den * k[todo].astype(object), rng)
        stop = todo[~a]
        final_k[stop] = k[stop]
        todo = todo[a]
        k[todo] += 1
    out[idx] = (final_k & 1).astype(bool)
    return out


def discrete_gaussian(sigma2: Fraction, n: int, rng: RandomSource) -> I64:
    """``n`` exact draws of the discrete Gaussian N_Z(0, sigma2), P(y) ~ exp(-y^2 / (2 sigma2)).

    CKS 2020, Algorithm 3: with t = floor(sigma) + 1, draw Y from the discrete Laplace of scale t
    and accept with probability exp(-(|Y| - sigma2/t)^2 / (2 sigma2)), evaluated exactly as a
    rational with Python integers. Expected trials per sample are below 2.
    """
    sigma2 = Fraction(sigma2)
    if sigma2 <= 0:
        raise ValueError("sigma2 must be positive")
    a, b = sigma2.numerator, sigma2.denominator
    t = math.isqrt(a // b) + 1
    if t > MAX_FAST_DEN:
        raise ValueError("sigma too large for the exact sampler")
    out = np.empty(n, dtype=np.int64)
    filled = 0
    den = 2 * a * b * t * t
    while filled < n:
        m = int((n - filled) * 1.6) + 64
        y = discrete_laplace(Fraction(t), m, rng)
        yy = np.abs(y).astype(object)
        num = (yy * (t * b) - a) ** 2
        acc = _bernoulli_exp_neg_big(num, den, rng)
        vals = y[acc]
        take = min(vals.size, n - filled)
        out[filled : filled + take] = vals[:take]
        filled += take
    return out


def discrete_laplace_pmf(y: npt.ArrayLike, scale: float) -> npt.NDArray[np.float64]:
    """Reference pmf of the discrete Laplace, for tests and accuracy statements."""
    p = math.exp(-1.0 / scale)
    yy = np.abs(np.asarray(y, dtype=np.float64))
    return (1 - p) / (1 + p) * np.power(p, yy)


def discrete_gaussian_pmf(y: npt.ArrayLike, sigma2: float) -> npt.NDArray[np.float64]:
    """Reference pmf of the discrete Gaussian (normalised over |y| <= 60 sigma), for tests."""
    sigma = math.sqrt(sigma2)
    support = np.arange(-math.ceil(60 * sigma) - 1, math.ceil(60 * sigma) + 2)
    z = float(np.exp(-(support.astype(np.float64) ** 2) / (2 * sigma2)).sum())
    yy = np.asarray(y, dtype=np.float64)
    return np.exp(-(yy**2) / (2 * sigma2)) / z
