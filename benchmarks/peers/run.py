"""dpframe against its peers: same data, same queries, same epsilon (issue 8).

One virtual environment per peer under ``benchmarks/peers/.venvs/`` (built by ``--setup``), one
runner per peer in ``runners/`` executed in that venv, one fresh process per (peer, size,
query). Time and memory are reported as ratios to plain pandas measured in the same run;
accuracy as the mean absolute error against the exact pandas answer over several releases.

    python benchmarks/peers/run.py --setup                 # build the venvs (once)
    python benchmarks/peers/run.py --rows 1000000 10000000 # run, write results/*.json
    python benchmarks/peers/run.py --report                # results -> docs/benchmarks/peers.md

Stdlib only: it runs under any Python 3.11.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
VENVS = HERE / ".venvs"
DATA = HERE / "data"
RESULTS = HERE / "results"
DOC = REPO / "docs" / "benchmarks" / "peers.md"
QUERIES = ("count", "sum", "mean", "groupby_sum", "user_groupby_sum")

# peer -> (venv, runner, pip requirements, distribution whose version is reported)
PEERS: dict[str, tuple[str, str, list[str], str]] = {
    "pandas": ("dpframe", "pandas_runner.py", [], "pandas"),  # shares dpframe's venv
    "dpframe": ("dpframe", "dpframe_runner.py", ["-e", str(REPO), "pyarrow", "pandas"],
                "dpframe"),
    "opendp": ("opendp", "opendp_runner.py", ["opendp[polars]", "pyarrow"], "opendp"),
    "tumult": ("tumult", "tumult_runner.py", ["tmlt.analytics", "pyarrow"], "tmlt.analytics"),
    "pipelinedp": ("pipelinedp", "pipelinedp_runner.py", ["pipeline-dp", "pyarrow", "pandas"],
                   "pipeline-dp"),
    # diffprivlib 0.6.6 imports a name that scikit-learn 1.7 removed (sklearn.tree._tree.DOUBLE)
    "diffprivlib": ("diffprivlib", "diffprivlib_runner.py",
                    ["diffprivlib", "scikit-learn<1.7", "pyarrow", "pandas"], "diffprivlib"),
    "smartnoise": ("smartnoise", "smartnoise_runner.py", ["smartnoise-sql", "pyarrow", "pandas"],
                   "smartnoise-sql"),
}


def py(venv: str) -> Path:
    return VENVS / venv / "bin" / "python"


def setup(peers: list[str]) -> None:
    """Create one venv per peer and pip-install it; a failure is recorded, not fatal."""
    VENVS.mkdir(parents=True, exist_ok=True)
    status_path = VENVS / "install_status.json"
    status = json.loads(status_path.read_text()) if status_path.exists() else {}
    for peer in peers:
        venv, _, reqs, _ = PEERS[peer]
        if not reqs:
            continue
        if not py(venv).exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENVS / venv)], check=True)
        r = subprocess.run([str(py(venv)), "-m", "pip", "install", "-q", *reqs],
                           capture_output=True, text=True)
        status[peer] = "ok" if r.returncode == 0 else r.stderr[-2000:]
        print(f"{peer}: {'ok' if r.returncode == 0 else 'FAILED'}", flush=True)
    status_path.write_text(json.dumps(status, indent=1))


GEN = r"""
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
rows, path = int(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(20261122)
keys = np.array([f"key_{i:02d}" for i in range(50)])
g = keys[rng.integers(0, 50, rows)]
x = rng.uniform(0.0, 100.0, rows)
uid = np.repeat(np.arange(rows // 10, dtype=np.int64), 10)[rng.permutation(rows)]
pq.write_table(pa.table({"g": g, "x": x, "uid": uid}), path, row_group_size=1 << 20)
"""


def dataset(rows: int) -> Path:
    """g: one of 50 string keys; x: float in [0, 100]; uid: 10 rows per unit (shuffled)."""
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"rows_{rows}.parquet"
    if not path.exists():
        subprocess.run([str(py("dpframe")), "-c", GEN, str(rows), str(path)], check=True)
    return path


def run_one(peer: str, rows: int, query: str, reps: int, budget: float,
            timeout: float) -> dict:
    venv, runner, _, _ = PEERS[peer]
    if not py(venv).exists():
        return {"query": query, "error": "venv missing (install failed)"}
    cmd = [str(py(venv)), str(HERE / "runners" / runner), "--data", str(dataset(rows)),
           "--query", query, "--reps", str(reps), "--budget", str(budget)]
    t = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, "PYTHONWARNINGS": "ignore"})
    except subprocess.TimeoutExpired:
        return {"query": query, "error": f"timed out after {timeout:.0f} s (capped)"}
    wall = time.perf_counter() - t
    for line in r.stdout.splitlines():
        if line.startswith("@@RESULT@@"):
            out = json.loads(line[len("@@RESULT@@"):])
            out["process_s"] = wall
            if "error" in out:
                out["stderr"] = r.stderr[-3000:]
            return out
    return {"query": query, "error": f"runner crashed (exit {r.returncode})",
            "stderr": r.stderr[-3000:]}


def run(peers: list[str], sizes: list[int], queries: list[str], reps: int, budget: float,
        timeout: float) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    for rows in sizes:
        dataset(rows)
        for peer in peers:
            path = RESULTS / f"{peer}_{rows}.json"
            res = json.loads(path.read_text()) if path.exists() else {}
            for q in queries:
                t = time.perf_counter()
                res[q] = run_one(peer, rows, q, reps, budget, timeout)
                o = res[q]
                tag = o.get("unsupported") or o.get("error") or f"{o['seconds']:.3f}s"
                print(f"{rows:>9} {peer:<12} {q:<17} {tag[:100]}  "
                      f"({time.perf_counter() - t:.0f}s)", flush=True)
                path.write_text(json.dumps(res, indent=1))


# ---------------------------------------------------------------- report


def mae(values: list, exact: object) -> float:
    errs = []
    for v in values:
        if isinstance(exact, dict):
            # A key the peer did not release (suppressed) costs its whole value.
            errs.extend(abs((v.get(k) if v.get(k) is not None else 0.0) - e)
                        for k, e in exact.items())
        else:
            errs.append(abs(v - exact))
    return sum(errs) / len(errs)


def fmt(x: float) -> str:
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.2g}"


NOTES: dict[tuple[str, str], str] = {
    ("pandas", "count"): "`len(df)`: O(1)",
    ("pandas", "user_groupby_sum"): "same groupby-sum: pandas has no privacy unit",
    ("dpframe", "count"): "geometric noise",
    ("dpframe", "sum"): "exact fixed-point sum, granular Laplace",
    ("dpframe", "mean"): "half of epsilon to the count, half to the sum",
    ("dpframe", "groupby_sum"): "public keys, parallel composition",
    ("dpframe", "user_groupby_sum"): "<= 10 rows per group, <= 50 groups per unit, sampled",
    ("opendp", "count"): "includes OpenDP's noise-scale search (~1 s) and the Parquet scan",
    ("opendp", "user_groupby_sum"): "`truncate_num_groups(50, keep='first')` (default "
                                    "`sample` fails in 0.16.0), `truncate_per_group(10)`",
    ("diffprivlib", "sum"): "bounded DP: sensitivity U - L, n public",
    ("diffprivlib", "mean"): "bounded DP: sensitivity (U - L) / n, n public",
    ("diffprivlib", "groupby_sum"): "no groupby: pandas split + `tools.sum` per key at eps/2",
    ("smartnoise", "count"): "SQL over its in-memory SQLite copy",
    ("smartnoise", "groupby_sum"): "keys from the data, released without threshold",
    ("smartnoise", "user_groupby_sum"): "`max_ids=10` rows per unit in total: tighter bound, "
                                        "so less noise",
    ("pipelinedp", "count"): "`LocalBackend`: pure Python over row tuples",
    ("pipelinedp", "user_groupby_sum"): "50 partitions x 10 contributions per unit, sampled",
    ("tumult", "count"): "Spark local[2]; Session built at load",
    ("tumult", "user_groupby_sum"): "`MaxGroupsPerID(50)` + `MaxRowsPerGroupPerID(10)`",
}


def table(sizes: list[int]) -> str:
    lines = ["| peer | query | rows | time s | time / pandas | extra memory MB "
             "| memory / pandas | MAE | releases | notes |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for rows in sizes:
        base = json.loads((RESULTS / f"pandas_{rows}.json").read_text())
        for q in QUERIES:
            b = base[q]
            exact = b["values"][0]
            for peer in PEERS:
                path = RESULTS / f"{peer}_{rows}.json"
                if not path.exists() or q not in json.loads(path.read_text()):
                    continue
                o = json.loads(path.read_text())[q]
                note = NOTES.get((peer, q), "")
                if "seconds" not in o:
                    why = o.get("unsupported") or o.get("error", "")
                    why = why.replace("|", "/").replace("\n", " ")[:160]
                    lines.append(f"| {peer} | {q} | {size(rows)} | — | — | — | — | — | — "
                                 f"| **{why}**{'; ' + note if note else ''} |")
                    continue
                tr = o["seconds"] / max(b["seconds"], 1e-6)
                mem = o["peak_extra_mb"]
                mr = (f"{mem / b['peak_extra_mb']:.1f}" if b["peak_extra_mb"] >= 5 else "—")
                err = "exact" if peer == "pandas" else fmt(mae(o["values"], exact))
                lines.append(
                    f"| {peer} | {q} | {size(rows)} | {fmt(o['seconds'])} | "
                    f"{'1' if peer == 'pandas' else fmt(tr)} | {mem:,.0f} | "
                    f"{'1' if peer == 'pandas' else mr} | {err} | {len(o['values'])} | {note} |")
    return "\n".join(lines)


def size(rows: int) -> str:
    return f"{rows:.0e}".replace("e+0", "e")


def loads(sizes: list[int]) -> str:
    """Load time and resident memory after loading, from each peer's count process."""
    lines = ["| peer | rows | load s | RSS after load MB |", "| --- | ---: | ---: | ---: |"]
    for rows in sizes:
        for peer in PEERS:
            path = RESULTS / f"{peer}_{rows}.json"
            if not path.exists():
                continue
            o = next((v for v in json.loads(path.read_text()).values() if "load_s" in v), None)
            if o:
                lines.append(f"| {peer} | {size(rows)} | {fmt(o['load_s'])} | "
                             f"{o['rss_after_load_mb']:,.0f} |")
    return "\n".join(lines)


DEPS = {"dpframe": ["numpy", "pyarrow"], "opendp": ["polars"],
        "tumult": ["tmlt.core", "pyspark", "pandas", "numpy"], "pipelinedp": ["python-dp"],
        "diffprivlib": ["scikit-learn", "numpy"], "smartnoise": ["opendp", "pandas"]}


def versions(sizes: list[int]) -> str:
    """One line per peer: its version from the results, plus key dependencies of its venv."""
    seen: dict[str, str] = {}
    for rows in sizes:
        for peer in PEERS:
            path = RESULTS / f"{peer}_{rows}.json"
            if path.exists():
                for o in json.loads(path.read_text()).values():
                    if o.get("version"):
                        seen[peer] = o["version"]
    lines = []
    for peer, ver in seen.items():
        line = f"* {peer}: `{PEERS[peer][3]}` {ver}"
        if peer == "dpframe":
            run = json.loads((RESULTS / "machine.json").read_text())
            line += f", commit {run.get('commit', '?')} of this repository"
            # runs recorded before the flag existed may have had uncommitted work
            if run.get("uncommitted", True):
                line += " plus its uncommitted work at the run"
        deps = DEPS.get(peer, [])
        if deps and py(PEERS[peer][0]).exists():
            code = ("import importlib.metadata as m, sys; "
                    "print(', '.join(f'{d} {m.version(d)}' for d in sys.argv[1:]))")
            r = subprocess.run([str(py(PEERS[peer][0])), "-c", code, *deps],
                               capture_output=True, text=True)
            if r.returncode == 0:
                line += f" (with {r.stdout.strip()})"
        lines.append(line)
    return "\n".join(lines)


def report(sizes: list[int]) -> None:
    meta = json.loads((RESULTS / "machine.json").read_text())
    head = (HERE / "doc_head.md").read_text().format(
        versions=versions(sizes), **meta)
    tail = (HERE / "doc_tail.md").read_text()
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(head.rstrip() + "\n\n" + table(sizes) + "\n\nLoading (not in the times "
                   "above):\n\n" + loads(sizes) + "\n\n" + tail.lstrip())
    print(DOC.read_text())


def machine() -> None:
    cpu = "unknown"
    with open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as fh:
        mem_gb = int(fh.readline().split()[1]) / 2**20
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(REPO), "status", "--porcelain",
                                 "--untracked-files=no"],
                                capture_output=True, text=True).stdout.strip())
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "machine.json").write_text(json.dumps({
        "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "cpu": cpu,
        "mem_gb": round(mem_gb), "python": platform.python_version(),
        "java": java.splitlines()[0] if java else "none", "kernel": platform.release(),
        "commit": sha, "uncommitted": dirty,
    }))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--setup", action="store_true", help="build the venvs and exit")
    ap.add_argument("--report", action="store_true", help="write the docs table and exit")
    ap.add_argument("--peers", nargs="+", default=list(PEERS), choices=list(PEERS))
    ap.add_argument("--queries", nargs="+", default=list(QUERIES), choices=QUERIES)
    ap.add_argument("--rows", nargs="+", type=int, default=[1_000_000, 10_000_000])
    ap.add_argument("--reps", type=int, default=5, help="releases per query (time: best of 3)")
    ap.add_argument("--budget", type=float, default=30.0,
                    help="stop repeating a query after this many seconds (at least 1 release)")
    ap.add_argument("--timeout", type=float, default=300.0,
                    help="cap per (peer, size, query) process, load included")
    args = ap.parse_args()
    if args.setup:
        setup(args.peers)
    elif args.report:
        report(args.rows)
    else:
        print(f"python {platform.python_version()}, {os.cpu_count()} cores", flush=True)
        machine()
        run(args.peers, args.rows, args.queries, args.reps, args.budget, args.timeout)


if __name__ == "__main__":
    main()
