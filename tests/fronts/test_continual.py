"""dpf.Continual: one charge for the horizon, nights recorded in the ledger, replays, resumes."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf

pytestmark = pytest.mark.filterwarnings("ignore::dpframe.core.noise.rng.InsecureSeedWarning")


def _day(n: int = 50) -> pd.DataFrame:
    return pd.DataFrame({"x": np.linspace(0, 20, n), "g": ["a", "b"] * (n // 2),
                         "u": np.arange(n) % 5})


def _entries(s: dpf.Session) -> int:
    return len(s.ledger_store.entries())


def test_one_charge_covers_the_horizon() -> None:
    s = dpf.Session(2.0, seed=1)
    c = dpf.Continual(s, horizon=365, epsilon=1.0)
    assert s.spent == (1.0, 0.0)
    for night in range(1, 21):
        r = c.add(_day())
        assert isinstance(r, dpf.DPInt) and r.lower is not None and r.upper is not None
        assert r.lower <= r <= r.upper
        assert r.attrs["dp"]["night"] == night
    assert s.spent == (1.0, 0.0) and c.nights == 20
    led = s.ledger
    assert list(led["epsilon"]) == [1.0] + [0.0] * 20
    nodes = s.ledger_store.entries()[-1]["details"]["nodes"]
    assert [n[:2] for n in nodes] == [[0, 19], [1, 9], [2, 4]]  # night 20 completes 3 nodes


def test_accuracy_of_the_running_count() -> None:
    s = dpf.Session(1e6, seed=3)
    c = dpf.Continual(s, horizon=365, epsilon=1.0)
    errors = [int(c.add(_day(40))) - 40 * t for t in range(1, 41)]
    sd = c.result().attrs["dp"]["std"]
    assert sd == pytest.approx(np.sqrt(161.83 * (8 / 15 + 32 / 63)), rel=1e-3)  # 2 blocks
    assert np.sqrt(np.mean(np.square(errors))) < 3 * sd


def test_rerun_of_a_night_replays_it() -> None:
    s = dpf.Session(2.0, seed=1)
    c = dpf.Continual(s, horizon=30, epsilon=1.0)
    first = [c.add(_day()) for _ in range(3)]
    n, state = _entries(s), s.rng.words(1)
    again = c.add(_day(10), night=2)  # the data is not read: the night is replayed
    assert again == first[1] and again.lower == first[1].lower and _entries(s) == n
    s2 = dpf.Session(2.0, seed=1)
    c2 = dpf.Continual(s2, horizon=30, epsilon=1.0)
    _ = [c2.add(_day()) for _ in range(3)]
    c2.add(_day(10), night=2)
    assert s2.rng.words(1) == state  # nothing drawn by the replay


def test_skipped_night_is_refused_or_filled() -> None:
    s = dpf.Session(2.0, seed=1)
    c = dpf.Continual(s, horizon=30, epsilon=1.0)
    c.add(_day())
    n = _entries(s)
    with pytest.raises(dpf.ContinualError):
        c.add(_day(), night=4)
    assert _entries(s) == n and c.nights == 1
    c.add(_day(), night=4, fill_gaps=True)
    assert c.nights == 4 and _entries(s) == n + 3 and s.spent == (1.0, 0.0)


def test_past_the_horizon_is_refused_before_anything() -> None:
    s = dpf.Session(2.0, seed=1)
    c = dpf.Continual(s, horizon=2, epsilon=1.0)
    c.add(_day())
    c.add(_day())
    n = _entries(s)
    with pytest.raises(dpf.HorizonError):
        c.add(_day())
    with pytest.raises(dpf.HorizonError):
        c.add(_day(), night=9, fill_gaps=True)
    assert _entries(s) == n and s.spent == (1.0, 0.0)


def test_refusals_come_before_the_charge() -> None:
    s = dpf.Session(1.0, seed=1)
    for kwargs, err in [({"column": "x"}, dpf.BoundsError),
                        ({"bounds": (0, 1)}, dpf.ValidationError),
                        ({"keys": ["a"]}, dpf.ValidationError),
                        ({"privacy_unit": "u"}, dpf.ValidationError),
                        ({"horizon": 0}, dpf.ValidationError),
                        ({"column": "x", "bounds": (1, 1)}, dpf.BoundsError),
                        ({"column": "x", "bounds": (0, 1e60)}, dpf.BoundsError),
                        ({"epsilon": 2.0}, dpf.BudgetExceededError)]:
        args = {"horizon": 10, "epsilon": 0.5, **kwargs}
        with pytest.raises(err):
            dpf.Continual(s, **args)
        assert s.spent == (0.0, 0.0) and _entries(s) == 0
    c = dpf.Continual(s, horizon=10, epsilon=0.5, column="x", bounds=(0, 10))
    n = _entries(s)
    with pytest.raises(dpf.UnknownColumnError):
        c.add(pd.DataFrame({"y": [1.0]}))
    assert _entries(s) == n and c.nights == 0
    unit = dpf.Session(1.0, privacy_unit="u", seed=1)
    with pytest.raises(dpf.PrivacyUnitError):
        dpf.Continual(unit, horizon=10, epsilon=0.5)
    assert unit.spent == (0.0, 0.0)


def test_running_sum_with_public_keys() -> None:
    s = dpf.Session(1e6, seed=2)
    c = dpf.Continual(s, horizon=8, epsilon=1e5, column="x", bounds=(0, 10),
                      keys=pd.Series(["a", "b", "c"], name="g"))
    day = pd.DataFrame({"g": ["a", "b", "a", "z"], "x": [1.0, 2.0, 30.0, 4.0]})
    for _ in range(3):
        r = c.add(day)
    assert isinstance(r, pd.DataFrame) and list(r.columns) == ["sum", "lower", "upper"]
    assert list(r.index) == ["a", "b", "c"] and r.index.name == "g"
    assert r["sum"].to_numpy() == pytest.approx([33.0, 6.0, 0.0], abs=0.01)  # 30 clamped to 10


def test_unit_rows_are_bounded_over_the_horizon() -> None:
    s = dpf.Session(1e6, privacy_unit="u", seed=2)
    c = dpf.Continual(s, horizon=16, epsilon=1e5, privacy_unit="u", max_rows_per_unit=3)
    day = pd.DataFrame({"u": [1, 1, 2]})  # unit 1: 2 rows a night, unit 2: 1 row
    got = [int(c.add(day)) for _ in range(4)]
    assert got == [3, 5, 6, 6]  # each unit keeps 3 rows over the whole horizon


def test_resume_in_a_new_session_continues_the_tree(tmp_path: Path) -> None:
    ledger, state = tmp_path / "budget.sqlite", tmp_path / "flights.state"
    s = dpf.Session(2.0, ledger=ledger, seed=1)
    c = dpf.Continual(s, horizon=365, epsilon=1.0, name="flights", state=state)
    values = [c.add(_day()) for _ in range(5)]
    s.close()
    s2 = dpf.Session(2.0, ledger=ledger, seed=2)
    c2 = dpf.Continual(s2, horizon=365, epsilon=1.0, name="flights", state=state)
    assert s2.spent == (1.0, 0.0) and c2.nights == 5
    assert [c2.result(t) for t in range(1, 6)] == values
    assert c2.add(_day(), night=3) == values[2]  # replayed from the ledger
    six = c2.add(_day())
    assert six.attrs["dp"]["night"] == 6 and s2.spent == (1.0, 0.0)
    nodes = s2.ledger_store.entries()[-1]["details"]["nodes"]
    assert [n[:2] for n in nodes] == [[0, 5], [1, 2]]  # night 6 closes the node of nights 5-6
    s2.close()
    # other parameters, or no state file: refused, nothing charged
    s3 = dpf.Session(2.0, ledger=ledger)
    with pytest.raises(dpf.ContinualError):
        dpf.Continual(s3, horizon=100, epsilon=1.0, name="flights", state=state)
    with pytest.raises(dpf.ContinualError):
        dpf.Continual(s3, horizon=365, epsilon=1.0, name="flights")
    assert s3.spent == (1.0, 0.0)
    s3.close()


def test_nodes_are_covered_by_the_hash_chain(tmp_path: Path) -> None:
    import sqlite3

    ledger = tmp_path / "budget.sqlite"
    s = dpf.Session(2.0, ledger=ledger, seed=1)
    c = dpf.Continual(s, horizon=10, epsilon=1.0, name="n")
    c.add(_day())
    s.close()
    with sqlite3.connect(ledger) as conn:
        conn.execute("UPDATE outcomes SET details = replace(details, '\"nodes\"', '\"nodez\"')")
    with pytest.raises(dpf.LedgerError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dpf.Session(2.0, ledger=ledger).ledger_store.verify()


def test_a_scan_night_runs_on_the_arrow_backend(tmp_path: Path) -> None:
    """The same nights as pandas frames and as dpf.scan files: the same releases."""
    days = [pd.DataFrame({"g": ["a", "b", "a", "c"][: 2 + n % 3], "x": [1.0, 2.5, 30.0, 4.0][
        : 2 + n % 3], "u": [1, 1, 2, 3][: 2 + n % 3]}) for n in range(5)]
    for n, d in enumerate(days):
        d.to_parquet(tmp_path / f"day{n}.parquet")
    for unit in (None, "u"):
        opts: dict[str, object] = {"column": "x", "bounds": (0, 10), "by": "g",
                                   "keys": ["a", "b"]}
        if unit:
            opts.update(privacy_unit="u", max_rows_per_unit=2)
        a = dpf.Continual(dpf.Session(2.0, seed=4, privacy_unit=unit), 8, 1.0, **opts)
        b = dpf.Continual(dpf.Session(2.0, seed=4, privacy_unit=unit), 8, 1.0, **opts)
        for n, d in enumerate(days):
            ra = a.add(d)
            rb = b.add(dpf.scan(tmp_path / f"day{n}.parquet"))
            pd.testing.assert_frame_equal(ra, rb)


def test_change_one_doubles_the_node_scale_and_integer_sums_are_ints() -> None:
    add = dpf.Continual(dpf.Session(2.0, seed=1), horizon=365, epsilon=1.0)
    one = dpf.Continual(dpf.Session(2.0, neighbouring="change_one", seed=1), horizon=365,
                        epsilon=1.0)
    assert add.spec.noise.int_scale == 9 and one.spec.noise.int_scale == 18
    s = dpf.Session(2.0, seed=1)
    c = dpf.Continual(s, horizon=4, epsilon=1.0, column="n", bounds=(0, 5), integer=True)
    assert isinstance(c.add(pd.DataFrame({"n": [1, 2, 9]})), dpf.DPInt)
    n = _entries(s)
    with pytest.raises(dpf.ValidationError):
        c.add(pd.DataFrame({"n": [1.5]}))  # integer=True on a float column: refused
    with pytest.raises(dpf.ValidationError):
        c.add(pd.DataFrame({"n": ["a"]}))
    assert _entries(s) == n and c.nights == 1


def test_a_stop_between_the_state_file_and_the_ledger_resumes_from_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The state file is written before the night is charged; a process stopped before the
    night's nodes are recorded resumes from the state before it (the night is added once)."""
    ledger, state = tmp_path / "budget.sqlite", tmp_path / "s.state"
    s = dpf.Session(1e5, ledger=ledger, seed=1)
    c = dpf.Continual(s, horizon=30, epsilon=1e4, name="n", state=state)
    c.add(pd.DataFrame({"x": range(10)}))

    def stop(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(dpf.Continual, "_release_night", stop)
    with pytest.raises(KeyboardInterrupt):
        c.add(pd.DataFrame({"x": range(5)}))
    monkeypatch.undo()
    s.close()
    s2 = dpf.Session(1e5, ledger=ledger, seed=2)
    c2 = dpf.Continual(s2, horizon=30, epsilon=1e4, name="n", state=state)
    assert c2.nights == 1
    assert int(c2.add(pd.DataFrame({"x": range(5)}))) == 15  # night 2 counted once
    s2.close()


def test_an_unwritable_state_file_refuses_before_the_charge(tmp_path: Path) -> None:
    s = dpf.Session(2.0, ledger=tmp_path / "budget.sqlite", seed=1)
    c = dpf.Continual(s, horizon=10, epsilon=1.0, name="n",
                      state=tmp_path / "missing-folder" / "s.state", charge_on_first_add=True)
    with pytest.raises(dpf.OutputError):
        c.add(pd.DataFrame({"x": [1]}))
    assert s.spent == (0.0, 0.0) and c.nights == 0
    s.close()


def test_one_unit_spelled_three_ways_is_one_unit() -> None:
    s = dpf.Session(1e6, privacy_unit="u", seed=2)
    c = dpf.Continual(s, horizon=4, epsilon=1e5, privacy_unit="u", max_rows_per_unit=2)
    day = pd.DataFrame({"u": pd.Series([1, 1.0, True, None], dtype=object)})
    assert int(c.add(day)) == 2  # 1, 1.0 and True: one unit, at most 2 rows; None dropped
