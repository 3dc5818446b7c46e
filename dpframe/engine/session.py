"""Sessions: a privacy budget, its ledger, and the randomness of the releases made under it.

A release follows one order (:mod:`dpframe.engine.release`): validate everything, check that
the cost fits (:meth:`Session.require`, before any data is read), compute the exact half, then
:meth:`Session.charge` the ledger (``BudgetExceededError`` if it no longer fits: nothing
charged), and only then draw the noise and :meth:`Session.record` the outcome. A release that
fails after its charge keeps the charge and is recorded as failed. :meth:`Session.charge_many`
charges a whole run at once, all or none.

This module does not need pandas except to build :attr:`Session.ledger`.
"""

from __future__ import annotations

import contextvars
import io
import numbers
import os
from collections.abc import Mapping, Sequence
from fractions import Fraction
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, cast

from ..core.accountant import (
    ACCOUNTANTS,
    Accountant,
    AccountantName,
    BasicAccountant,
    ComposedTotals,
    split_epsilon,
)
from ..core.accounting import (
    PrivacyCost,
    posterior_bound,
    posterior_lower_bound,
    validate_delta,
    validate_epsilon,
)
from ..core.noise.rng import RandomSource
from ..errors import LedgerError, PrivacyUnitError, ValidationError
from .ledger import (
    NEIGHBOURING,
    Ledger,
    MemoryLedger,
    SqliteLedger,
    privacy_unit_message,
    unit_code,
    unit_name,
)

if TYPE_CHECKING:
    import pandas as pd

Neighbouring = Literal["add_remove", "change_one"]

_ACTIVE: contextvars.ContextVar[Session | None] = contextvars.ContextVar(
    "dpframe_active_session", default=None
)
#: The tokens of the ``with session:`` blocks open in this context (a thread, an asyncio
#: task), innermost last: each block resets the active session in the context that set it, so
#: blocks of one session in several threads or tasks never undo each other.
_OPEN: contextvars.ContextVar[tuple[contextvars.Token[Session | None], ...]] = (
    contextvars.ContextVar("dpframe_open_sessions", default=()))

#: Columns of :attr:`Session.ledger`, in order.
LEDGER_COLUMNS = [
    "id",
    "time",
    "status",
    "query",
    "columns",
    "mechanism",
    "epsilon",
    "delta",
    "noise_scale",
    "granularity",
    "ci_half_width",
    "rho",
    "requested_epsilon",
    "requested_delta",
    "spent_epsilon",
    "spent_delta",
    "seeded",
    "session",
    "details",
]
#: Keys of ``details`` that get their own ledger column.
DETAIL_COLUMNS = ("noise_scale", "granularity", "ci_half_width")
#: Ledger columns holding budget numbers (exact in the store, floats in the view).
_BUDGET_COLUMNS = ("epsilon", "delta", "rho", "requested_epsilon", "requested_delta",
                   "spent_epsilon", "spent_delta")


def active_session() -> Session:
    """The session made active by the innermost ``with session:`` block.

    Raises :class:`~dpframe.errors.ValidationError` when there is none.
    """
    s = _ACTIVE.get()
    if s is None:
        raise ValidationError(
            "no active session: pass a session (df.dp(session, ...)) or use `with session:`"
        )
    return s


class Session:
    """A privacy budget ``(epsilon, delta)`` and the ledger of what has been spent from it.

    ``Session(2.0, 1e-6)`` keeps its ledger in memory; ``ledger="budget.sqlite"`` keeps it in an
    embedded SQLite file shared safely by every process that opens it (the file's budget wins:
    a different total is refused unless ``allow_budget_change=True``, which is recorded).
    ``neighbouring`` is ``"add_remove"`` (default) or ``"change_one"``. ``seed`` makes the noise
    deterministic and INSECURE (tests and docs only): it warns, and every release is flagged
    ``seeded`` in the ledger. Use ``with session:`` to make it the active session.

    Budget numbers are exact fractions internally (0.01 is exactly 1/100); :attr:`spent` and
    :attr:`remaining` show them as floats.
    """

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        neighbouring: str = "add_remove",
        ledger: str | os.PathLike[str] | Ledger | None = None,
        name: str | None = None,
        seed: int | None = None,
        allow_budget_change: bool = False,
        privacy_unit: str | None = None,
        accountant: AccountantName | None = None,
    ) -> None:
        eps = validate_epsilon(epsilon, "epsilon")
        if privacy_unit is not None and (not isinstance(privacy_unit, str) or not privacy_unit):
            raise ValidationError("privacy_unit must be the name of the unit column")
        dlt = validate_delta(delta, "delta")
        _check_options(neighbouring, name, seed, allow_budget_change)
        self.neighbouring: Neighbouring = cast(Neighbouring, neighbouring)
        self.name: str | None = name
        if accountant is not None and accountant not in ACCOUNTANTS:
            raise ValidationError("accountant must be one of "
                                  f"{', '.join(map(repr, ACCOUNTANTS))}, got {accountant!r}")
        self._store: Ledger = _open_store(
            ledger, eps, dlt, neighbouring=neighbouring, name=name,
            allow_budget_change=allow_budget_change, accountant=accountant,
        )
        if privacy_unit is not None:
            self._store.bind_privacy_unit(unit_code(privacy_unit))
        self.seed: int | None = None if seed is None else int(seed)
        self.rng: RandomSource = RandomSource(self.seed)

    # -- budget ------------------------------------------------------------------------------

    @property
    def ledger_store(self) -> Ledger:
        """The ledger store (memory or SQLite) behind this session."""
        return self._store

    @property
    def seeded(self) -> bool:
        """True when the noise is deterministic (a ``seed`` was given): insecure."""
        return self.seed is not None

    @property
    def total_exact(self) -> tuple[Fraction, Fraction]:
        """The budget ``(epsilon, delta)`` as exact fractions."""
        return self._store.total()

    @property
    def spent_exact(self) -> tuple[Fraction, Fraction]:
        """``(epsilon, delta)`` charged so far, exact."""
        return self._store.spent()

    @property
    def remaining_exact(self) -> tuple[Fraction, Fraction]:
        """``(epsilon, delta)`` left, exact (never negative)."""
        (te, td), (se, sd) = self._store.total(), self._store.spent()
        return max(te - se, Fraction(0)), max(td - sd, Fraction(0))

    @property
    def epsilon(self) -> float:
        """The total epsilon budget."""
        return float(self.total_exact[0])

    @property
    def delta(self) -> float:
        """The total delta budget."""
        return float(self.total_exact[1])

    @property
    def spent(self) -> tuple[float, float]:
        """``(epsilon, delta)`` charged so far (every charge, released or failed)."""
        e, d = self.spent_exact
        return float(e), float(d)

    @property
    def remaining(self) -> tuple[float, float]:
        """``(epsilon, delta)`` left."""
        e, d = self.remaining_exact
        return float(e), float(d)

    # -- accountant --------------------------------------------------------------------------

    @property
    def accountant_object(self) -> Accountant:
        """The composition rule of this session's ledger (:mod:`dpframe.core.accountant`)."""
        acc = getattr(self._store, "accountant", None)
        return acc if isinstance(acc, Accountant) else BasicAccountant(self.total_exact)

    @property
    def accountant(self) -> str:
        """Which accountant composes the releases: ``"pld"`` (privacy loss distributions, the
        default when delta > 0), ``"rdp"`` or ``"basic"`` (exact sums; always for delta = 0)."""
        return self.accountant_object.name

    def basic_spend(self) -> tuple[Fraction, Fraction]:
        """What basic composition (epsilons and deltas add; Gaussians in zCDP) would have spent
        on the same releases: :attr:`spent` is never more, and the difference is what the
        accountant saves."""
        from .ledger.charges import entry_cost, fold

        spend = fold(entry_cost(e) for e in self._store.entries()).spend()
        return spend.epsilon, spend.delta

    def composed_spend(self) -> tuple[Fraction, Fraction]:
        """The accountant's own composition of every release so far: (epsilon at the budget's
        delta, delta at the budget's epsilon), rounded up; the basic spend for ``"basic"``."""
        from .ledger.charges import entry_cost, fold

        totals = fold((entry_cost(e) for e in self._store.entries()),
                      self.accountant_object.start())
        if isinstance(totals, ComposedTotals):
            return totals.composed()
        spend = totals.spend()
        return spend.epsilon, spend.delta

    def split(self, n: int, *, mechanism: str = "laplace") -> float:
        """The largest epsilon (6 significant digits, rounded down) such that ``n`` more
        releases of ``mechanism`` (``"laplace"``: counts, sums or histograms with Laplace noise,
        each asked for with ``epsilon=`` the result) fit the remaining budget
        under this session's accountant, every release so far included. For pure-DP sessions
        it is remaining epsilon / n. E.g. ``Session(1, 1e-6).split(50)`` is 1 / 29.15: fifty
        Laplace counts with scale 29.15 instead of 50 under basic composition.
        ``mechanism="gaussian"``: ``n`` Gaussian counts (L2 sensitivity 1), each asked for
        with ``epsilon=`` the result and ``delta=session.delta / n``, their noise predicted by
        the analytic calibration (the session still checks each charge)."""
        from .ledger.charges import entry_cost, fold

        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or int(n) < 1:
            raise ValidationError("n must be a positive integer")
        if mechanism not in ("laplace", "gaussian"):
            raise ValidationError("split() supports mechanism='laplace' or 'gaussian'")
        total = self.total_exact
        if mechanism == "gaussian" and total[1] == 0:
            raise ValidationError("Gaussian releases need a session with delta > 0")
        start = fold((entry_cost(e) for e in self._store.entries()),
                     self.accountant_object.start())
        gdelta = total[1] / int(n) if mechanism == "gaussian" else None
        return split_epsilon(start, total, self.spent_exact, int(n), gdelta)

    # -- privacy unit ------------------------------------------------------------------------

    @property
    def privacy_unit(self) -> str | None:
        """The unit this session protects: the unit column's name, ``"rows"`` for row-level
        releases, or None until the first release (or ``Session(privacy_unit=...)``) fixes it."""
        code = self._store.privacy_unit()
        return None if code is None else unit_name(code)

    def check_privacy_unit(self, unit: str | None) -> None:
        """Refuse (before any charge) a release under another privacy unit than the one this
        session protects: a budget spent at row level does not bound the loss of a person with
        many rows, and one spent per user says nothing of rows
        (docs/privacy.md#one-privacy-unit-per-session)."""
        code = self._store.privacy_unit()
        if code is not None and code != unit_code(unit):
            raise PrivacyUnitError(privacy_unit_message(code, unit_code(unit)))

    # -- the release path --------------------------------------------------------------------

    def fits(self, cost: PrivacyCost) -> bool:
        """Whether ``cost`` fits the remaining budget now. No side effect."""
        if not isinstance(cost, PrivacyCost):
            raise ValidationError(f"cost must be a PrivacyCost, not {type(cost).__name__}")
        return self._store.fits(cost)

    def charge(
        self, cost: PrivacyCost, *, query: str, columns: list[str], mechanism: str,
        privacy_unit: str | Literal[False] | None = False,
    ) -> int:
        """Charge ``cost`` to the ledger before computing a release; return the entry id.

        Atomic: either the whole cost is recorded (durably, for a SQLite ledger) or, when it
        does not fit, :class:`~dpframe.errors.BudgetExceededError` is raised and nothing is.
        ``privacy_unit`` (a unit column, or None for rows) is checked against the unit the
        ledger protects in the same transaction, and fixes it on the first release
        (:class:`~dpframe.errors.PrivacyUnitError` when it differs: nothing charged).
        """
        if not isinstance(cost, PrivacyCost):
            raise ValidationError(f"cost must be a PrivacyCost, not {type(cost).__name__}")
        return self._store.charge(cost, self._meta(query=query, columns=columns,
                                                    mechanism=mechanism,
                                                    privacy_unit=privacy_unit))

    def _meta(self, *, query: str, columns: list[str] | str, mechanism: str,
              privacy_unit: str | Literal[False] | None = False) -> dict[str, Any]:
        """A charge's ledger metadata (see :meth:`charge`)."""
        if isinstance(columns, str):
            columns = [columns]
        meta: dict[str, Any] = {
            "session": self.name,
            "query": str(query),
            "columns": [str(c) for c in (columns or [])],
            "mechanism": str(mechanism),
            "seeded": self.seeded,
        }
        if privacy_unit is not False:
            meta["privacy_unit"] = unit_code(privacy_unit)
        return meta

    def charge_many(self, charges: Sequence[tuple[PrivacyCost, Mapping[str, Any]]]
                    ) -> list[int]:
        """Charge several releases at once, all or none, in one ledger transaction; their
        entry ids in order. Each ``(cost, meta)`` takes the keyword arguments of
        :meth:`charge` (``query``, ``columns``, ``mechanism``, ``privacy_unit``) as ``meta``.

        A run reserves its whole cost so: two runs sharing a ledger never both pass the budget
        check and then run out half-way. ``BudgetExceededError`` (nothing charged) when the
        whole batch does not fit; ``LedgerError`` for a ledger store without ``charge_many``.
        """
        many = getattr(self._store, "charge_many", None)
        if not callable(many):
            raise LedgerError(f"{type(self._store).__name__} cannot charge several releases "
                              "in one transaction")
        batch = []
        for cost, meta in charges:
            if not isinstance(cost, PrivacyCost):
                raise ValidationError(f"cost must be a PrivacyCost, not {type(cost).__name__}")
            batch.append((cost, self._meta(**meta)))
        return cast(list[int], many(batch))

    def require(self, cost: PrivacyCost) -> None:
        """``BudgetExceededError`` unless ``cost`` fits the remaining budget now (no side
        effect): checked before any data is read; the charge checks again, atomically."""
        if self.fits(cost):
            return
        from .ledger.charges import entry_cost, fold, plan_charge, refusal

        entries = self._store.entries()
        costs = fold((entry_cost(e) for e in entries), self.accountant_object.start())
        old, new, _ = plan_charge(self.total_exact, costs, self.spent_exact, cost)
        raise refusal(self.total_exact, old, new, self.accountant_object, entries, [cost])

    def ledger_head(self, entry_id: int) -> dict[str, Any] | None:
        """The ledger's chain head right after charge ``entry_id`` (``ledger_id``, ``seq``,
        ``hash``), for a release's provenance; None for an in-memory ledger (no chain: its
        exports cannot be checked against a ledger file) or a ledger without one."""
        head_of = getattr(self._store, "chain_head_of", None)
        return None if head_of is None else head_of(entry_id)

    def record(self, entry_id: int, *, status: str, details: Mapping[str, Any]) -> None:
        """Record a charged entry's outcome: ``"released"`` or ``"failed"``.

        ``details``: public release metadata only (``noise_scale``, ``granularity``,
        ``ci_half_width``, ...), never data values.
        """
        self._store.record(entry_id, status, details)

    # -- views -------------------------------------------------------------------------------

    @property
    def ledger(self) -> pd.DataFrame:
        """One row per release (charged, released or failed), oldest first.

        ``epsilon`` / ``delta`` are what the release cost the session (the increase of
        :attr:`spent`); ``requested_epsilon`` / ``requested_delta`` are what it was
        calibrated for (they differ for Gaussian releases, composed in zCDP).
        """
        import pandas as pd

        rows = [_ledger_row(e) for e in self._store.entries()]
        df = pd.DataFrame(rows, columns=LEDGER_COLUMNS)
        df["time"] = pd.to_datetime(df["time"], utc=True, format="ISO8601")
        df["id"] = df["id"].astype("int64")
        for k in (*_BUDGET_COLUMNS, *DETAIL_COLUMNS):
            df[k] = pd.to_numeric(df[k], errors="coerce").astype("float64")
        df["seeded"] = df["seeded"].astype(bool)
        return df

    def report(self, show: bool = False) -> str | None:
        """A plain-text account of the session: budget spent and left, every release, and
        what the spent epsilon means for an attacker's beliefs, returned as a string in every
        environment (terminal, script, notebook). ``show=True`` prints it instead (with colour
        where the terminal has it, as tables in a notebook) and returns None, like
        ``DataFrame.info()``, so a notebook shows it once. In a notebook, displaying the
        session itself (``session``) shows a budget bar and the latest releases."""
        from rich.console import Console

        renderables = self._report_renderables()
        if show:
            out = Console()
            for r in renderables:
                out.print(r)
            return None
        buf = io.StringIO()
        # force_jupyter=False: in a notebook rich would draw into the page and write nothing
        console = Console(file=buf, width=140, color_system=None, force_terminal=False,
                          force_jupyter=False)
        for r in renderables:
            console.print(r)
        return buf.getvalue()

    def _repr_html_(self) -> str:
        """Notebook display: budget bar, privacy unit and the latest releases."""
        from ..display.html import session_html

        describe = getattr(self._store, "describe", None)
        (te, td), (se, sd) = self.total_exact, self.spent_exact
        return session_html(
            title=f"dpframe session {self.name!r}" if self.name else "dpframe session",
            where=describe() if callable(describe) else type(self._store).__name__,
            neighbouring=self.neighbouring, unit=self.privacy_unit,
            spent=(float(se), float(sd)), total=(float(te), float(td)),
            entries=self._store.entries(), seeded=self.seeded)

    def _report_renderables(self) -> list[Any]:
        from rich.text import Text

        from ..display.text import budget_table, entries_summary, entries_table

        (te, td), (se, sd) = self.total_exact, self.spent_exact
        entries = self._store.entries()
        title = f"dpframe session {self.name!r}" if self.name else "dpframe session"
        describe = getattr(self._store, "describe", None)
        where = describe() if callable(describe) else type(self._store).__name__
        head = Text(f"{title} — {where}, neighbouring={self.neighbouring}\n", style="bold")
        budget = budget_table((te, td), (se, sd))
        rel = entries_table(entries, entries_summary(entries, "Releases"))

        # a composed epsilon holds at the budget's delta (basic: at the summed delta)
        at_delta = sd if self.accountant == "basic" or se == 0 else td
        lines = [self._accountant_line(), explain_epsilon(float(se), float(at_delta),
                                                          label="spent so far")]
        if se != te:
            lines.append(explain_epsilon(float(te), float(td), label="the whole budget"))
        if self.seeded or any(e.get("seeded") for e in entries):
            lines.append(
                "WARNING: seeded (deterministic, insecure) noise was used; such releases must "
                "not be published."
            )
        return [head, budget, rel, Text("\n".join(lines))]

    def _accountant_line(self) -> str:
        """Which accountant composes the releases, and what it saves against basic
        composition (the posterior explanation below reads the composed spend)."""
        name = self.accountant
        if name == "basic":
            return ("Accountant: basic composition (epsilons and deltas add exactly; Gaussian "
                    "releases in zCDP).")
        what = {"pld": "privacy loss distributions (dp_accounting, pessimistic)",
                "rdp": "Renyi DP (dp_accounting)"}[name]
        (ce, cd), (be, bd) = self.composed_spend(), self.basic_spend()
        return (f"Accountant: {name}, {what}: the releases compose to epsilon {float(ce):.6g} "
                f"at the budget's delta and delta {float(cd):.3g} at the budget's epsilon; "
                f"basic composition: epsilon {float(be):.6g}, delta {float(bd):.3g} (saved "
                f"epsilon {max(float(be - ce), 0.0):.6g}). The spend below is the basic one "
                "while it fits the budget, then the composed one.")

    # -- active session ----------------------------------------------------------------------

    def __enter__(self) -> Session:
        _OPEN.set((*_OPEN.get(), _ACTIVE.set(self)))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack = _OPEN.get()
        if stack:  # the innermost block open in this context
            _OPEN.set(stack[:-1])
            _ACTIVE.reset(stack[-1])

    def close(self) -> None:
        """Release the ledger's file handle (a SQLite ledger reopens it if used again)."""
        close = getattr(self._store, "close", None)
        if callable(close):
            close()

    def __repr__(self) -> str:
        se, sd = self.spent
        return (
            f"Session(epsilon={self.epsilon:g}, delta={self.delta:g}, spent=({se:g}, {sd:g}), "
            f"neighbouring={self.neighbouring!r}"
            + (f", name={self.name!r}" if self.name else "")
            + (", seeded" if self.seeded else "")
            + ")"
        )


def _check_options(
    neighbouring: Any, name: Any, seed: Any, allow_budget_change: Any
) -> None:
    """``ValidationError`` for a bad ``neighbouring``, ``name``, ``seed`` or
    ``allow_budget_change`` of :class:`Session` (checked in this order)."""
    if not isinstance(neighbouring, str) or neighbouring not in NEIGHBOURING:
        raise ValidationError(
            f"neighbouring must be 'add_remove' or 'change_one', got {neighbouring!r}"
        )
    if name is not None and not isinstance(name, str):
        raise ValidationError(f"name must be a string, not {type(name).__name__}")
    _check_seed(seed)
    if not isinstance(allow_budget_change, bool):
        raise ValidationError("allow_budget_change must be True or False")


def _check_seed(seed: Any) -> None:
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or int(seed) < 0
    ):
        raise ValidationError("seed must be a non-negative integer or None")


def _open_store(
    ledger: str | os.PathLike[str] | Ledger | None,
    epsilon: Fraction,
    delta: Fraction,
    *,
    neighbouring: str,
    name: str | None,
    allow_budget_change: bool,
    accountant: AccountantName | None = None,
) -> Ledger:
    """The ledger store of a session: in memory (``None``), a SQLite file (a path: its stored
    budget must match unless ``allow_budget_change``), or a given store with the same budget."""
    if ledger is None:
        return MemoryLedger(epsilon, delta, accountant=accountant)
    if isinstance(ledger, str | os.PathLike):
        return SqliteLedger(ledger, epsilon, delta, neighbouring=neighbouring, name=name,
                            allow_budget_change=allow_budget_change, accountant=accountant)
    if isinstance(ledger, Ledger):
        if ledger.total() != (epsilon, delta):
            raise LedgerError("the ledger's budget differs from this session's (epsilon, delta)")
        return ledger
    raise ValidationError(
        f"ledger must be None, a file path or a Ledger, not {type(ledger).__name__}"
    )


def _ledger_row(entry: dict[str, Any]) -> dict[str, Any]:
    """One row of :attr:`Session.ledger` from a ledger entry: floats for budget numbers, the
    detail columns out of ``details``, the columns joined."""
    det = dict(entry.get("details") or {})
    row: dict[str, Any] = {k: entry.get(k) for k in LEDGER_COLUMNS if k in entry}
    for k in _BUDGET_COLUMNS:
        v = entry.get(k)
        row[k] = None if v is None else float(v)
    for k in DETAIL_COLUMNS:
        row[k] = det.pop(k, None)
    row["columns"] = ", ".join(entry.get("columns") or [])
    row["details"] = det
    return row


def explain_epsilon(epsilon: float, delta: float = 0.0, *, label: str = "") -> str:
    """What ``epsilon`` means in words, via :func:`posterior_bound`."""
    pairs = []
    for p in (0.01, 0.1, 0.5, 0.9):
        lo, hi = posterior_lower_bound(epsilon, p), posterior_bound(epsilon, p)
        pairs.append(f"{_pct(p)} -> between {_pct(lo)} and {_pct(hi)}")
    where = f" ({label})" if label else ""
    text = (
        f"What epsilon = {epsilon:.4g}{where} means: whatever an attacker believed about any one "
        "person, seeing the releases can move a prior belief p at most up to "
        "p e^eps / (1 + p (e^eps - 1)) and down to its mirror image: " + "; ".join(pairs) + "."
    )
    if delta > 0:
        text += f" This can fail with probability up to about delta = {delta:.3g}."
    return text


def _pct(p: float) -> str:
    return f"{100 * p:.3g}%"


__all__ = ["LEDGER_COLUMNS", "Neighbouring", "Session", "active_session", "explain_epsilon"]
