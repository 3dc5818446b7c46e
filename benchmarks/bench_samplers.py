"""Benchmark: exact samplers on the secure source vs numpy's (insecure, inexact) Laplace.

    .venv/bin/python benchmarks/bench_samplers.py [--n 1000000] [--repeat 3]

Times ``n`` draws of each dpframe sampler with ``RandomSource()`` (the OS CSPRNG) and of
``numpy.random.default_rng().laplace`` in the same run. Every sampler is warmed up once first
(its exact threshold tables are built once per scale and cached); then the best of ``--repeat``
interleaved rounds is kept, so load from other processes affects every contender alike.
Prints a table, never asserts: the target is a ratio >= 0.1 for the discrete Laplace.

``--choose`` times permute-and-flip instead (:meth:`ExponentialSpec.choose`, the grouped
median's sampler) over 2**16 cells per group, in ms per group of CPU time, against the previous
sampler (one exact coin and one priority word per cell), kept here as the reference.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from _timing import best_of

from dpframe.core.aggregates.quantile import rank_utilities
from dpframe.core.noise import samplers
from dpframe.core.noise.discrete_gaussian import discrete_gaussian
from dpframe.core.noise.mechanisms import ExponentialSpec
from dpframe.core.noise.rng import RandomSource


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="draws per call")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds (best is kept)")
    ap.add_argument("--choose", action="store_true", help="time permute-and-flip instead")
    args = ap.parse_args(argv)
    if args.choose:
        return bench_choose(args.repeat)
    n = args.n
    src = RandomSource()
    gen = np.random.default_rng()
    den = 1_000_000
    num = gen.integers(0, 3 * den, size=n)  # gamma uniform in [0, 3)
    dens = np.full(n, den)

    fns: dict[str, Callable[[], Any]] = {
        "numpy Generator.laplace(scale=10)": lambda: gen.laplace(0.0, 10.0, n),
        "discrete_laplace scale=1/3": lambda: samplers.discrete_laplace(Fraction(1, 3), n, src),
        "discrete_laplace scale=1": lambda: samplers.discrete_laplace(Fraction(1), n, src),
        "discrete_laplace scale=10": lambda: samplers.discrete_laplace(Fraction(10), n, src),
        "discrete_laplace scale=1e3": lambda: samplers.discrete_laplace(Fraction(1000), n, src),
        "discrete_laplace scale=2**30": lambda: samplers.discrete_laplace(Fraction(2**30), n, src),
        "discrete_laplace scale=2**35": lambda: samplers.discrete_laplace(Fraction(2**35), n, src),
        "discrete_gaussian sigma2=100": lambda: discrete_gaussian(Fraction(100), n, src),
        "bernoulli_exp_neg gamma~U[0,3)": lambda: samplers.bernoulli_exp_neg(num, dens, src),
        "bernoulli_exp_neg_one": lambda: samplers.bernoulli_exp_neg_one(n, src),
        "geometric_exp_neg_one": lambda: samplers.geometric_exp_neg_one(n, src),
        "os.urandom (8 bytes per draw)": lambda: os.urandom(8 * n),
    }
    best = best_of(fns, args.repeat)
    base = n / best["numpy Generator.laplace(scale=10)"]

    print(f"dpframe sampler benchmark: n = {n:,}, best of {args.repeat} interleaved rounds")
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"{platform.machine()}, {os.cpu_count()} cpus, secure source: {src.secure}")
    width = max(len(k) for k in fns)
    print(f"{'sampler':<{width}}  {'samples/s':>12}  {'vs numpy':>8}")
    print(f"{'-' * width}  {'-' * 12}  {'-' * 8}")
    for name, t in best.items():
        rate = n / t
        print(f"{name:<{width}}  {rate / 1e6:>10.2f} M  {rate / base:>8.3f}")
    return 0


def choose_per_cell(spec: ExponentialSpec, u: np.ndarray, rng: RandomSource) -> np.ndarray:
    """The previous sampler (before 2026-11-28), same law: one exact Bernoulli(exp(-rate gap))
    coin and one 64-bit priority word per cell, the accepted cell of least priority wins."""
    g, m = u.shape
    a, den = spec.acceptance_rate()
    gap = np.minimum(u.max(axis=1, keepdims=True) - u, -(-64 * den // a)).reshape(-1)
    accept = samplers.bernoulli_exp_neg(a * gap, np.full(gap.size, den), rng).reshape(g, m)
    prio = np.where(accept, rng.words(g * m).reshape(g, m), np.uint64(2**64 - 1))
    return np.asarray(prio.argmin(axis=1))


def bench_choose(repeat: int) -> int:
    """ms per group (CPU) of a median's permute-and-flip over 2**16 cells, at epsilon 1."""
    m, groups = 1 << 16, 20
    src = RandomSource()
    gen = np.random.default_rng(0)
    spec = ExponentialSpec(Fraction(1), 1, m)
    cases = {"dense (2,000 rows a group)": 2000, "sparse (20 rows a group)": 20}
    utils = {}
    for name, rows in cases.items():
        x = gen.normal(0.5, 0.15, (groups, rows)).clip(0, 1 - 1e-9)
        cells = np.stack([np.bincount((r * m).astype(np.int64), minlength=m) for r in x])
        utils[name] = rank_utilities(cells, Fraction(1, 2))
    utils["all cells equal"] = np.zeros((groups, m), dtype=np.int64)
    one = np.full((groups, m), -(10**6), dtype=np.int64)
    one[:, 0] = 0
    utils["one best, the rest capped"] = one
    fns: dict[str, Callable[[], Any]] = {}
    for name, u in utils.items():
        fns[f"{name}: choose"] = lambda u=u: spec.choose(u, src)
        fns[f"{name}: previous"] = lambda u=u: choose_per_cell(spec, u, src)
    best = best_of(fns, repeat, clock=time.process_time)
    print(f"permute-and-flip, {m:,} cells a group, {groups} groups, CPU ms per group, best of "
          f"{repeat}; python {platform.python_version()}, numpy {np.__version__}")
    width = max(len(k) for k in fns)
    for name, t in best.items():
        print(f"{name:<{width}}  {1e3 * t / groups:>8.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
