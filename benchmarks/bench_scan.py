"""Streaming DP groupby-sum over a large Parquet dataset: peak memory and throughput.

    python benchmarks/bench_scan.py                 # 1e8 rows (generated once, ~1.3 GB)
    python benchmarks/bench_scan.py --rows 10000000 # quicker
    python benchmarks/bench_scan.py --units         # also the two-pass privacy-unit plan

The dataset (``state`` string key with 51 values, ``income`` float, ``user_id`` int) is written
under ``benchmarks/data/`` (git-ignored) if absent. Each measurement runs in a fresh Python
process, which reports its own peak RSS (``resource.getrusage``) and wall time:

Every mode reads the same record batches with the same reader (``DatasetSource.batches``:
Parquet row groups decoded by a prefetch thread, ``state`` as an Arrow dictionary).

* ``read``: iterate the record batches only (the I/O and decoding floor);
* ``pyarrow``: ``Table.group_by("state").aggregate([("income", "sum")])`` on every batch,
  partial sums added up (pyarrow's own grouped sum over the same batches);
* ``dpframe``: ``dpf.scan(...).dp(...).groupby("state").sum("income")``, the whole DP release
  (validation, charge, streaming exact sums, noise);
* ``dpframe-units`` (``--units``): the same with ``privacy_unit="user_id"`` (two passes).

Prints a table; never asserts. Record figures in docs/benchmarks/scan.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
sys.path.insert(0, str(ROOT))
from dpframe.datasets import STATES  # noqa: E402  (the 50 states and DC)

ROWS_PER_FILE = 10_000_000
ROW_GROUP = 1_000_000
BATCH = 1 << 20


def generate(rows: int, folder: Path, seed: int = 0) -> None:
    """Write ``rows`` synthetic rows as Parquet files of 1e7 rows (row groups of 1e6)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.2, 5.0, len(STATES))
    p = weights / weights.sum()
    dictionary = pa.array(STATES)
    n_users = max(rows // 20, 1)
    done, file_no = 0, 0
    t0 = time.perf_counter()
    while done < rows:
        n_file = min(ROWS_PER_FILE, rows - done)
        path = folder / f"part-{file_no:04d}.parquet"
        tmp = path.with_suffix(".tmp")
        with pq.ParquetWriter(tmp, pa.schema([("state", pa.string()), ("income", pa.float64()),
                                              ("user_id", pa.int64())])) as w:
            for start in range(0, n_file, ROW_GROUP):
                n = min(ROW_GROUP, n_file - start)
                idx = rng.choice(len(STATES), size=n, p=p).astype(np.int32)
                state = pa.DictionaryArray.from_arrays(pa.array(idx), dictionary)
                income = np.round(rng.lognormal(10.5, 0.9, n), 2)
                user = rng.integers(0, n_users, n)
                w.write_table(pa.table({"state": state.dictionary_decode(), "income": income,
                                        "user_id": user}), row_group_size=ROW_GROUP)
        os.replace(tmp, path)
        done += n_file
        file_no += 1
        print(f"  generated {done:,} / {rows:,} rows ({time.perf_counter() - t0:.0f} s)",
              file=sys.stderr)


CHILD = r"""
import json, resource, sys, time, warnings
import pyarrow as pa
sys.path.insert(0, {root!r})
from dpframe.backends.arrow import DatasetSource
mode, folder, batch = {mode!r}, {folder!r}, {batch}
files = sorted(str(p) for p in __import__("pathlib").Path(folder).glob("*.parquet"))
if mode.startswith("dpframe"):
    import dpframe as dpf  # imported before the clock starts, like pyarrow
t0 = time.perf_counter()
rows = 0
if mode == "read":
    for b in DatasetSource(files).batches(["state", "income"], batch, ["state"]):
        rows += b.num_rows
elif mode == "pyarrow":
    parts = []
    for b in DatasetSource(files).batches(["state", "income"], batch, ["state"]):
        rows += b.num_rows
        part = pa.Table.from_batches([b]).group_by("state").aggregate([("income", "sum")])
        parts.append(part.set_column(part.schema.get_field_index("state"), "state",
                                     part.column("state").cast(pa.string())))
    total = pa.concat_tables(parts).group_by("state").aggregate([("income_sum", "sum")])
else:
    warnings.simplefilter("ignore")
    states = {states!r}
    session = dpf.Session(10.0, 1e-6)
    opts = dict(bounds={{"income": (0, 1_000_000)}}, keys={{"state": states}})
    if mode == "dpframe-units":
        opts.update(privacy_unit="user_id", max_rows_per_unit=10)
    scan = dpf.scan(files, batch_size=batch, progress=False)
    out = scan.dp(session, **opts).groupby("state").sum("income", epsilon=1.0)
    rows = scan.source.row_count()
wall = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"mode": mode, "rows": rows, "seconds": wall, "peak_rss": rss}}))
"""


def measure(mode: str, folder: Path, batch: int) -> dict[str, float]:
    code = CHILD.format(root=str(ROOT), mode=mode, folder=str(folder), batch=batch,
                        states=STATES)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{mode} failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=float, default=1e8, help="rows in the dataset (default 1e8)")
    ap.add_argument("--batch-size", type=int, default=BATCH)
    ap.add_argument("--units", action="store_true", help="also the privacy-unit (two-pass) plan")
    ap.add_argument("--repeat", type=int, default=1, help="runs per mode (best is kept)")
    args = ap.parse_args()
    rows = int(args.rows)
    folder = DATA / f"scan-{rows}"
    if not (folder.exists() and any(folder.glob("*.parquet"))):
        print(f"generating {rows:,} rows under {folder} ...", file=sys.stderr)
        generate(rows, folder)
    size = sum(p.stat().st_size for p in folder.glob("*.parquet"))
    modes = ["read", "pyarrow", "dpframe"] + (["dpframe-units"] if args.units else [])
    results = {}
    for mode in modes:
        best = None
        for _ in range(args.repeat):
            r = measure(mode, folder, args.batch_size)
            if best is None or r["seconds"] < best["seconds"]:
                best = r
        assert best is not None
        results[mode] = best
        print(f"  {mode}: {best['seconds']:.1f} s", file=sys.stderr)
    print(f"\n{rows:,} rows, {size / 1e9:.2f} GB Parquet, batch {args.batch_size:,} rows, "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print(f"{'mode':<15}{'seconds':>10}{'Mrows/s':>10}{'peak RSS':>12}{'vs pyarrow':>12}")
    base = results["pyarrow"]["seconds"]
    for mode, r in results.items():
        print(f"{mode:<15}{r['seconds']:>10.2f}{rows / r['seconds'] / 1e6:>10.1f}"
              f"{r['peak_rss'] / 2**20:>9.0f} MB{r['seconds'] / base:>11.2f}x")


if __name__ == "__main__":
    main()
