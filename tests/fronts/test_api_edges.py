"""Edges of the Python API found by a review of sessions, the local model, pandera schemas and
sampling (docs/privacy.md): each test fails on the code before its fix."""

from __future__ import annotations

import asyncio
import decimal
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pandera.pandas as pa
import pytest

import dpframe as dpf

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # seeded sessions warn

FRAME = pd.DataFrame({"g": ["a", "b"] * 50, "x": [1.0, 3.0] * 50})


def test_one_session_open_in_several_tasks_and_threads_at_once() -> None:
    """``with session:`` in two asyncio tasks (or threads) whose blocks overlap: each block
    resets the active session in its own context (leaving one raised ``ValueError`` after both
    releases were charged, and left the session active)."""
    s = dpf.Session(10.0, seed=1)

    async def task(pause: float, hold: float) -> int:
        await asyncio.sleep(pause)
        with s:
            await asyncio.sleep(hold)
            return int(FRAME.dp(bounds={"x": (0, 5)}).count(epsilon=0.1))

    async def both() -> list[int]:
        return list(await asyncio.gather(task(0, 0.05), task(0.01, 0.1)))

    assert len(asyncio.run(both())) == 2
    gate = threading.Barrier(2)

    def thread(_: int) -> int:  # both blocks open at once, then both closed
        with s:
            gate.wait()
            out = int(FRAME.dp(bounds={"x": (0, 5)}).count(epsilon=0.1))
            gate.wait()
        return out

    with ThreadPoolExecutor(2) as pool:  # an exception in a thread is raised here
        assert len(list(pool.map(thread, range(2)))) == 2
    assert s.spent[0] == pytest.approx(0.4)
    with pytest.raises(dpf.ValidationError):  # no session left active here
        FRAME.dp(bounds={"x": (0, 5)}).count(epsilon=0.1)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_process_cannot_spend_an_in_memory_budget() -> None:
    """A forked child holds a copy of an in-memory ledger: spending it would spend the budget
    twice (parent and child each spent all of it). The child is refused before any charge."""
    s = dpf.Session(1.0, seed=1)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report whether its release was refused, then exit at once
        try:
            FRAME.dp(s).count(epsilon=1.0)
            os.write(write, b"released")
        except dpf.LedgerError:
            os.write(write, b"refused")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 64) == b"refused"
    FRAME.dp(s).count(epsilon=1.0)  # the parent spends its budget as before
    assert s.spent == (1.0, 0.0)


@pytest.mark.parametrize("dtype,k", [(np.uint8, 300), (np.int8, 200), (np.int16, 40000)])
def test_k_ary_reports_stay_among_the_categories_whatever_the_input_dtype(dtype: type, k: int
                                                                          ) -> None:
    """Integer input whose dtype cannot hold the largest category (uint8 with 300): reports
    were cast back to it and wrapped around (outside the categories, a biased estimate)."""
    out = dpf.local.randomized_response(np.zeros(20_000, dtype), 0.5,
                                        categories=list(range(k)), seed=1)
    assert int(np.min(out)) >= 0 and int(np.max(out)) <= k - 1
    est = dpf.local.estimate_frequencies(out, 0.5, list(range(k)))["estimate"].iloc[0]
    # var of one estimate is about (e^eps + k - 2)^2 / ((e^eps - 1)^2 n): 5 standard errors
    e = np.exp(0.5)
    assert abs(est - 1.0) < 5 * (e + k - 2) / ((e - 1) * np.sqrt(20_000))


def test_a_negative_local_seed_is_a_typed_error() -> None:
    with pytest.raises(dpf.ValidationError, match="non-negative"):
        dpf.local.randomized_response([0, 1], 1.0, [0, 1], seed=-1)


@pytest.mark.parametrize("check", [
    pa.Check(lambda s: s < 5, name="in_range"),
    pa.Check.in_range("a", "z"),
    pa.Check.in_range(pd.Timestamp(0), pd.Timestamp(1)),
])
def test_a_pandera_range_check_without_numbers_is_a_typed_error(check: pa.Check) -> None:
    schema = pa.DataFrameSchema({"x": pa.Column(float, check)})
    s = dpf.Session(1.0, seed=1)
    with pytest.raises(dpf.ValidationError, match="numbers"):
        FRAME.dp(s, schema=schema)
    assert s.spent == (0.0, 0.0)


def test_pandera_keys_are_listed_once_and_bounds_read_by_the_number_rule() -> None:
    """A set in ``isin`` (no order: text keys came out in a hash order that changes between
    processes) and two ``isin`` checks on a column (the last won silently) are refused, as is a
    set of explicit keys; schema bounds are read as declared bounds are (np.float32(0.1) is
    1/10, not 0.10000000149)."""
    for checks in ([pa.Check.isin({"a", "b"})], [pa.Check.isin(["a"]), pa.Check.isin(["b"])]):
        with pytest.raises(dpf.ValidationError, match="isin"):
            FRAME.dp(dpf.Session(1.0, seed=1), schema=pa.DataFrameSchema(
                {"g": pa.Column(str, checks)}))
    with pytest.raises(dpf.KeysError, match="set"):
        FRAME.dp(dpf.Session(1.0, seed=1), keys={"g": {"a", "b"}})
    lo, hi = np.float32(0.1), np.float32(0.7)
    by_schema = FRAME.dp(dpf.Session(1.0, seed=1), schema=pa.DataFrameSchema(
        {"x": pa.Column(float, pa.Check.in_range(lo, hi))})).explain("sum", "x", epsilon=1)
    declared = FRAME.dp(dpf.Session(1.0, seed=1), bounds={"x": (lo, hi)}).explain(
        "sum", "x", epsilon=1)
    assert by_schema["measures"][0]["sensitivity"] == declared["measures"][0]["sensitivity"]


def test_a_dask_failure_keeps_no_trace_of_its_message() -> None:
    """A failure of the frame's own graph is a typed error naming only its type; the original
    exception (whose message may quote a value) is not kept as its context either."""
    import dask
    import dask.dataframe as dd

    df = pd.DataFrame({"u": pd.Series([1, 2, decimal.Decimal("sNaN")], dtype=object),
                       "x": [1.0, 2.0, 3.0]})
    s = dpf.Session(10.0, seed=1, privacy_unit="u")
    with warnings.catch_warnings(), dask.config.set(scheduler="sync"):
        warnings.simplefilter("ignore")
        frame = dd.from_pandas(df, npartitions=2, sort=False)  # converts object to strings
        with pytest.raises(dpf.ValidationError, match="Dask computation failed") as err:
            frame.dp(s, bounds={"x": (0, 5)}, privacy_unit="u", max_rows_per_unit=2).count(
                epsilon=1.0)
    assert err.value.__context__ is None and err.value.__cause__ is None
    assert "sNaN" not in str(err.value)
