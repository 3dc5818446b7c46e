"""Continual release: one unit's rows change nothing but the noisy values (no refusal, no
dtype, no ledger entry, no charge of their own), night after night."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")


def _nights(extra: object) -> list[pd.DataFrame]:
    days = []
    for n in range(6):
        d = pd.DataFrame({"u": np.arange(8) % 4, "g": ["a", "b"] * 4,
                          "x": np.linspace(-5, 50, 8)})
        if extra is not None and n in (1, 4):  # the neighbour: odd values, an undeclared key
            d = pd.concat([d, pd.DataFrame({"u": [extra] * 3, "g": ["a", "zz", "b"],
                                            "x": [1e300, -np.inf, np.nan]})],
                          ignore_index=True)
        days.append(d)
    return days


def _run(extra: object) -> tuple[list[str], list[tuple[object, ...]], tuple[float, float]]:
    s = dpf.Session(2.0, privacy_unit="u", seed=5)
    c = dpf.Continual(s, horizon=8, epsilon=1.0, column="x", bounds=(0, 10), by="g",
                      keys=["a", "b"], privacy_unit="u", max_rows_per_unit=3)
    dtypes = []
    for day in _nights(extra):
        out = c.add(day)
        dtypes.append(str(out.dtypes.to_dict()) + str(list(out.index)))
    led = s.ledger
    return dtypes, list(zip(led["query"], led["mechanism"], led["epsilon"], strict=True)), s.spent


@pytest.mark.parametrize("extra", [99, "text", 2.5])
def test_one_unit_changes_nothing_but_noise(extra: object) -> None:
    without = _run(None)
    with_unit = _run(extra)
    assert with_unit == without
