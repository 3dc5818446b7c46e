"""Sparse histograms (issue 47, item 5): non-negative counts with the noisy total kept.

    python benchmarks/accuracy/bench_beyond_histogram.py [--quick]

Synthetic, seeded: 1,000 bins of which 710 are empty (71%), the other 290 holding counts
drawn once (numpy seed 47): ``skewed``, a geometric count of mean 9 (most non-empty bins
small); ``heavy``, 1 + a lognormal count (median 20); ``tiny``, 1 to 3 rows each (rare
categories). Each trial releases
``priv.histogram("x", 1000 bins, epsilon=1)`` through the pandas front twice with the same
seeded noise: raw (``postprocess=None``: geometric noise of scale 1, unbiased) and projected
(the default, ``postprocess="nonnegative"``: the closest non-negative integer counts whose
sum is the raw noisy sum). diffprivlib's rule, clipping each noisy count at 0 without keeping
the total (its ``histogram`` adds truncated geometric noise, floored at 0), is applied to the
same raw release (post-processing, so its error is measured, not modelled); the real-valued
projection (no rounding) is shown beside. RMSE per bin: over bins and trials. Target (issue
47): at most diffprivlib's figure (1.03 on the issue's data) and 0.82, the projection's
prototype there.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve()
sys.path.insert(0, os.environ.get("DPFRAME_BENCH_CHECKOUT", str(HERE.parents[2])))

import dpframe as dpf  # noqa: E402
from dpframe.core.projection import project_reals  # noqa: E402

BINS, EMPTY, EPS = 1000, 710, 1.0
TARGET, DIFFPRIVLIB_ISSUE = 0.82, 1.03
TARGETS: list[dict[str, object]] = []


def counts(shape: str) -> np.ndarray:
    """The true counts of the 1,000 bins (710 empty, seeded)."""
    rng = np.random.default_rng(47)
    full = rng.choice(BINS, BINS - EMPTY, replace=False)
    if shape == "skewed":
        c = rng.geometric(1 / 9, full.size)
    elif shape == "tiny":
        c = rng.integers(1, 4, full.size)
    else:
        c = 1 + np.round(rng.lognormal(np.log(20), 1.0, full.size)).astype(np.int64)
    out = np.zeros(BINS, dtype=np.int64)
    out[full] = c
    return out


def releases(truth: np.ndarray, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """(raw, projected) releases of ``truth`` through the pandas front, same noise each."""
    df = pd.DataFrame({"x": np.repeat(np.arange(BINS) + 0.5, truth)})
    edges = list(range(BINS + 1))
    raw, proj = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in range(trials):
            for form, out in ((None, raw), ("nonnegative", proj)):
                s = dpf.Session(1e9, seed=1000 + t)
                h = df.dp(s, bounds={"x": (0, BINS)}).histogram("x", edges, epsilon=EPS,
                                                                postprocess=form)
                out.append(h.to_numpy())
    return np.array(raw), np.array(proj)


def rmse(est: np.ndarray, truth: np.ndarray) -> float:
    return float(np.sqrt(((est - truth[None, :]) ** 2).mean()))


def measure(shape: str, trials: int) -> dict[str, float]:
    truth = counts(shape)
    raw, proj = releases(truth, trials)
    assert (proj >= 0).all() and (proj.sum(axis=1) == np.maximum(raw.sum(axis=1), 0)).all()
    reals = np.array([project_reals(r) for r in raw])
    return {"raw": rmse(raw, truth), "diffprivlib": rmse(np.maximum(raw, 0), truth),
            "projected": rmse(proj, truth), "reals": rmse(reals, truth),
            "empty": rmse(proj[:, truth == 0], truth[truth == 0]),
            "full": rmse(proj[:, truth > 0], truth[truth > 0])}


def section(quick: bool = False) -> str:
    TARGETS.clear()
    trials = 10 if quick else 100
    lines = ["## Sparse histograms: non-negative counts with the noisy total kept", "",
             f"`python benchmarks/accuracy/bench_beyond_histogram.py` ({trials} trials; issue "
             "47, item 5). 1,000 bins, 710 empty (71%), epsilon 1, "
             "`priv.histogram(\"x\", edges, epsilon=1)`: raw is `postprocess=None` (today's "
             "release), projected the new default; diffprivlib's rule (clip at 0, total not "
             "kept) applied to the same raw release. RMSE per bin.", "",
             "| data | raw (before) | diffprivlib: clip at 0 | projected, integers (default) "
             "| projected, reals | projected: empty bins / others | <= diffprivlib | <= 0.82 |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for shape in ("skewed", "heavy", "tiny"):
        r = measure(shape, trials)
        beats = r["projected"] <= r["diffprivlib"]
        met = beats and r["projected"] <= TARGET
        lines.append(f"| {shape} | {r['raw']:.2f} | {r['diffprivlib']:.2f} | "
                     f"{r['projected']:.2f} | {r['reals']:.2f} | {r['empty']:.2f} / "
                     f"{r['full']:.2f} | {'met' if beats else 'not met'} | "
                     f"{'met' if r['projected'] <= TARGET else 'not met'} |")
        TARGETS.append({"item": "47.5", "target": f"sparse histogram ({shape}), RMSE per bin "
                        f"<= {TARGET} and <= diffprivlib ({r['diffprivlib']:.2f})",
                        "measured": f"{r['projected']:.2f}", "met": met})
    lines += ["", "The projection shifts every kept count down by one shared amount and "
              "zeroes the rest, so the empty bins' positive noise is absorbed: their error "
              "falls well below the raw noise, at the cost of a downward bias on the "
              "non-empty counts (shown apart). The figure depends on the data's shape: the "
              "default beats the raw release and diffprivlib's clipping on every shape here, "
              "but reaches the issue's 0.82 on none. Releases stay int64: the kept cells are "
              "floored and the units left go to the largest noisy counts (the closest integer "
              "point; which cells get them is a free, deterministic choice), which beats the "
              "real-valued projection on the first two shapes and loses to it on tiny counts "
              "(the shape closest to the issue's, where diffprivlib's figure is about its "
              "1.03). Intervals stay the raw ones cut at 0, with the raw coverage "
              "(`tests/core/test_projection.py`)."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    print(section(ap.parse_args().quick))
