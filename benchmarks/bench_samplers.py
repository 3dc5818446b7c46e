"""Benchmark: exact samplers on the secure source vs numpy's (insecure, inexact) Laplace.

    .venv/bin/python benchmarks/bench_samplers.py [--n 1000000] [--repeat 3]

Times ``n`` draws of each dpframe sampler with ``RandomSource()`` (the OS CSPRNG) and of
``numpy.random.default_rng().laplace`` in the same run. Every sampler is warmed up once first
(its exact threshold tables are built once per scale and cached); then the best of ``--repeat``
interleaved rounds is kept, so load from other processes affects every contender alike.
Prints a table, never asserts: the target is a ratio >= 0.1 for the discrete Laplace.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from _timing import best_of

from dpframe.core import samplers
from dpframe.core.rng import RandomSource


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="draws per call")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds (best is kept)")
    args = ap.parse_args(argv)
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
        "discrete_gaussian sigma2=100": lambda: samplers.discrete_gaussian(Fraction(100), n, src),
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


if __name__ == "__main__":
    raise SystemExit(main())
