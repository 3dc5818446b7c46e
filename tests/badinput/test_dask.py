"""Bad input through the Dask accessor (``dd.from_pandas(frame, npartitions=2).dp(...)``), with
Dask's default local scheduler (no distributed client: every refusal comes before any task)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

dd = pytest.importorskip("dask.dataframe")

import dpframe as dpf  # noqa: E402
import dpframe.fronts.dask  # noqa: E402  (registers ddf.dp)

from ._harness import (  # noqa: E402
    BOUNDS,
    KEYS,
    SECRET_TEXT,
    Case,
    PrivacyUnitError,
    expect_refusal,
    expect_release,
    frame,
    ledger_session,
    params,
)

V = dpf.ValidationError


def ddp(s: dpf.Session, **kw: Any) -> Any:
    opts: dict[str, Any] = {"bounds": BOUNDS, "keys": KEYS}
    opts.update(kw)
    return dd.from_pandas(frame(), npartitions=2).dp(s, **opts)


DASK_CASES = [
    Case("dask-bad-epsilon", lambda s: ddp(s).sum("x", epsilon=float("nan")), V),
    Case("dask-unknown-column", lambda s: ddp(s).mean("nope", epsilon=1), V),
    Case("dask-column-list", lambda s: ddp(s).sum(["x"], epsilon=1), V),
    Case("dask-missing-bounds", lambda s: ddp(s, bounds={}).groupby("g").sum("x", epsilon=1),
         dpf.BoundsError),
    Case("dask-undeclared-keys", lambda s: ddp(s, keys={}).groupby("g").count(epsilon=1),
         dpf.KeysError),
    Case("dask-text-keys-for-int-column",
         lambda s: ddp(s, keys={"k": ["1", "2"]}).groupby("k").count(epsilon=1), dpf.KeysError),
    Case("dask-private-keys-no-delta",
         lambda s: ddp(s).groupby("g", keys="private").count(epsilon=1), V),
    Case("dask-max_rows-without-unit", lambda s: ddp(s, max_rows_per_unit=3).count(epsilon=1),
         V),
    Case("dask-text-column-sum", lambda s: ddp(s, bounds={"g": (0, 1)}).sum("g", epsilon=1), V),
    Case("dask-bad-bins", lambda s: ddp(s).histogram("x", [], epsilon=1), V),
    Case("dask-budget-exceeded",
         lambda s: ddp(s, privacy_unit="u", max_rows_per_unit=2).groupby("g").mean(
             "x", epsilon=50), dpf.BudgetExceededError),
]


@pytest.mark.parametrize("case", params(DASK_CASES))
def test_dask_bad_input(case: Case, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                        capsys: pytest.CaptureFixture[str]) -> None:
    session = ledger_session(tmp_path)
    try:
        expect_refusal(case, session, tmp_path / "budget.sqlite", caplog, capsys)
    finally:
        session.close()


def test_dask_unit_mismatch(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                            capsys: pytest.CaptureFixture[str]) -> None:
    session = ledger_session(tmp_path, privacy_unit="u")
    case = Case("dask-unit-mismatch", lambda s: ddp(s).count(epsilon=1), PrivacyUnitError)
    try:
        expect_refusal(case, session, tmp_path / "budget.sqlite", caplog, capsys)
    finally:
        session.close()


def test_dask_object_key_column_with_planted_values_releases(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Undeclared keys (the planted one, a missing one) are dropped, never released or
    quoted: the declared keys' counts are exact at epsilon 1e9."""
    session = ledger_session(tmp_path, epsilon=1e10)
    try:
        out = expect_release(lambda: ddp(session).groupby("g").count(epsilon=1e9), session,
                             tmp_path / "budget.sqlite", caplog, capsys)
        assert list(out.index) == ["a", "b"]
        assert SECRET_TEXT not in list(out.index)
        assert list(out.to_numpy()) == [2, 2]
    finally:
        session.close()
