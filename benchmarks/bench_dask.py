"""DP groupby-sum on Dask vs plain Dask, and pandas' peak memory on the same data.

    .venv/bin/python benchmarks/bench_dask.py                 # 1e8 rows (about 1 GB of Parquet)
    .venv/bin/python benchmarks/bench_dask.py --rows 1e7 --unit
    .venv/bin/python benchmarks/bench_dask.py --rows 2e7 --unit --text-unit  # text user ids

Writes a partitioned Parquet dataset under ``benchmarks/data/`` (git-ignored; reused when
present) with 50 string keys ``g``, a float column ``x`` and a user id ``u``; starts a
``LocalCluster`` (2 worker processes, 1 thread each; ``--scheduler threads``: Dask's threaded
scheduler, 2 threads in this process, where an exchange between tasks moves no bytes); times

* plain Dask: ``ddf.groupby("g")["x"].sum().compute()``
* dpframe on Dask: ``ddf.dp(session, bounds=..., keys=...).groupby("g").sum("x", epsilon=1)``
* with ``--unit``: the same release with ``privacy_unit="u"`` (adds contribution bounding:
  pre-selection and an exchange of the survivors, docs/dask.md)

on the same cluster (``--repeat`` interleaved runs after a warm-up: best, median, and the
median of paired ratios), and measures in
fresh subprocesses the peak resident memory (``resource.ru_maxrss``) of pandas loading the
same data and grouping it, plainly and through ``df.dp``. Prints a Markdown table; asserts
nothing. Figures are recorded in docs/benchmarks/dask.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(HERE.parent))
KEYS = [f"key_{i:02d}" for i in range(50)]
BOUNDS = {"x": (0.0, 100.0)}


def make_dataset(rows: int, rows_per_file: int, out: Path, text_ids: bool = False) -> Path:
    """``rows`` rows in files of ``rows_per_file`` rows; reused when already complete. With
    ``text_ids`` the user id ``u`` is stored as text (``"u123"``)."""
    done = out / "_COMPLETE"
    if done.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.parquet"):
        old.unlink()
    rng = np.random.default_rng(2026)
    keys = pa.array(KEYS)
    users = max(rows // 100, 1)
    for i, start in enumerate(range(0, rows, rows_per_file)):
        n = min(rows_per_file, rows - start)
        g = keys.take(pa.array(rng.integers(0, len(KEYS), n)))
        x = rng.gamma(2.0, 10.0, n)  # some values above the bound 100: clamped
        u = rng.integers(0, users, n)  # a user's rows are spread over every file
        ids = pc.binary_join_element_wise("u", pa.array(u).cast(pa.string()), "") \
            if text_ids else pa.array(u)
        table = pa.table({"g": g, "x": x, "u": ids})
        pq.write_table(table, out / f"part-{i:05d}.parquet")
    done.touch()
    return out


def interleaved(fns: dict[str, Callable[[], Any]], repeat: int, warmup: bool = True
                ) -> dict[str, list[float]]:
    """Run every function ``repeat`` times, alternating them (after one warm-up each), so that
    load from other processes on a shared machine hits every contender alike."""
    for fn in fns.values() if warmup else ():
        fn()  # warm-up: imports, worker caches, graph machinery
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return times


PANDAS_CHILD = r"""
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
import pandas as pd
path, mode = sys.argv[1], sys.argv[2]
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
if mode == "plain":
    df = pd.read_parquet(path, columns=["g", "x"])
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = df.groupby("g")["x"].sum()
else:
    import dpframe as dpf
    df = pd.read_parquet(path, columns=["g", "x"])
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    keys = [f"key_{i:02d}" for i in range(50)]  # declared, never read from the data
    s = dpf.Session(epsilon=10)
    out = df.dp(s, bounds={"x": (0.0, 100.0)}, keys={"g": keys}).groupby("g").sum("x", epsilon=1)
elapsed = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"base_mb": base / 1024, "loaded_mb": loaded / 1024, "peak_mb": peak / 1024,
                  "seconds": elapsed, "groups": len(out)}))
"""


def pandas_memory(path: Path, mode: str) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    proc = subprocess.run([sys.executable, "-c", PANDAS_CHILD, str(path), mode], env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"error": float("nan"), "stderr": proc.stderr[-500:]}  # type: ignore[dict-item]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@contextlib.contextmanager
def _local_cluster() -> Iterator[None]:
    """A client of a ``LocalCluster`` of 2 worker processes, 1 thread each."""
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster):
        yield


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=float, default=1e8)
    ap.add_argument("--rows-per-file", type=float, default=2e6)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--unit", action="store_true", help="also time privacy_unit='u' (shuffle)")
    ap.add_argument("--text-unit", action="store_true",
                    help="store the user id u as text (a separate dataset)")
    ap.add_argument("--no-pandas", action="store_true", help="skip the pandas memory runs")
    ap.add_argument("--no-warmup", action="store_true", help="no warm-up run (long runs)")
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--scheduler", choices=("processes", "threads"), default="processes",
                    help="a LocalCluster of 2 worker processes (default), or Dask's threaded "
                         "scheduler with 2 threads (no bytes moved between tasks)")
    args = ap.parse_args()
    rows, per_file = int(args.rows), int(args.rows_per_file)

    t0 = time.perf_counter()
    suffix = "_text_ids" if args.text_unit else ""
    path = make_dataset(rows, per_file, args.data / f"dask_rows_{rows}_per_{per_file}{suffix}",
                        args.text_unit)
    gen_s = time.perf_counter() - t0
    size_mb = sum(f.stat().st_size for f in path.glob("*.parquet")) / 2**20

    warnings.simplefilter("ignore")
    import dask
    import dask.dataframe as dd

    import dpframe as dpf
    import dpframe.fronts.dask  # registers ddf.dp

    results: list[tuple[str, float, float, str]] = []
    scheduler: Any = (dask.config.set(scheduler="threads", num_workers=2)
                      if args.scheduler == "threads" else _local_cluster())
    with scheduler:
        ddf = dd.read_parquet(str(path))
        nparts = ddf.npartitions
        session = dpf.Session(epsilon=1000)
        # one privacy unit per session (and ledger): unit-level releases get their own
        unit_session = dpf.Session(epsilon=1000, privacy_unit="u")

        def plain() -> Any:
            return ddf.groupby("g")["x"].sum().compute()

        def private() -> Any:
            return ddf.dp(session, bounds=BOUNDS, keys={"g": KEYS}).groupby("g").sum(
                "x", epsilon=1)

        def private_unit() -> Any:
            return ddf.dp(unit_session, bounds=BOUNDS, keys={"g": KEYS}, privacy_unit="u",
                          max_rows_per_unit=10).groupby("g").sum("x", epsilon=1)

        fns: dict[str, Callable[[], Any]] = {"plain Dask groupby().sum()": plain,
                                             "dpframe ddf.dp ... groupby().sum()": private}
        if args.unit:
            fns["dpframe, privacy_unit='u' (max_rows_per_unit=10)"] = private_unit
        times = interleaved(fns, args.repeat, warmup=not args.no_warmup)
        assert len(private()) == len(KEYS)
        base = times["plain Dask groupby().sum()"]
        for name, ts in times.items():
            pair = statistics.median(t / b for t, b in zip(ts, base, strict=True))
            results.append((name, min(ts), statistics.median(ts),
                            f"{min(ts) / min(base):.2f}x (paired median {pair:.2f}x)"))

    print(f"\n{rows:,} rows, {len(list(path.glob('*.parquet')))} files, {size_mb:,.0f} MiB "
          f"Parquet, {nparts} partitions; dataset written in {gen_s:.1f} s (0 if reused)")
    where = ("Dask's threaded scheduler: 2 threads" if args.scheduler == "threads"
             else "LocalCluster: 2 worker processes x 1 thread")
    print(f"{where}; {os.cpu_count()} CPUs\n")
    print("| run | best (s) | median (s) | vs plain Dask |")
    print("| --- | ---: | ---: | ---: |")
    for name, best, med, ratio in results:
        print(f"| {name} | {best:.2f} | {med:.2f} | {ratio} |")
    if not args.no_pandas:
        print("\n| pandas, one process | load peak RSS (MiB) | peak RSS (MiB) | seconds |")
        print("| --- | ---: | ---: | ---: |")
        for mode, label in (("plain", "read_parquet + groupby().sum()"),
                            ("dp", "read_parquet + df.dp ... groupby().sum()")):
            m = pandas_memory(path, mode)
            if "error" in m:
                print(f"| {label} | failed: {m.get('stderr', '')!r} | | |")
            else:
                print(f"| {label} | {m['loaded_mb']:,.0f} | {m['peak_mb']:,.0f} | "
                      f"{m['seconds']:.1f} |")


if __name__ == "__main__":
    main()
