"""Sources of randomness.

Noise is drawn from the operating system's CSPRNG (``os.urandom``: ``getrandom(2)`` on Linux)
by default. A ``seed`` selects numpy's PCG64 instead: deterministic, reproducible and
**insecure** (an attacker who knows the seed knows the noise); for tests and documentation only.

Everything above this module consumes uniform words (64-bit, or 32-bit halves of them), so
exactness of the samplers does not depend on the source: only their unpredictability does.

Small secure requests are served from a per-source buffer filled by one ``os.urandom`` call, to
cut system-call overhead in rejection loops. The buffer is dropped in a forked child (so parent
and child never share noise) and guarded by a lock (so two threads never share bytes). Large
requests bypass the buffer.
"""

from __future__ import annotations

import os
import secrets
import threading
import warnings

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]
U32 = npt.NDArray[np.uint32]
_TWO32 = 1 << 32
_TWO64 = 1 << 64
_MASK32 = np.uint64(_TWO32 - 1)
_SHIFT32 = np.uint64(32)
_BUFFER_BYTES = 1 << 16


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
        self._lock = threading.Lock()
        self._buf = b""
        self._pos = 0
        self._pid = os.getpid()
        if seed is not None:
            self._gen = np.random.Generator(np.random.PCG64(seed))
            if warn:
                warnings.warn(
                    "dpframe: a seed makes the noise deterministic and INSECURE; "
                    "use it for tests and documentation only.",
                    InsecureSeedWarning,
                    stacklevel=3,
                )

    def __getstate__(self) -> dict[str, object]:
        """Pickle without the lock or buffered bytes (a copy must never replay our noise)."""
        state = self.__dict__.copy()
        del state["_lock"]
        state["_buf"], state["_pos"] = b"", 0
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._pid = os.getpid()

    @property
    def secure(self) -> bool:
        """True when the words come from the operating system's CSPRNG."""
        return self._gen is None

    def _os_bytes(self, nbytes: int) -> bytes:
        """``nbytes`` bytes from the OS CSPRNG; small requests come from a fork-safe buffer."""
        if nbytes >= _BUFFER_BYTES:
            return os.urandom(nbytes)
        with self._lock:
            pid = os.getpid()
            if pid != self._pid:  # forked child: never reuse the parent's unread bytes
                self._buf, self._pos, self._pid = b"", 0, pid
            if len(self._buf) - self._pos < nbytes:
                self._buf, self._pos = os.urandom(_BUFFER_BYTES), 0
            out = self._buf[self._pos : self._pos + nbytes]
            self._pos += nbytes
            return out

    def words(self, n: int) -> U64:
        """``n`` independent uniform 64-bit words (read-only for the secure source)."""
        if n <= 0:
            return np.zeros(0, dtype=np.uint64)
        if self._gen is None:
            return np.frombuffer(self._os_bytes(8 * n), dtype=np.uint64)
        return self._gen.integers(0, _TWO64, size=n, dtype=np.uint64)

    def words32(self, n: int) -> U32:
        """``n`` independent uniform 32-bit words (the halves of ``ceil(n / 2)`` 64-bit words)."""
        if n <= 0:
            return np.zeros(0, dtype=np.uint32)
        return self.words((n + 1) // 2).view(np.uint32)[:n]

    def below(self, m: npt.ArrayLike) -> U64:
        """One exact uniform integer in ``[0, m_i)`` for each ``m_i`` (1 <= m_i < 2**63).

        Moduli up to 2**32 use Lemire's multiply-shift on 32-bit words: ``x = w * m`` (exact in
        64 bits), output ``x >> 32``, rejecting ``x mod 2**32 < 2**32 mod m``. Proof: the
        products ``w * m`` falling in ``[h * 2**32, (h + 1) * 2**32)`` have low halves in one
        residue class mod ``m``; the kept range ``[2**32 mod m, 2**32)`` has a length that is a
        multiple of ``m``, so every ``h`` keeps exactly ``floor(2**32 / m)`` words. The modulo
        is only computed for the rare ``x mod 2**32 < m``.

        Larger moduli use 64-bit words: ``r = w mod m`` is kept when ``w - r <= 2**64 - m``,
        i.e. when ``w`` lies in a complete block ``[w - r, w - r + m)``, so ``r`` is exactly
        uniform; one modulo per word. Each round rejects with probability < 1/2.
        """
        mm = np.asarray(m, dtype=np.uint64).reshape(-1)
        n = mm.size
        out = np.empty(n, dtype=np.uint64)
        if n == 0:
            return out
        if int(mm.min()) < 1:
            raise ValueError("below needs m >= 1")
        small = int(mm.max()) <= _TWO32
        todo = np.arange(n)
        while todo.size:
            mt = mm[todo]
            if small:
                x = self.words32(todo.size).astype(np.uint64) * mt
                lo = x & _MASK32
                ok = lo >= mt
                check = np.flatnonzero(~ok)
                if check.size:
                    mc = mt[check]
                    ok[check] = lo[check] >= (np.uint64(_TWO32) - mc) % mc
                out[todo[ok]] = x[ok] >> _SHIFT32
            else:
                w = self.words(todo.size)
                r = w % mt
                ok = (w - r) <= (np.uint64(0) - mt)  # 0 - m wraps to 2**64 - m
                out[todo[ok]] = r[ok]
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
        """``n`` exact fair coin flips (every bit of the words is used)."""
        if n <= 0:
            return np.zeros(0, dtype=bool)
        raw = self.words((n + 63) // 64).view(np.uint8)
        return np.unpackbits(raw)[:n].astype(bool)

    def sampling_generator(self, needed: bool = True) -> np.random.Generator | None:
        """A fast generator for data-independent sampling (contribution bounding, shuffles),
        or None when the caller says none is ``needed``.

        Secure sources seed a fresh PCG64 with 128 bits from the OS CSPRNG; seeded sources derive
        it deterministically. Contribution bounding needs selections independent of the data,
        not secrecy, but an unpredictable seed costs nothing. The seed is drawn either way, so a
        seeded source's later draws do not depend on ``needed``; only the generator (about 9 us
        to make) is skipped.
        """
        w = self.words(2)
        if not needed:
            return None
        return np.random.Generator(np.random.PCG64((int(w[0]) << 64) | int(w[1])))


def default_source(seed: int | None = None) -> RandomSource:
    """The source a session uses: the OS CSPRNG unless a seed is given."""
    return RandomSource(seed)
