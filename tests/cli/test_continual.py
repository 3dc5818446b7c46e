"""``dpframe run`` on continual queries: one charge for the horizon, nights, replays, gaps."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pandas as pd
import pytest

import dpframe as dpf
from dpframe.cli.continual import run_continual
from dpframe.cli.spec import load_spec
from tests.cli._support import entries, inproc

ROOT = Path(__file__).resolve().parents[2]

SPEC = """
[release]
name = "flights"
epsilon = 2.0
ledger = "budget.sqlite"
seed = 3

[input]
path = "day.parquet"

[bounds]
delay = [0, 60]

[keys]
carrier = ["AA", "UA", "DL"]

[output]
dir = "out"

[[query]]
name = "flights_so_far"
aggregate = "count"
by = "carrier"
epsilon = 1.0
continual = {{ horizon = 365{extra} }}
"""


def _setup(tmp_path: Path, extra: str = "") -> Path:
    pd.DataFrame({"carrier": ["AA", "UA", "AA", "DL"], "delay": [5.0, 100.0, -3.0, 20.0]}
                 ).to_parquet(tmp_path / "day.parquet")
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.format(extra=extra))
    return spec


def _spent(tmp_path: Path) -> float:
    rows = entries(tmp_path / "budget.sqlite")
    s = dpf.Session(2.0, ledger=tmp_path / "budget.sqlite")
    try:
        assert len(s.ledger_store.entries()) == len(rows)
        return s.spent[0]
    finally:
        s.close()


def _values(tmp_path: Path) -> list[int]:
    return pd.read_parquet(tmp_path / "out" / "flights_so_far.parquet")["count"].tolist()


@pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")
def test_nights_charge_once_and_replay(tmp_path: Path) -> None:
    spec = _setup(tmp_path, ", night = 1")
    code, out = inproc("run", spec, "--dry-run")
    assert code == 0 and "charges its epsilon once" in out
    assert not (tmp_path / "budget.sqlite").exists()
    code, out = inproc("run", spec)
    assert code == 0, out
    first = _values(tmp_path)
    assert _spent(tmp_path) == 1.0 and (tmp_path / "budget.flights_so_far.state.json").exists()
    n = len(entries(tmp_path / "budget.sqlite"))
    code, out = inproc("run", spec, "--json")  # the same night again: replayed
    doc = json.loads(out)
    assert code == 0 and doc["queries"][0]["replayed"] and not doc["queries"][0]["charged"]
    assert _values(tmp_path) == first and len(entries(tmp_path / "budget.sqlite")) == n
    spec.write_text(SPEC.format(extra=", night = 2"))
    code, out = inproc("run", spec)
    assert code == 0 and "night 2 of 365 (no charge)" in out
    assert _spent(tmp_path) == 1.0 and len(entries(tmp_path / "budget.sqlite")) == n + 1


@pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")
def test_skipped_night_and_horizon_are_refused_before_anything(tmp_path: Path) -> None:
    spec = _setup(tmp_path, ", night = 3")
    code, out = inproc("run", spec)
    assert code != 0 and "skips nights 1 to 2" in out
    assert entries(tmp_path / "budget.sqlite") == [] and not (tmp_path / "out").exists()
    spec.write_text(SPEC.format(extra=", night = 400"))
    code, out = inproc("run", spec)
    assert code != 0 and "past the horizon" in out and entries(tmp_path / "budget.sqlite") == []
    spec.write_text(SPEC.format(extra=", night = 3, fill_gaps = true"))
    code, out = inproc("run", spec)
    assert code == 0 and _spent(tmp_path) == 1.0
    assert len(entries(tmp_path / "budget.sqlite")) == 4  # the charge and 3 nights


@pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")
def test_start_date_numbers_the_nights(tmp_path: Path) -> None:
    spec = load_spec(_setup(tmp_path, ", start = 2027-01-01"))
    ledger, out = tmp_path / "budget.sqlite", tmp_path / "out"
    day = datetime.date(2027, 1, 1)
    assert run_continual(spec, ledger, out, dry_run=False, today=day)[0].night == 1
    again = run_continual(spec, ledger, out, dry_run=False, today=day)[0]
    assert again.night == 1 and again.replayed
    nxt = run_continual(spec, ledger, out, dry_run=False, today=day + datetime.timedelta(1))
    assert nxt[0].night == 2 and not nxt[0].charged
    with pytest.raises(dpf.ContinualError):
        run_continual(spec, ledger, out, dry_run=False, today=day + datetime.timedelta(5))


def test_continual_and_one_off_queries_do_not_mix(tmp_path: Path) -> None:
    spec = _setup(tmp_path)
    spec.write_text(spec.read_text() + '\n[[query]]\nname = "n"\naggregate = "count"\n'
                    'epsilon = 0.1\n')
    code, out = inproc("run", spec)
    assert code != 0 and "all continual or none" in out
    spec.write_text(SPEC.format(extra="").replace('aggregate = "count"',
                                                  'aggregate = "mean"\ncolumn = "delay"'))
    code, out = inproc("run", spec)
    assert code != 0 and "count or sum" in out


def test_a_run_id_is_refused_on_continual_queries(tmp_path: Path) -> None:
    spec = _setup(tmp_path)
    code, out = inproc("run", spec, "--run-id", "nightly")
    assert code == 2 and "run id does not apply" in out
    assert not (tmp_path / "budget.sqlite").exists() or _spent(tmp_path) == 0.0


def test_example_spec_parses() -> None:
    spec = load_spec(ROOT / "examples" / "continual.toml")
    assert all(q.continual and q.continual["horizon"] == 365 for q in spec.queries)
