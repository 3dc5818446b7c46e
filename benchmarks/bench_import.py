"""``import dpframe`` time: fresh interpreters, against importing pandas and pyarrow (which
dpframe needs anyway), interleaved, best of N. Target: import dpframe under 300 ms and not
importing dask (issue: results people can read; ``ddf.dp`` registers lazily).

    python benchmarks/bench_import.py [--repeat 9]
"""

from __future__ import annotations

import argparse
import subprocess
import sys

SNIPPETS = {
    "python (nothing)": "pass",
    "import pandas, pyarrow": "import pandas, pyarrow",
    "import dpframe": "import dpframe",
}
TIMER = ("import time, sys; t = time.perf_counter(); {code}; "
         "print(time.perf_counter() - t, 'dask' in sys.modules)")


def measure(code: str) -> tuple[float, bool]:
    out = subprocess.run([sys.executable, "-c", TIMER.format(code=code)], capture_output=True,
                         text=True, check=True)
    seconds, dask = out.stdout.split()
    return float(seconds), dask == "True"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    for code in SNIPPETS.values():  # warm the file cache
        measure(code)
    best = dict.fromkeys(SNIPPETS, float("inf"))
    dask_loaded = False
    for _ in range(args.repeat):
        for name, code in SNIPPETS.items():
            t, dask = measure(code)
            best[name] = min(best[name], t)
            dask_loaded |= dask and name == "import dpframe"
    base = best["import pandas, pyarrow"]
    print(f"| what | best of {args.repeat} (ms) | vs pandas + pyarrow |")
    print("| --- | --- | --- |")
    for name, t in best.items():
        print(f"| {name} | {t * 1e3:.0f} | {t / base:.2f}x |")
    print(f"\nimport dpframe imports dask: {dask_loaded}")


if __name__ == "__main__":
    main()
