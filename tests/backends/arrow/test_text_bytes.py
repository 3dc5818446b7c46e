"""Arrow text whose bytes are not UTF-8 is missing (issue 43, item 2;
:func:`~dpframe.backends.blocks.arrow_conform.utf8_or_missing`).

* Exactness: each value is missing exactly when Python's strict decoder refuses its bytes,
  whatever the array's type (string, large string, view, dictionary, chunked, sliced).
* Cost (structural, never timed): text that is all UTF-8 is the very array, and one value that
  is not costs a number of checks logarithmic in the array's length, never a pass per value.
"""

from __future__ import annotations

import math
from unittest import mock

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from dpframe.backends.blocks import arrow_conform as conform
from dpframe.backends.blocks.arrow_conform import utf8_or_missing

#: Bytes most often ASCII, with the bytes that make UTF-8 invalid (a lone continuation, a lead
#: without its continuation, the surrogates' and overlong forms' leads, bytes never used).
_BYTE = st.one_of(st.integers(0x20, 0x7E), st.sampled_from(
    [0x80, 0xBF, 0xC0, 0xC1, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xED, 0xA0, 0xF0, 0x9F, 0xF5, 0xFF]))
_VALUES = st.lists(st.one_of(st.none(), st.lists(_BYTE, max_size=5).map(bytes),
                             st.sampled_from(["é", "€", "😀", "a"]).map(str.encode)),
                   max_size=40)


def _decoded(values: list[bytes | None]) -> list[str | None]:
    def one(v: bytes | None) -> str | None:
        try:
            return None if v is None else v.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return [one(v) for v in values]


def _text(values: list[bytes | None], t: pa.DataType) -> pa.Array:
    return pa.array(values, pa.binary()).cast(t, safe=False)  # the bytes, unchecked


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.sampled_from(["string", "large_string", "string_view", "dictionary",
                                 "chunked", "sliced"]))
def test_missing_exactly_where_the_bytes_are_not_utf8(values: list[bytes | None],
                                                      layout: str) -> None:
    want = _decoded(values)
    if layout == "dictionary":
        arr: pa.Array | pa.ChunkedArray = _text(values, pa.string()).dictionary_encode()
    elif layout == "chunked":
        half = len(values) // 2
        arr = pa.chunked_array([_text(values[:half], pa.string()),
                                _text(values[half:], pa.string())], type=pa.string())
    elif layout == "sliced":
        arr = _text([b"\xff", *values, b"\xff"], pa.string()).slice(1, len(values))
    elif layout == "string_view":
        arr = _text(values, pa.string()).cast(pa.string_view())
    else:
        arr = _text(values, getattr(pa, layout)())
    got = utf8_or_missing(arr)
    assert got.to_pylist() == want
    if all(w is not None or v is None for v, w in zip(values, want, strict=True)):
        assert layout == "string_view" or got is arr  # all UTF-8: the very array


def test_one_value_costs_a_logarithmic_number_of_checks() -> None:
    """One value that is not UTF-8 among 200,000 costs one check among ASCII text, and among
    text past ASCII about ``16 log16(n)`` checks of shrinking slices and one leaf, wherever
    it sits; all-ASCII text costs none."""
    n = 200_000
    calls = [0]
    check = conform._utf8

    def counting(a: pa.Array) -> bool:
        calls[0] += 1
        return check(a)

    with mock.patch.object(conform, "_utf8", counting):
        ascii_text = _text([b"id%d" % i for i in range(n)], pa.large_string())
        assert utf8_or_missing(ascii_text) is ascii_text and calls[0] == 0
        parts = conform._UTF8_PARTS
        levels = math.ceil(math.log(n / conform._UTF8_LEAF, parts))
        for text, most in ((b"id%d", 1), (b"caf\xc3\xa9%d", 1 + parts * levels + 64)):
            for at in (0, n // 3, n - 1):
                values: list[bytes | None] = [text % i for i in range(n)]
                values[at] = b"\xff"
                calls[0] = 0
                got = utf8_or_missing(_text(values, pa.large_string()))
                assert got.null_count == 1 and not got[at].is_valid
                assert calls[0] <= most, (text, at, calls[0])
