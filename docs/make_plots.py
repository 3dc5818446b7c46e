"""Generate the documentation's figures into docs/img/ (run before ``mkdocs build``).

    python docs/make_plots.py

A seeded demo session on dpframe's built-in synthetic people (no real person is in it). Seeded
noise is deterministic and insecure: fine for pictures, never for a publication.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout's dpframe, installed or not

import matplotlib.pyplot as plt  # noqa: E402

import dpframe as dpf  # noqa: E402
from dpframe.datasets import REGIONS, people  # noqa: E402
from dpframe.plot import plot_budget, plot_grouped, plot_histogram  # noqa: E402

OUT = ROOT / "docs" / "img"
AGE_BINS = list(range(0, 101, 10))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    df = people(20_000, seed=2026)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seeded session's InsecureSeedWarning
        session = dpf.Session(epsilon=1.0, delta=1e-6, seed=2026)
    priv = df.dp(session, bounds={"age": (0, 100), "income": (0, 250_000)},
                 keys={"region": list(REGIONS)})

    priv.count(epsilon=0.05)
    hist = priv.histogram("age", bins=AGE_BINS, right=False, epsilon=0.1, ci=0.95)
    by_region = priv.groupby("region").mean("income", epsilon=0.2, ci=0.95)
    priv.groupby("region").sum("income", epsilon=0.2)
    priv.max("age", epsilon=0.05)
    priv.groupby("region").count(epsilon=0.1, delta=1e-7, mechanism="gaussian")

    fig, ax = plt.subplots(figsize=(7, 4))
    plot_histogram(hist, ax=ax, title="Age of 20,000 synthetic people (ε = 0.1)")
    fig.tight_layout()
    fig.savefig(OUT / "histogram.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    plot_grouped(by_region, ax=ax, title="Mean income by region (ε = 0.2)")
    ax.set_ylabel("mean income ($)")
    fig.tight_layout()
    fig.savefig(OUT / "grouped.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    plot_budget(session, ax=ax, annotate=True)
    fig.tight_layout()
    fig.savefig(OUT / "budget.png", dpi=110)
    plt.close(fig)

    for name in ("histogram.png", "grouped.png", "budget.png"):
        print(OUT / name)


if __name__ == "__main__":
    main()
