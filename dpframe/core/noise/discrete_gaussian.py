"""The exact discrete Gaussian sampler (split from :mod:`dpframe.core.noise.samplers`).

CKS 2020 (Canonne, Kamath and Steinke, *The Discrete Gaussian for Differential Privacy*),
Algorithm 3: a discrete Laplace proposal of scale ``t = floor(sigma) + 1`` accepted with
probability ``exp(-(|Y| - sigma2/t)**2 / (2 sigma2))``. Every acceptance is an exact lazy
comparison of uniform words with exact thresholds (the conventions and proofs of
:mod:`dpframe.core.noise.samplers`); arbitrary-size arguments use CKS Algorithm 1 with Python
integers. Timing varies with the random draws only (and the first use of a ``sigma2`` builds its
cached table); the data do not influence it beyond the noise scale, which is public.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from .rng import RandomSource
from .samplers import (
    I64,
    MAX_FAST_DEN,
    U32,
    Bools,
    _bernoulli_exp_neg_int,
    _bernoulli_lazy,
    _exp_bound,
    _floor_scaled,
    discrete_laplace,
    exp_neg_fixed,
)

_GAUSS_TABLE = 1 << 12  # discrete Gaussian acceptance thresholds cached per sigma2


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
    """Exact Bernoulli(exp(-num_i / den)) for arbitrary-size Python ints.

    exp(-gamma) = exp(-floor(gamma)) exp(-frac(gamma)): an exact lazy comparison for the first
    factor, then CKS Algorithm 1 for the second (K <- 1; while Bernoulli(frac / K): K <- K + 1;
    K odd has probability exp(-frac)); the two independent events both hold w.p. exp(-gamma).
    """
    whole = (num // den).astype(np.int64)
    frac = num - whole.astype(object) * den
    out = _bernoulli_exp_neg_int(whole, rng)
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


_GAUSS_BITS = 32  # uniform bits of the discrete Gaussian acceptance test


@functools.lru_cache(maxsize=64)
def _gauss_thresholds(a: int, b: int, t: int) -> tuple[U32, bool, float]:
    """``floor(2**32 exp(-(y t b - a)**2 / (2 a b t**2)))`` for ``y = 0, 1, ...``.

    Stops after the first zero past the mode ``y >= a / (b t)`` (the acceptance probability
    decreases from there on, so every later threshold is zero too: ``complete = True``), or at
    :data:`_GAUSS_TABLE` entries (``complete = False``: later ``y`` take the slow exact path).
    A probability of exactly 1 is clamped to ``2**32 - 1`` (see :func:`_bernoulli_lazy`).
    The float is an estimate of the acceptance rate, used only to size batches.
    """
    den = 2 * a * b * t * t
    out: list[int] = []
    complete = False
    for y in range(_GAUSS_TABLE):
        xf = Fraction((y * t * b - a) ** 2, den)
        lo, hi = exp_neg_fixed(xf, _GAUSS_BITS + 16)
        tl, th = lo >> 16, hi >> 16
        if xf == 0:
            tl = th = (1 << _GAUSS_BITS) - 1
        if tl != th:
            tl = _floor_scaled(_exp_bound(xf), 0, _GAUSS_BITS)
        out.append(tl)
        if tl == 0 and y * t * b >= a:
            complete = True
            break
    thr = np.array(out, dtype=np.uint32)
    q = math.exp(-1.0 / t)
    lap = (1 - q) / (1 + q) * q ** np.arange(thr.size, dtype=np.float64)
    lap[1:] *= 2
    rate = float((lap * thr).sum()) / 2.0**_GAUSS_BITS if complete else 0.75  # CKS: about 0.76
    return thr, complete, rate


def _gauss_accept(ay: I64, thr_tab: U32, a: int, b: int, t: int, rng: RandomSource) -> Bools:
    """Exact Bernoulli(exp(-(|y| t b - a)**2 / (2 a b t**2))) by lazy 32-bit comparison."""
    den = 2 * a * b * t * t

    def x_of(i: int) -> Fraction:
        return Fraction((int(ay[i]) * t * b - a) ** 2, den)

    thr = thr_tab[np.minimum(ay, thr_tab.size - 1)]
    return _bernoulli_lazy(rng.words32(ay.size), thr, _GAUSS_BITS, x_of, rng)


def discrete_gaussian(sigma2: Fraction, n: int, rng: RandomSource) -> I64:
    """``n`` exact draws of the discrete Gaussian N_Z(0, sigma2), P(y) ~ exp(-y^2 / (2 sigma2)).

    CKS 2020, Algorithm 3: with t = floor(sigma) + 1, draw Y from the discrete Laplace of scale t
    and accept with probability exp(-(|Y| - sigma2/t)^2 / (2 sigma2)). The acceptance is an exact
    lazy comparison of a 32-bit word against the exact threshold ``floor(2**32 p(|Y|))`` (cached
    per sigma2; ties resolved with further bits); values of ``|Y|`` beyond the cached table use
    CKS Algorithm 1 with Python integers. Accepted draws are i.i.d. from the target whatever the
    batch size, so the (float) acceptance estimate that sizes batches cannot bias the output.
    """
    sigma2 = Fraction(sigma2)
    if sigma2 <= 0:
        raise ValueError("sigma2 must be positive")
    a, b = sigma2.numerator, sigma2.denominator
    t = math.isqrt(a // b) + 1
    if t > MAX_FAST_DEN:
        raise ValueError("sigma too large for the exact sampler")
    thr_tab, complete, rate = _gauss_thresholds(a, b, t)
    last = thr_tab.size - 1
    den = 2 * a * b * t * t
    out = np.empty(n, dtype=np.int64)
    filled = 0
    while filled < n:
        m = int((n - filled) * 1.03 / max(rate, 0.3)) + 64
        y = discrete_laplace(Fraction(t), m, rng)
        ay = np.abs(y)
        if complete:
            acc = _gauss_accept(ay, thr_tab, a, b, t, rng)
        else:
            acc = np.zeros(m, dtype=bool)
            inside = np.flatnonzero(ay <= last)
            acc[inside] = _gauss_accept(ay[inside], thr_tab, a, b, t, rng)
            outside = np.flatnonzero(ay > last)
            if outside.size:
                yy = ay[outside].astype(object)
                acc[outside] = _bernoulli_exp_neg_big((yy * (t * b) - a) ** 2, den, rng)
        vals = y[acc]
        take = min(vals.size, n - filled)
        out[filled : filled + take] = vals[:take]
        filled += take
    return out


def discrete_gaussian_pmf(y: npt.ArrayLike, sigma2: float) -> npt.NDArray[np.float64]:
    """Reference pmf of the discrete Gaussian (normalised over |y| <= 60 sigma), for tests."""
    sigma = math.sqrt(sigma2)
    support = np.arange(-math.ceil(60 * sigma) - 1, math.ceil(60 * sigma) + 2)
    z = float(np.exp(-(support.astype(np.float64) ** 2) / (2 * sigma2)).sum())
    yy = np.asarray(y, dtype=np.float64)
    return np.exp(-(yy**2) / (2 * sigma2)) / z
