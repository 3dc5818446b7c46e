"""One audit scenario: a release on a worst-case neighbouring pair, with its trial counts.

Many draws per release: a grouped release over many public keys whose groups all hold the same
worst-case data gives one independent draw per key (or per block of keys a unit touches). That
is sound: the noise of different groups is independent and each group's output depends only on
its own rows, so the output of group j under "every group has the extra unit" has the same
distribution as under "only group j has it", which is a true neighbour of D.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from dpframe.core.noise.rng import InsecureSeedWarning
from dpframe.testing import DEFAULT_ALPHA, AuditResult, FloatArray, audit_release

#: One release on one dataset: its draws.
Run = Callable[[], FloatArray]
#: What a scenario builds from a seed: run_d, run_d2, claimed epsilon, claimed delta.
Built = tuple[Run, Run, float, float]
#: An exact scenario: ``(epsilon, claimed epsilon, claimed delta, how)`` from a seed.
Exact = Callable[[int], tuple[float, float, float, str]]


@dataclass(frozen=True)
class Scenario:
    """One audit: a release on a worst-case neighbouring pair, with its trial counts."""

    name: str
    neighbours: str
    build: Callable[[int], Built] | None  # None for an exact scenario
    full_trials: int
    fast_trials: int | None = None     # None: only in the full audit
    expect_violation: bool = False
    #: A deliberately broken release: the context in which the release runs broken.
    patch: Callable[[], contextlib.AbstractContextManager[object]] | None = None
    #: Instead of sampling: an exact epsilon computed from the release's stated noise.
    exact: Exact | None = None

    def run(self, trials: int | None = None, *, full: bool = True, alpha: float = DEFAULT_ALPHA,
            seed: int = 0) -> AuditResult:
        """Run this audit (``trials`` per dataset, default the full or fast count)."""
        n = trials or (self.full_trials if full or self.fast_trials is None else
                       self.fast_trials)
        ctx = self.patch() if self.patch is not None else contextlib.nullcontext()
        with ctx, warnings.catch_warnings():
            # seeded sessions make the audit reproducible; their noise is never published
            warnings.simplefilter("ignore", InsecureSeedWarning)
            if self.exact is not None:
                return self._run_exact(self.exact, seed)
            if self.build is None:
                raise ValueError(f"scenario {self.name!r} has neither build nor exact")
            run_d, run_d2, claimed, delta = self.build(seed)
            return audit_release(run_d, run_d2, n, None, alpha, claimed=claimed, delta=delta,
                                 name=self.name, neighbours=self.neighbours,
                                 expect_violation=self.expect_violation)

    def _run_exact(self, exact: Exact, seed: int) -> AuditResult:
        t0 = time.perf_counter()
        eps, claimed, delta, how = exact(seed)
        return AuditResult(self.name, eps, claimed, how, "exact", delta=delta, alpha=0.0,
                           seconds=time.perf_counter() - t0, neighbours=self.neighbours,
                           expect_violation=self.expect_violation)
