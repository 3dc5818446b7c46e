"""The three contribution bounds at the fronts: typed errors before any charge, provenance
recording T, k and R, the dry run's sensitivities, and the CLI's ``[privacy]`` table."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.cli.spec import load_spec
from dpframe.cli.spec_errors import SpecError
from dpframe.errors import ValidationError

KEYS = {"g": ["a", "b", "c", "d", "e"]}


def _session() -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(epsilon=10.0, delta=1e-3, seed=3)


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"u": rng.integers(0, 30, 300), "g": rng.choice(list("abcde"), 300),
                         "x": rng.uniform(0, 10, 300)})


@pytest.mark.parametrize("opts", [
    {"privacy_unit": "u", "max_rows_per_group": 0},
    {"privacy_unit": "u", "max_rows_per_unit": 2, "max_rows_per_group": True},
    {"privacy_unit": "u", "max_rows_per_unit": 2, "max_rows_per_group": 1.5},
    {"privacy_unit": "u", "max_groups_per_unit": 3},            # no bound on rows
    {"max_rows_per_group": 2},                                   # no unit
])
def test_bad_bounds_are_typed_errors_before_the_charge(opts: dict[str, object]) -> None:
    s = _session()
    with pytest.raises(ValidationError):
        _frame().dp(s, bounds={"x": (0, 10)}, keys=KEYS, **opts).groupby("g").sum(
            "x", epsilon=1.0)
    assert s.spent == (0.0, 0.0)


@pytest.mark.parametrize("opts,l1,t,k,r", [
    ({"max_rows_per_unit": 4}, 40, 4, 4, 4),
    ({"max_rows_per_unit": 4, "max_groups_per_unit": 3, "max_rows_per_group": 2}, 40, 4, 3, 2),
    ({"max_groups_per_unit": 3, "max_rows_per_group": 2}, 60, 6, 3, 2),
    ({"max_rows_per_group": 2}, 20, 2, 1, 2),
])
def test_grouped_sum_sensitivity_and_provenance(opts: dict[str, int], l1: float, t: int,
                                                k: int, r: int) -> None:
    s = _session()
    p = _frame().dp(s, bounds={"x": (0, 10)}, keys=KEYS, privacy_unit="u", **opts)
    plan = p.explain("sum", "x", by="g", epsilon=1.0)
    assert plan["measures"][0]["sensitivity"] == pytest.approx(l1, rel=1e-12)
    assert (plan["max_rows_per_unit"], plan["max_groups_per_unit"],
            plan["max_rows_per_group"]) == (t, k, r)
    out = p.groupby("g").sum("x", epsilon=1.0)
    table = dpf.to_arrow(out)
    import json
    prov = json.loads(table.schema.metadata[b"dpframe"])
    assert (prov["max_rows_per_unit"], prov["max_groups_per_unit"],
            prov["max_rows_per_group"]) == (t, k, r)
    assert p.declared()["max_rows_per_group"] == opts.get("max_rows_per_group")


def test_cli_privacy_table_accepts_max_rows_per_group(tmp_path: Path) -> None:
    base = ('[release]\nname = "n"\nepsilon = 1\nledger = "b.sqlite"\n'
            '[input]\npath = "data/*.parquet"\n[bounds]\ncost = [0, 10]\n'
            '[[query]]\nname = "q"\naggregate = "count"\nepsilon = 0.5\n')
    spec = tmp_path / "s.toml"
    spec.write_text(base + '[privacy]\nunit = "person_id"\nmax_rows_per_group = 3\n'
                    'max_groups_per_unit = 2\n')
    opts = load_spec(spec).frame_options()
    assert (opts["max_rows_per_unit"], opts["max_groups_per_unit"],
            opts["max_rows_per_group"]) == (None, 2, 3)
    spec.write_text(base + '[privacy]\nunit = "person_id"\nmax_groups_per_unit = 2\n')
    with pytest.raises(SpecError):
        load_spec(spec)
