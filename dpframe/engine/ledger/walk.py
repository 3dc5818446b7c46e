"""One verification pass over a ledger's hash chain, row by row in chain order.

:class:`Walk` checks each row's place (its ``seq`` is the next position), its link (its
``prev_hash`` is the previous row's hash) and its hash (:mod:`.formats`, the ledger's schema
version), and adds it to the accounting: each entry's charge is well formed and not negative,
its stored cumulative spend is the spend before it plus its charge (exactly), its id follows
the last entry's and its privacy unit is the ledger's; each outcome names a pending entry whose
status copy it matches; the budget and the unit come from their rows. The caller compares the
result with the sealed chain head (:func:`.chain.verify_chain`).

It is the ledger's hot loop (``dpframe ledger verify`` walks every row): rows come in batches
of one ``UNION ALL ... ORDER BY seq`` query, the common rows (entries, outcomes) are checked
inline, numbers ``"num/den"`` are compared as integers (cross-multiplied, no
:class:`~fractions.Fraction` per row), and the requests are counted by their text and summed
once at the end. Every check of the former per-row walk is kept.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from operator import itemgetter
from pathlib import Path
from typing import Any

from ...core.accounting import SpendTotals
from ...errors import LedgerError
from .diagnose import tampered
from .formats import HASHES, ROW_HASH, WIDTH, Row
from .schema import frac_text, parse_frac

_NOTHING = object()


class _Bad(ValueError):
    """A malformed number (the caller names the row)."""


def ratio(text: Any) -> tuple[int, int]:
    """A stored number as ``(numerator, denominator > 0)``, exactly as :func:`parse_frac`
    reads it (``"num/den"`` in ASCII digits without a Fraction, anything else through it);
    :class:`_Bad` if it is malformed or missing."""
    if text.__class__ is str:
        num, slash, den = text.partition("/")
        if slash and _digits(num) and _digits(den):
            d = int(den)
            if d:
                return int(num), d
    try:
        f = parse_frac(text)
    except LedgerError as exc:
        raise _Bad from exc
    if f is None:
        raise _Bad
    return f.numerator, f.denominator


def _digits(text: str) -> bool:
    """Whether ``text`` is ASCII digits only, well within ``int()``'s digit limit."""
    return text.isascii() and text.isdigit() and len(text) < 2000


def _with_request(
    t: SpendTotals, epsilon: Fraction, delta: Fraction, rho: Fraction | None
) -> SpendTotals:
    """``t`` plus one requested cost, as :meth:`SpendTotals.add` adds it, from the numbers of a
    chained entry (no :class:`PrivacyCost` validation: a bad number fails as tampering)."""
    if rho is None:
        return SpendTotals(t.pure_eps + epsilon, t.all_delta + delta, t.g_eps, t.g_delta,
                           t.g_rho, t.any_g)
    return SpendTotals(t.pure_eps, t.all_delta + delta, t.g_eps + epsilon, t.g_delta + delta,
                       t.g_rho + rho, True)


@dataclass
class Walk:
    """The running hash and the accounting the rows walked add up to."""

    path: Path
    running: str
    version: int
    rows: int = 0
    budget: tuple[Fraction, Fraction] | None = None
    spent: tuple[Fraction, Fraction] = (Fraction(0), Fraction(0))
    totals: SpendTotals = field(default_factory=SpendTotals)
    unit: str | None = None
    last_entry: int = 0
    entries: int = 0
    #: Entries without an outcome yet: their ``(status, details)`` copy
    pending: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    #: How many entries requested each (epsilon, delta, rho), as texts: added to ``totals``
    #: once at the end (:meth:`all_totals`), not one Fraction sum per entry
    requests: dict[tuple[Any, Any, Any], int] = field(default_factory=dict)

    def frac(self, text: Any, what: str) -> Fraction | None:
        """:func:`parse_frac` of ``text``; tampered (naming ``what``) if malformed."""
        try:
            return parse_frac(text)
        except LedgerError as exc:
            raise tampered(self.path, f"{what} is malformed") from exc

    def all_totals(self) -> SpendTotals:
        """The running totals: those resumed from a checkpoint plus every request walked."""
        t = self.totals
        for (e, d, rho), n in self.requests.items():
            what = "an entry's requested cost"
            eps, delta, r = self.frac(e, what), self.frac(d, what), self.frac(rho, what)
            if eps is None or delta is None:
                raise tampered(self.path, f"{what} is malformed")
            t = _with_request(t, n * eps, n * delta, None if r is None else n * r)
        return t

    def state(self) -> dict[str, Any]:
        """What a verified checkpoint stores of this walk (the entries still without an
        outcome by id; their status copies are read again from the entries when resumed)."""
        t = self.all_totals()
        assert self.budget is not None
        return {
            "rows": self.rows, "hash": self.running,
            "budget": [frac_text(self.budget[0]), frac_text(self.budget[1])],
            "spent": [frac_text(self.spent[0]), frac_text(self.spent[1])],
            "totals": [frac_text(x) for x in (t.pure_eps, t.all_delta, t.g_eps, t.g_delta,
                                              t.g_rho)] + [int(t.any_g)],
            "unit": self.unit, "last_entry": self.last_entry, "entries": self.entries,
            "pending": sorted(self.pending),
        }

    @classmethod
    def resume(cls, conn: sqlite3.Connection, path: Path, version: int,
               state: Mapping[str, Any]) -> Walk:
        """A walk continued after the checkpoint ``state`` (its pending entries' status copies
        read again)."""
        try:
            walk = cls(path, str(state["hash"]), version, rows=int(state["rows"]),
                       unit=state["unit"], last_entry=int(state["last_entry"]),
                       entries=int(state["entries"]))
            pending = [int(e) for e in state["pending"]]
            g = _state_numbers(state, path)
        except (KeyError, TypeError, ValueError, LedgerError) as exc:
            raise tampered(path, "its checkpoint is malformed") from exc
        walk.budget, walk.spent = (g[0], g[1]), (g[2], g[3])
        walk.totals = SpendTotals(pure_eps=g[4], all_delta=g[5], g_eps=g[6], g_delta=g[7],
                                  g_rho=g[8], any_g=bool(state["totals"][5]))
        for i in range(0, len(pending), 500):
            chunk = pending[i:i + 500]
            rows = conn.execute(
                f"SELECT id, status, details FROM entries WHERE id IN "
                f"({', '.join('?' for _ in chunk)})", chunk).fetchall()
            walk.pending.update((r[0], (r[1], r[2])) for r in rows)
        if len(walk.pending) != len(pending):
            raise tampered(path, "an entry pending at its checkpoint is missing")
        return walk

    def run(self, parts: Sequence[list[Row]]) -> None:
        """Walk the next rows of the chain: ``parts`` holds each table's rows of one window of
        positions (verification layout, :mod:`.formats`, each in ``seq`` order). Checks each
        table's row hashes in one pass, then, merged in chain order, the positions and links
        (first violation reported in chain order), then the accounting."""
        hashes, width = HASHES[self.version], WIDTH
        intact = all(hashes(part, width[part[0][1]]) == list(map(_stored, part))
                     for part in parts if part)
        rows = [r for part in parts for r in part]
        if len(rows) > max(map(len, parts)):
            rows.sort(key=_position)  # positions in a window are numbers: they compare
        n = self.rows
        seqs, prevs, stored = (list(map(get, rows)) for get in (_position, _prev, _stored))
        if (not intact or seqs != list(range(n + 1, n + 1 + len(rows)))
                or prevs != [self.running, *stored[:-1]]):
            self._first_break(rows)
        self._account(rows)
        self.rows, self.running = n + len(rows), stored[-1]

    def _first_break(self, rows: list[Row]) -> None:
        """Raise the first violation of position, link or hash of ``rows``, in chain order."""
        digest, n, running = ROW_HASH[self.version], self.rows, self.running
        for r in rows:
            n += 1
            if r[2] != n:
                raise tampered(self.path, f"row {n} of its hash chain is missing or duplicated")
            if r[4] != running or digest(r, WIDTH[r[1]]) != r[0]:
                raise tampered(self.path,
                               f"row {n} of its hash chain ({r[1]} #{r[3]}) was changed")
            running = r[0]
        raise tampered(self.path, "its hash chain does not link up")  # pragma: no cover

    def _account(self, rows: list[Row]) -> None:
        """Add ``rows`` (linked and hashed as they should be) to the accounting."""
        path, last, pending = self.path, self.last_entry, self.pending
        requests, unit, started = self.requests, self.unit, self.budget is not None
        spend = (*_pair(self.spent[0]), *_pair(self.spent[1]), _NOTHING)
        charges: dict[Any, tuple[int, int]] = {}
        entries = 0
        for r in rows:
            table = r[1]
            if table == "entries" and started:
                rid = r[3]
                if rid <= last:
                    raise tampered(path, f"entry #{rid} is malformed")
                spend = _adds_up(r, spend, charges, path)
                if r[19] is not None and r[19] != unit:
                    raise tampered(path, f"entry #{rid} names another privacy unit")
                last = rid
                entries += 1
                key = (r[10], r[11], r[12])  # requested epsilon, delta, rho (texts)
                requests[key] = requests.get(key, 0) + 1
                pending[rid] = (r[20], r[21])
            elif table == "outcomes" and started:
                copy = pending.pop(r[5], None)
                if copy is None:
                    raise tampered(path, f"outcome #{r[3]} names no pending entry")
                if r[7] not in ("released", "failed"):
                    raise tampered(path, f"outcome #{r[3]} is malformed")
                if copy != (r[7], r[8]):
                    raise tampered(path, f"the status of entry #{r[5]} disagrees with its "
                                   "outcome")
            else:
                self.unit = unit
                self._rare(table, r)
                unit, started = self.unit, True
        self.last_entry, self.unit = last, unit
        self.entries += entries
        self.spent = (Fraction(spend[0], spend[1]), Fraction(spend[2], spend[3]))

    def _rare(self, table: str, r: Row) -> None:
        """A budget or unit row (or any row before the first budget row)."""
        if table == "budget":
            be, bd = self.frac(r[6], "a budget"), self.frac(r[7], "a budget")
            if be is None or bd is None or be <= 0 or not 0 <= bd <= 1:
                raise tampered(self.path, f"budget #{r[3]} is malformed")
            self.budget = (be, bd)
        elif self.budget is None:
            raise tampered(self.path, "its first chained row is not its budget")
        elif table == "units":
            if self.unit is not None or not isinstance(r[6], str):
                raise tampered(self.path, "its privacy unit was bound twice")
            self.unit = r[6]
        else:  # pragma: no cover - the tables are fixed
            raise tampered(self.path, f"a row of {table} has no place in the hash chain")

    def unfinished(self) -> int | None:
        """An entry whose status copy says it has an outcome that no row records (None when
        every pending entry is still ``charged``)."""
        for eid, copy in self.pending.items():
            if copy != ("charged", "{}"):
                return eid
        return None


def _pair(x: Fraction) -> tuple[int, int]:
    return x.numerator, x.denominator


_Spend = tuple[int, int, int, int, Any]  # spent epsilon, delta (num, den) and delta's text
_position, _prev, _stored = itemgetter(2), itemgetter(4), itemgetter(0)


def _adds_up(r: Row, spend: _Spend, charges: dict[Any, tuple[int, int]], path: Path) -> _Spend:
    """The spend after entry ``r`` (verification layout), once its charge is well formed and
    not negative and its stored cumulative spend is exactly ``spend`` plus its charge."""
    pe, qe, pd, qd, spent_d_text = spend
    try:
        ce, de = charges.get(r[13]) or _charge(charges, r[13])
        cd, dd = charges.get(r[14]) or _charge(charges, r[14])
        se, te = ratio(r[15])
        sd, td = (pd, qd) if cd == 0 and r[16] == spent_d_text else ratio(r[16])
    except _Bad as exc:
        raise tampered(path, f"entry #{r[3]} is malformed") from exc
    if ce < 0 or cd < 0:
        raise tampered(path, f"entry #{r[3]} is malformed")
    # stored spend == spend before + charge, exactly: s/t == p/q + c/d
    if se * qe * de != (pe * de + ce * qe) * te or sd * qd * dd != (pd * dd + cd * qd) * td:
        raise tampered(path, f"entry #{r[3]} does not add up with the entries before")
    return se, te, sd, td, r[16]


def _charge(memo: dict[Any, tuple[int, int]], text: Any) -> tuple[int, int]:
    """:func:`ratio` of a charge's text, remembered (a nightly job charges the same few costs
    again and again)."""
    value = ratio(text)
    if len(memo) < 4096:
        memo[text] = value
    return value


def _state_numbers(state: Mapping[str, Any], path: Path) -> list[Fraction]:
    """Budget, spent and running totals of a checkpoint's state, in this order."""
    f = [parse_frac(x) for x in (*state["budget"], *state["spent"], *state["totals"][:5])]
    g = [x for x in f if x is not None]
    if len(g) != 9:
        raise tampered(path, "its checkpoint is malformed")
    return g
