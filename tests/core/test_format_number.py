"""One number formatter (core.numbers.format_number) with three styles: messages, display text
(notebooks, terminal tables) and CLI tables; the display and CLI modules use it, not copies."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dpframe.cli import render
from dpframe.core.numbers import format_number
from dpframe.display import html, text


@pytest.mark.parametrize(("x", "message", "display", "table"), [
    (None, None, "", "—"),
    (0, "0", "0", "0"),
    (1234567, "1.23457e+06", "1.23457e+06", "1,234,567"),
    (1234567.891, "1.23457e+06", "1.23457e+06", "1,234,568"),
    (0.123456789, "0.123457", "0.123457", "0.1235"),
    (Fraction(1, 3), "0.333333", "0.333333", "0.3333"),
    (math.nan, "nan", "nan", "—"),
    (math.inf, "inf", "inf", "inf"),
    ("abc", None, "abc", "abc"),
])
def test_styles(x: object, message: str | None, display: str, table: str) -> None:
    if message is not None:
        assert format_number(x, style="message") == message == format_number(x)
    assert format_number(x, style="display") == display
    assert format_number(x, style="table") == table
    assert format_number(0.123456789, 3, style="table") == "0.123"


def test_the_display_and_cli_formatters_are_the_one_formatter() -> None:
    assert text.num(Fraction(1, 3)) == format_number(Fraction(1, 3), style="display")
    assert render.fmt(12345.6) == format_number(12345.6, style="table") == "12,346"
    assert html._num("<b>", 4) == "&lt;b&gt;"  # text is escaped for HTML
    assert html._num(2 / 3, 4) == format_number(2 / 3, 4, style="display") == "0.6667"
