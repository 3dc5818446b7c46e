"""Sources of randomness.

Noise is drawn from the operating system's CSPRNG (``os.urandom``: ``getrandom(2)`` on Linux)
by default. A ``seed`` selects numpy's PCG64 instead: deterministic, reproducible and
**insecure** (an attacker who knows the seed knows the noise); for tests and documentation only.

Everything above this module consumes uniform 64-bit words, so exactness of the samplers does
not depend on the source: only their unpredictability does.
"""

from __future__ import annotations

import os
import secrets
import warnings

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]
_TWO64 = 1 << 64


class InsecureSeedWarning(UserWarning):
    """A seeded (deterministic, insecure) random source is in use."""


class RandomSource:
    """Uniform random words, secure by default.

    ``RandomSource()`` reads the OS CSPRNG. ``RandomSource(seed=7)`` is deterministic and warns
    with :class:`InsecureSeedWarning`: releases made with it must not be published.
    """

    def __init__(self, seed: int | None = None, *, warn: bool = True) -> None:
        self.seed = seed
        self._gen: np.random.Generator | None = None
        if seed is not None:
            self._gen = np.random.Generator(np.random.PCG64(seed))
            if warn:
                warnings.warn(
                    "dpframe: a seed makes the noise deterministic and INSECURE; "
                    "use it for tests and documentation only.",
                    InsecureSeedWarning,
                    stacklevel=3,
                )

    @property
    def secure(self) -> bool:
        """True when the words come from the operating system's CSPRNG."""
        return self._gen is None

    def words(self, n: int) -> U64:
        """``n`` independent uniform 64-bit words."""
        if n <= 0:
            return np.zeros(0, dtype=np.uint64)
        if self._gen is None:
            return np.frombuffer(os.urandom(8 * n), dtype=np.uint64)
        return self._gen.integers(0, _TWO64, size=n, dtype=np.uint64)

    def below(self, m: npt.ArrayLike) -> U64:
        """One exact uniform integer in ``[0, m_i)`` for each ``m_i`` (1 <= m_i < 2**63).

        Rejection sampling: a word ``w`` is kept when ``w < 2**64 - (2**64 mod m)``, so that
        ``w mod m`` is exactly uniform. Each round rejects with probability < 1/2.
        """
        mm = np.asarray(m, dtype=np.uint64).reshape(-1)
        n = mm.size
        out = np.empty(n, dtype=np.uint64)
        rem = (np.zeros(n, dtype=np.uint64) - mm) % mm  # 2**64 mod m, computed with wraparound
        limit = np.zeros(n, dtype=np.uint64) - rem  # 2**64 - rem (0 when rem == 0: accept all)
        todo = np.arange(n)
        while todo.size:
            w = self.words(todo.size)
            ok = (rem[todo] == 0) | (w < limit[todo])
            idx = todo[ok]
            out[idx] = w[ok] % mm[idx]
            todo = todo[~ok]
        return out

    def below_int(self, m: int) -> int:
        """One exact uniform integer in ``[0, m)`` for an arbitrary-size Python int ``m``."""
        if m <= 0:
            raise ValueError("m must be positive")
        if self._gen is None:
            return secrets.randbelow(m)
        nbits = m.bit_length()
        nwords = (nbits + 63) // 64
        while True:
            v = 0
            for w in self.words(nwords):
                v = (v << 64) | int(w)
            v >>= nwords * 64 - nbits
            if v < m:
                return v

    def bernoulli_rational(self, num: npt.ArrayLike, den: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """Exact Bernoulli(num_i / den_i) for integers 0 <= num_i <= den_i < 2**63."""
        d = np.asarray(den, dtype=np.uint64).reshape(-1)
        k = np.asarray(num, dtype=np.uint64).reshape(-1)
        return self.below(d) < k

    def fair_bits(self, n: int) -> npt.NDArray[np.bool_]:
        """``n`` exact fair coin flips."""
        return (self.words(n) & np.uint64(1)).astype(bool)

    def sampling_generator(self) -> np.random.Generator:
        """A fast generator for data-independent sampling (contribution bounding, shuffles).

        Secure sources seed a fresh PCG64 with 128 bits from the OS CSPRNG; seeded sources derive
        it deterministically. Contribution bounding needs selections independent of the data,
        not secrecy, but an unpredictable seed costs nothing.
        """
        w = self.words(2)
        return np.random.Generator(np.random.PCG64((int(w[0]) << 64) | int(w[1])))


def default_source(seed: int | None = None) -> RandomSource:
    """The source a session uses: the OS CSPRNG unless a seed is given."""
    return RandomSource(seed)
