"""One accessor helper: the pandas, Dask, Polars and Spark ``.dp`` accessors are
``accessor_for(make_backend)``'s, each taking the frame's declarations plus its backend's
keyword-only knobs, refusing a misspelled one before anything is built or charged."""

from __future__ import annotations

import importlib
import inspect

import pandas as pd
import pytest

import dpframe as dpf
from dpframe.fronts.accessor import FrameAccessor

DECLARATIONS = ["session", "bounds", "keys", "schema", "privacy_unit", "max_rows_per_unit",
                "max_groups_per_unit", "max_rows_per_group", "strict"]
#: module, accessor, the backend's knobs
FRONTS = [("dpframe.fronts.accessor", "DPAccessor", []),
          ("dpframe.fronts.dask", "DaskDPAccessor", ["split_every", "shuffle_method"]),
          ("dpframe.fronts.polars", "PolarsDPNamespace",
           ["batch_size", "progress", "partition_rows", "partitions", "spill_dir"]),
          ("dpframe.fronts.spark", "SparkDPAccessor", ["partitions"])]


@pytest.mark.parametrize(("module", "name", "knobs"), FRONTS)
def test_every_accessor_is_made_by_accessor_for(module: str, name: str,
                                                knobs: list[str]) -> None:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        pytest.skip(f"{module} needs its engine")
    cls = getattr(mod, name)
    assert issubclass(cls, FrameAccessor)
    params = list(inspect.signature(cls.__call__).parameters)
    assert params == ["self", *DECLARATIONS, *knobs]
    doc = cls.__call__.__doc__ or ""
    assert all(f":param {k}:" in doc for k in knobs)


def test_the_pandas_accessor_builds_a_frame_and_refuses_a_misspelled_option() -> None:
    s = dpf.Session(1.0, seed=1)
    df = pd.DataFrame({"x": [1.0, 2.0]})
    priv = df.dp(s, bounds={"x": (0, 3)})
    assert isinstance(priv, dpf.PrivateFrame) and priv.declared()["bounds"] == {"x": (0, 3)}
    with pytest.raises(dpf.OptionError, match=r"no option 'bound' \(did you mean 'bounds'\?\)"):
        df.dp(s, bound={"x": (0, 3)})
    assert df.dp.local is not None  # the pandas accessor's own addition
    assert s.spent == (0.0, 0.0)


def test_a_knob_goes_to_the_backend_and_a_misspelled_one_is_refused() -> None:
    dd = pytest.importorskip("dask.dataframe")
    from dpframe.fronts.dask import private_frame

    s = dpf.Session(1.0, seed=1)
    ddf = dd.from_pandas(pd.DataFrame({"x": [1.0, 2.0]}), npartitions=1)
    backend = private_frame(ddf, s, split_every=4)._backend
    assert backend.split_every == 4  # type: ignore[attr-defined]
    with pytest.raises(dpf.OptionError, match=r"'split_evry' \(did you mean 'split_every'\?\)"):
        ddf.dp(s, split_evry=4)
    with pytest.raises(dpf.ValidationError):
        private_frame(ddf, s, split_every=1)  # the backend's own check
