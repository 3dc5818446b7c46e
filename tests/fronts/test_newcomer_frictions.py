"""Issue 44, item 7: what a newcomer meets first. ``help(df.dp)`` lists the options on every
front; ``dir(dpframe)`` shows the public names only; a misspelled option is a typed
``OptionError`` (still a ``TypeError``) that lists the options and the closest one; a row filter
and a custom ``agg`` function are told what to do; the CLI suggests close names too. Nothing is
charged by any of these refusals."""

from __future__ import annotations

import inspect
import pydoc
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpframe as dpf
from dpframe.fronts.aggregation import AGG_OPTIONS
from dpframe.fronts.groupby import PrivateGroupBy

DP_OPTIONS = ["session", "bounds", "keys", "schema", "privacy_unit", "max_rows_per_unit",
              "max_groups_per_unit", "max_rows_per_group", "strict"]


def _session() -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(10, seed=1)


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"origin": ["JFK", "LGA"] * 50, "delay": np.arange(100.0),
                         "uid": np.arange(100) % 7})


def _fronts(df: pd.DataFrame) -> dict[str, object]:
    import dask.dataframe as dd
    import polars as pl

    return {"pandas": df, "polars": pl.from_pandas(df), "lazy": pl.from_pandas(df).lazy(),
            "dask": dd.from_pandas(df, npartitions=2)}


def test_help_of_dp_lists_the_options_on_every_front() -> None:
    """Before: ``__call__(session=None, **options)`` and no word on the options."""
    df = _frame()
    for name, frame in _fronts(df).items():
        call = frame.dp.__call__  # type: ignore[attr-defined]
        params = list(inspect.signature(call).parameters)
        assert params[:len(DP_OPTIONS)] == DP_OPTIONS, name
        assert "options" not in params, name
        text = pydoc.render_doc(frame.dp, renderer=pydoc.plaintext)  # type: ignore[attr-defined]
        for option in DP_OPTIONS:
            assert f":param {option}:" in text, (name, option)
    polars = list(inspect.signature(_fronts(df)["polars"].dp.__call__).parameters)  # type: ignore[attr-defined]
    assert {"batch_size", "partitions", "spill_dir"} <= set(polars)
    dask = list(inspect.signature(_fronts(df)["dask"].dp.__call__).parameters)  # type: ignore[attr-defined]
    assert "split_every" in dask
    spark = pytest.importorskip("dpframe.fronts.spark")  # pyspark only: no session needed
    params = list(inspect.signature(spark.SparkDPAccessor.__call__).parameters)
    assert params[1:len(DP_OPTIONS) + 1] == DP_OPTIONS and "partitions" in params
    import pyarrow as pa

    assert list(inspect.signature(dpf.scan(pa.table({"x": [1.0]})).dp).parameters) == DP_OPTIONS


def test_dir_of_dpframe_shows_no_plumbing() -> None:
    names = dir(dpf)
    for plumbing in ("TYPE_CHECKING", "annotations", "importlib", "ModuleType"):
        assert plumbing not in names
    assert set(dpf.__all__) <= set(names) and "errors" in names
    assert all(not n.startswith("_") or n == "__version__" for n in names)


@pytest.mark.parametrize(("call", "wrong", "right"), [
    (lambda df, s: df.dp(s, max_rows=3), "max_rows", "max_rows_per_unit"),
    (lambda df, s: df.dp(s, bound={"delay": (0, 1)}), "bound", "bounds"),
    (lambda df, s: df.dp(s).count(eps=0.1), "eps", "epsilon"),
    (lambda df, s: df.dp(s, bounds={"delay": (0, 99)}).mean("delay", epsilom=0.1, ci=0.9),
     "epsilom", "epsilon"),
    (lambda df, s: df.dp(s, keys={"origin": ["JFK"]}).groupby("origin").sum(
        "delay", epsilon=0.1, mechanizm="gaussian"), "mechanizm", "mechanism"),
    (lambda df, s: df.dp(s, keys={"origin": ["JFK"]}).groupby("origin").agg(
        {"delay": "sum"}, eps=0.1), "eps", "epsilon"),
    (lambda df, s: df.dp(s, privacy_unit="uid").contribution_bounds(epsilon=0.1,
                                                                    relase="mean"),
     "relase", "release"),
    (lambda df, s: df.dp(s)["delay"].sum(epsilon=0.1, dryrun=True), "dryrun", "dry_run"),
])
def test_a_misspelled_option_is_an_option_error_with_the_close_name(call, wrong, right) -> None:
    """Before: ``TypeError: FrameBase.__init__() got an unexpected keyword argument
    'max_rows'``, ``PrivateFrame.count() got an unexpected keyword argument 'eps'``."""
    s = _session()
    with pytest.raises(dpf.OptionError) as info:
        call(_frame(), s)
    msg = str(info.value)
    assert f"no option {wrong!r}" in msg and f"did you mean {right!r}" in msg, msg
    assert "its options:" in msg and right in msg.split("its options:")[1]
    assert isinstance(info.value, dpf.DPError) and isinstance(info.value, TypeError)
    assert isinstance(info.value, dpf.ValidationError)
    assert s.spent == (0.0, 0.0) and len(s.ledger) == 0


def test_the_other_fronts_name_their_engine_options() -> None:
    s = _session()
    fronts = _fronts(_frame())
    with pytest.raises(dpf.OptionError, match="did you mean 'batch_size'"):
        fronts["polars"].dp(s, batchsize=10)  # type: ignore[attr-defined]
    with pytest.raises(dpf.OptionError, match="did you mean 'split_every'"):
        fronts["dask"].dp(s, splitevery=4)  # type: ignore[attr-defined]
    with pytest.raises(dpf.OptionError, match="did you mean 'privacy_unit'"):
        fronts["lazy"].dp(s, privacyunit="uid")  # type: ignore[attr-defined]


def test_missing_and_positional_options_list_the_options() -> None:
    s = _session()
    priv = _frame().dp(s, bounds={"delay": (0, 99)})
    with pytest.raises(dpf.OptionError, match="pass them by keyword"):
        priv.sum("delay", 0.1)
    with pytest.raises(dpf.OptionError, match=r"its options: .*epsilon"):
        priv.groupby("origin").contribution_bounds()
    assert s.spent == (0.0, 0.0)


def test_a_type_error_inside_a_method_is_not_relabelled() -> None:
    """Only calls that do not bind to the signature become OptionErrors."""
    priv = _frame().dp(_session())
    with pytest.raises(TypeError) as info:
        priv.pipe(lambda p, x: p, 1, 2)  # the user's function's own TypeError
    assert not isinstance(info.value, dpf.DPError)


def test_agg_options_match_its_signature() -> None:
    params = inspect.signature(PrivateGroupBy.agg).parameters
    assert list(AGG_OPTIONS) == [n for n, p in params.items()
                                 if n != "self" and p.kind is not p.VAR_KEYWORD]


def test_a_row_filter_is_told_to_filter_before_dp() -> None:
    """Before: "select one column by its name: priv['income']"."""
    df = _frame()
    priv = df.dp(_session())
    for mask in (priv.origin == "JFK", df.origin == "JFK", [True, False] * 50):
        with pytest.raises(dpf.ValidationError, match=r"filter the pandas frame before \.dp"):
            priv[mask]  # type: ignore[index]
    with pytest.raises(dpf.ValidationError, match="select one column by its name"):
        priv[["delay", "uid"]]  # type: ignore[index]


@pytest.mark.parametrize("spec", [
    {"delay": lambda v: v.sum()},
    {"delay": ["sum", lambda v: v.max()]},
    {"delay": np.mean},
])
def test_a_custom_agg_function_is_told_it_cannot_be_released(spec) -> None:
    """Before: ``TypeError: 'function' object is not iterable`` for a lone lambda, and
    "unknown aggregate <function <lambda> at 0x...>" in a list."""
    s = _session()
    priv = _frame().dp(s, bounds={"delay": (0, 99)}, keys={"origin": ["JFK", "LGA"]})
    with pytest.raises(dpf.ValidationError, match="custom functions cannot be released"):
        priv.groupby("origin").agg(spec, epsilon=0.1)
    assert s.spent == (0.0, 0.0)


def test_np_mean_in_agg_suggests_its_name() -> None:
    priv = _frame().dp(_session(), bounds={"delay": (0, 99)}, keys={"origin": ["JFK"]})
    with pytest.raises(dpf.ValidationError, match="did you mean 'mean'"):
        priv.groupby("origin").agg({"delay": np.mean}, epsilon=0.1)


def test_query_of_an_unknown_column_names_the_close_one() -> None:
    """``priv.query`` (what the CLI runs) checked only the query's columns, so it had no
    close name to give: "unknown column 'dealy'"."""
    priv = _frame().dp(_session(), bounds={"delay": (0, 99)})
    with pytest.raises(dpf.UnknownColumnError, match="did you mean 'delay'"):
        priv.query("sum", "dealy", epsilon=0.1)


def test_cli_spec_typos_name_the_close_name(tmp_path: Path) -> None:
    from tests.cli._support import inproc

    spec = Path(__file__).resolve().parents[2] / "examples" / "release.toml"
    text = spec.read_text()
    column = tmp_path / "column.toml"
    column.write_text(text.replace('column = "cost"', 'column = "cots"', 1))
    code, out = inproc("run", column, "--dry-run", "--ledger", tmp_path / "l.sqlite")
    assert code == 2 and "unknown column 'cots' (did you mean 'cost'?)" in out, out
    field = tmp_path / "field.toml"
    field.write_text(text.replace("epsilon = 0.2", "epsilom = 0.2", 1))
    code, out = inproc("run", field, "--dry-run", "--ledger", tmp_path / "l.sqlite")
    assert code == 2 and "unknown field 'epsilom' (did you mean 'epsilon'?)" in out, out
