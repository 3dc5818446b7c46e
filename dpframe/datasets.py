"""Built-in synthetic data for demos, docs and benchmarks (no real person is in it).

:func:`people` draws a population with plausible marginals: an age pyramid shaped like the
United States', states weighted by population, a long tail of city names (so DP key selection
has rare keys to suppress), incomes that depend on age (zero for children and some adults,
log-normal otherwise), and yearly doctor visits that rise with age.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: The 50 states and DC with their population in millions (2020 census, rounded): the public
#: key list of the demo's groupby.
STATE_POPULATION: dict[str, float] = {
    "AL": 5.02, "AK": 0.73, "AZ": 7.15, "AR": 3.01, "CA": 39.54, "CO": 5.77, "CT": 3.61,
    "DE": 0.99, "DC": 0.69, "FL": 21.54, "GA": 10.71, "HI": 1.46, "ID": 1.84, "IL": 12.81,
    "IN": 6.79, "IA": 3.19, "KS": 2.94, "KY": 4.51, "LA": 4.66, "ME": 1.36, "MD": 6.18,
    "MA": 7.03, "MI": 10.08, "MN": 5.71, "MS": 2.96, "MO": 6.15, "MT": 1.08, "NE": 1.96,
    "NV": 3.10, "NH": 1.38, "NJ": 9.29, "NM": 2.12, "NY": 20.20, "NC": 10.44, "ND": 0.78,
    "OH": 11.80, "OK": 3.96, "OR": 4.24, "PA": 13.00, "RI": 1.10, "SC": 5.12, "SD": 0.89,
    "TN": 6.91, "TX": 29.15, "UT": 3.27, "VT": 0.64, "VA": 8.63, "WA": 7.71, "WV": 1.79,
    "WI": 5.89, "WY": 0.58,
}
STATES: list[str] = sorted(STATE_POPULATION)

#: Census regions of the states (public keys of the examples).
REGIONS: dict[str, list[str]] = {
    "Northeast": ["CT", "ME", "MA", "NH", "NJ", "NY", "PA", "RI", "VT"],
    "Midwest": ["IL", "IN", "IA", "KS", "MI", "MN", "MO", "NE", "ND", "OH", "SD", "WI"],
    "South": ["AL", "AR", "DE", "DC", "FL", "GA", "KY", "LA", "MD", "MS", "NC", "OK", "SC",
              "TN", "TX", "VA", "WV"],
    "West": ["AK", "AZ", "CA", "CO", "HI", "ID", "MT", "NV", "NM", "OR", "UT", "WA", "WY"],
}
_REGION_OF = {st: r for r, sts in REGIONS.items() for st in sts}

# share of the population in each 5-year age band 0-4, 5-9, ..., 95-99 (US-like pyramid)
_AGE_BANDS = np.array([6.0, 6.2, 6.4, 6.5, 6.6, 6.9, 7.0, 6.7, 6.3, 6.1, 6.3, 6.4, 6.2, 5.4,
                       4.4, 3.1, 2.0, 1.2, 0.6, 0.2])

_PREFIXES = ["Spring", "Oak", "River", "Lake", "Fair", "Green", "Maple", "Cedar", "Pine", "Mill",
             "Rock", "Clear", "Brook", "Glen", "Ash", "Elm", "Bay", "Silver", "Red", "Stone"]
_SUFFIXES = ["field", "ville", "ton", "wood", "view", "dale", "port", "burg", "ford", "haven",
             "side", "mont"]
CITIES: list[str] = [d + p + s for d in ("", "North ", "South ", "East ", "West ")
                     for p in _PREFIXES for s in _SUFFIXES]


def people(n: int = 100_000, seed: int = 0) -> pd.DataFrame:
    """``n`` synthetic people: ``person_id``, ``age``, ``state``, ``region``, ``city``,
    ``income``, ``visits``. Deterministic for a given ``seed``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError("n must be a positive integer")
    rng = np.random.default_rng(seed)
    band = rng.choice(len(_AGE_BANDS), size=n, p=_AGE_BANDS / _AGE_BANDS.sum())
    age = (band * 5 + rng.integers(0, 5, size=n)).astype(np.int64)

    pop = np.array([STATE_POPULATION[s] for s in STATES])
    state = np.asarray(STATES, dtype=object)[rng.choice(len(STATES), size=n, p=pop / pop.sum())]

    ranks = np.arange(1, len(CITIES) + 1, dtype=np.float64)
    city_p = ranks ** -1.1
    city_order = rng.permutation(len(CITIES))
    city = np.asarray(CITIES, dtype=object)[city_order[rng.choice(len(CITIES), size=n,
                                                                  p=city_p / city_p.sum())]]

    # income: none under 16; a share of adults with none (students, carers, retired without
    # pension); log-normal otherwise, with a median that peaks in the 45-55 band
    peak = 52_000 * np.exp(-(((age - 50) / 22.0) ** 2))
    median = np.maximum(peak, 14_000)
    income = median * rng.lognormal(0.0, 0.75, size=n)
    no_income = (age < 16) | (rng.random(n) < np.where(age >= 67, 0.10, 0.07))
    income = np.round(np.where(no_income, 0.0, income), 2)

    # yearly doctor visits: negative binomial whose mean grows with age
    mean_visits = 1.5 + 0.06 * np.maximum(age - 20, 0) + np.where(age < 5, 2.0, 0.0)
    shape = 1.5
    visits = rng.negative_binomial(shape, shape / (shape + mean_visits)).astype(np.int64)

    return pd.DataFrame({
        "person_id": np.arange(1, n + 1, dtype=np.int64),
        "age": age,
        "state": pd.array(state, dtype="str"),
        "region": pd.array(pd.Series(state).map(_REGION_OF).to_numpy(), dtype="str"),
        "city": pd.array(city, dtype="str"),
        "income": income,
        "visits": visits,
    })


def visit_events(n_people: int = 10_000, seed: int = 0, *, first_id: int = 1) -> pd.DataFrame:
    """A log of doctor visits, one row per visit, for ``n_people`` synthetic people (about
    three visits each; some people have many): ``visit_id``, ``person_id`` (the natural privacy
    unit), ``day`` (1-365), ``age``, ``state``, ``region``, ``city``, ``cost`` (dollars)."""
    ppl = people(n_people, seed)
    ppl["person_id"] += first_id - 1
    rng = np.random.default_rng([seed, 1])
    reps = ppl["visits"].to_numpy()
    ev = ppl.loc[ppl.index.repeat(reps), ["person_id", "age", "state", "region", "city"]]
    ev = ev.reset_index(drop=True)
    n = len(ev)
    cost = np.round(rng.lognormal(np.log(140.0), 0.9, size=n), 2)
    ev.insert(0, "visit_id", np.arange(1, n + 1, dtype=np.int64))
    ev.insert(2, "day", rng.integers(1, 366, size=n).astype(np.int64))
    ev["cost"] = cost
    return ev


#: The built-in synthetic datasets, by name (``dpframe generate``, ``[input] generate``).
DATASETS = ("people", "visits")


def synthetic(dataset: str, n_people: int, seed: int = 0) -> pd.DataFrame:
    """The built-in synthetic ``dataset`` (``"people"``: :func:`people`; ``"visits"``:
    :func:`visit_events`) for ``n_people`` people, deterministic for a given ``seed``."""
    if dataset == "people":
        return people(n_people, seed)
    if dataset == "visits":
        return visit_events(n_people, seed)
    raise ValueError(f"dataset must be one of {', '.join(DATASETS)}")


__all__ = ["CITIES", "DATASETS", "REGIONS", "STATES", "STATE_POPULATION", "people", "synthetic",
           "visit_events"]
