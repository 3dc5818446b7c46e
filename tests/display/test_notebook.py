"""Notebook display: session.report() returns its text in every environment (0.1 returned ""
in Jupyter, where rich draws into the page), report(show=True) shows it once, and sessions and
scalar results have an HTML repr made only of public information, escaped."""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd
import pytest

import dpframe as dpf


def _session(**kw: Any) -> dpf.Session:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dpf.Session(2.0, 1e-6, seed=3, **kw)


@pytest.fixture
def jupyter(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make rich believe it runs in a Jupyter kernel (what it checks: IPython's shell class)."""
    import rich.console

    monkeypatch.setattr(rich.console, "_is_jupyter", lambda: True)


def test_report_returns_its_text_in_a_notebook(jupyter: None) -> None:
    s = _session(name="survey")
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    df.dp(s, bounds={"x": (0, 5)}).sum("x", epsilon=0.5)
    text = s.report()
    assert isinstance(text, str) and "survey" in text and "sum(x)" in text
    assert "\x1b[" not in text  # plain text, no colour codes


def test_report_show_prints_once_and_returns_none(capsys: pytest.CaptureFixture[str]) -> None:
    s = _session(name="survey")
    assert s.report(show=True) is None
    assert capsys.readouterr().out.count("survey") == 1


def test_session_html_shows_budget_unit_and_latest_releases() -> None:
    s = _session(name="<b>x</b>", privacy_unit="user_id")
    df = pd.DataFrame({"user_id": [1, 2, 2], "x": [1.0, 2.0, 3.0]})
    priv = df.dp(s, bounds={"x": (0, 5)}, privacy_unit="user_id", max_rows_per_unit=2)
    for _ in range(12):
        priv.count(epsilon=0.1)
    html = s._repr_html_()
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html  # escaped
    assert "60% spent" in html and "user_id" in html
    assert html.count("<tr>") == 1 + 10  # header + the 10 latest
    assert "2 earlier releases" in html
    assert "seeded" in html.lower() or "insecure" in html.lower()


def test_scalar_html_shows_value_interval_and_charge() -> None:
    s = _session()
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0] * 50})
    m = df.dp(s, bounds={"x": (0, 5)}).mean("x", epsilon=0.5, ci=0.9)
    html = m._repr_html_()
    assert format(float(m), ".8g") in html
    assert "90% interval" in html and format(m.lower, ".6g") in html
    assert "mean(x)" in html and "ε=0.5" in html
    n = df.dp(s).count(epsilon=0.5)
    assert "±" not in n._repr_html_()  # no interval asked for: none shown


def test_private_frame_shows_what_it_declares_and_nothing_of_the_data() -> None:
    df = pd.DataFrame({"user": ["SECRET-1", "u2"], "city": ["Zed", "Oslo"],
                       "x": [123456.5, 2.0]})
    priv = df.dp(_session(), bounds={"x": (0, 10)}, keys={"city": ["Oslo", "<Rome>"]},
                 privacy_unit="user", max_rows_per_unit=3)
    html = priv._repr_html_()
    for public in ("[0, 10]", "Oslo", "&lt;Rome&gt;", "privacy unit", "at most 3 rows"):
        assert public in html
    for private in ("SECRET", "Zed", "123456"):
        assert private not in html and private not in repr(priv)
    assert priv.declared()["keys"] == {"city": ["Oslo", "<Rome>"]}
