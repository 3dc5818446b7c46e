"""Benchmark: k-ary randomized response (k = 10) over 1e7 values vs numpy's Generator.choice.

    .venv/bin/python benchmarks/bench_local.py [--n 10000000] [--repeat 7]

The randomizer uses the default *secure* source (the OS CSPRNG) and exact sampling; the
baseline ``numpy.random.default_rng().choice(10, size=n)`` is a fast insecure PRNG drawing
uniform values (not even a privacy mechanism). Times are the best of ``--repeat`` runs after a
warm-up, rounds interleaved. Prints, never asserts: the target is a ratio <= 3.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from _timing import best_of

from dpframe import local
from dpframe.core.noise.rng import RandomSource
from dpframe.local._design import Design, exact_epsilon
from dpframe.local._sampling import draw_offsets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    n, k, eps = args.n, args.k, args.epsilon

    values = np.random.default_rng(0).integers(0, k, size=n)
    categories = list(range(k))
    series = pd.Series(values)
    source = RandomSource()
    assert source.secure
    design = Design(k=k, x=exact_epsilon(eps))
    gen = np.random.default_rng()

    t = best_of({
        "choice": lambda: gen.choice(k, size=n),
        "array": lambda: local.randomized_response(values, eps, categories=categories),
        "series": lambda: local.randomized_response(series, eps, categories=categories),
        "offsets": lambda: draw_offsets(design, n, source),
    }, args.repeat)
    t_choice, t_array, t_series, t_offsets = t["choice"], t["array"], t["series"], t["offsets"]

    print(f"machine: {platform.machine()} {platform.system()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}, numpy {np.__version__}")
    print(f"k-RR k={k} eps={eps} n={n:.0e} (secure OS CSPRNG, exact sampling)")
    print(f"  numpy Generator.choice({k}, size=n)    {t_choice * 1e3:8.1f} ms   1.00x")
    print(f"  randomized_response(ndarray)           {t_array * 1e3:8.1f} ms   "
          f"{t_array / t_choice:.2f}x")
    print(f"  randomized_response(Series)            {t_series * 1e3:8.1f} ms   "
          f"{t_series / t_choice:.2f}x")
    print(f"  offsets only (exact sampler)           {t_offsets * 1e3:8.1f} ms   "
          f"{t_offsets / t_choice:.2f}x")
    print(f"ratio (ndarray end to end / choice): {t_array / t_choice:.2f}  (target <= 3)")


if __name__ == "__main__":
    main()
