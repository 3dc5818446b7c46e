"""``dpf.Continual``: running totals over a horizon of nights for one charge (docs/continual.md).

``c = dpf.Continual(session, horizon=365, epsilon=1.0)`` charges epsilon once, through the
session's normal charge path (a ledger entry). Each ``c.add(day_df)`` adds that night's rows to
a binary tree and returns the running total so far (Honaker's estimate from the complete nodes,
:mod:`dpframe.core.continual`, which states the privacy argument), with its interval. The noisy
nodes completed that night are DP outputs: they are recorded in the ledger, in a zero-cost
chained entry of their own (``details``: the tree's name, the night, the nodes), so the hash
chain covers them; a re-run of a night replays them (nothing drawn, nothing charged).

The exact state of the tree (the partial sums of its open nodes, and per unit the rows kept so
far when a unit bounds its rows over the horizon) is private: it is never written to the ledger.
It lives in memory, and in the caller's private ``state=`` file (written atomically before the
night is charged) so that a later process can resume ``name=`` where the ledger stopped.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._json import jsonable
from ..backends.pandas import PandasBackend
from ..core.accounting import PrivacyCost
from ..core.continual import (
    MAX_HORIZON,
    Node,
    TreeSpec,
    TreeState,
    add_node_noise,
    prefix_estimate,
)
from ..core.digest import values_digest
from ..core.exact.compute import fixed_point_request
from ..core.exact.values import canonical
from ..core.numbers import to_fraction
from ..core.plan import plan_release
from ..core.query import Measure, Query
from ..errors import (
    BoundsError,
    ContinualError,
    HorizonError,
    InputError,
    OutputError,
    UnknownColumnError,
    ValidationError,
)
from .results import DPFloat, DPInt

if TYPE_CHECKING:
    from ..backends.base import Backend
    from ..engine.session import Session

MECHANISM = "continual binary tree"


def _check_int(value: object, what: str, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < lo or (
            hi is not None and value > hi):
        top = "" if hi is None else f" to {hi}"
        raise ValidationError(f"{what} must be an integer from {lo}{top}")
    return int(value)


def _keys_of(by: object, keys: object) -> tuple[str | None, tuple[object, ...]]:
    """The key column and its declared keys: ``keys`` a list (with ``by``) or a named Series."""
    if keys is None:
        if by is not None:
            raise ValidationError("by= needs its public keys: keys=[...] (or a named Series)")
        return None, ()
    if isinstance(keys, pd.Series):
        by = keys.name if by is None else by
        keys = keys.tolist()
    if not isinstance(by, str) or not by:
        raise ValidationError("public keys need the key column: by='column' (or a named Series)")
    return by, _declared(keys)


def _declared(keys: object) -> tuple[object, ...]:
    """The declared public keys: a non-empty list without repeats."""
    if isinstance(keys, str | bytes) or not isinstance(keys, Sequence | np.ndarray):
        raise ValidationError("keys must be a list of the public keys (or a Series)")
    declared = tuple(keys)
    if not declared:
        raise ValidationError("keys must declare at least one key")
    if len(set(map(repr, declared))) != len(declared):
        raise ValidationError("keys must not repeat a key")
    return declared


def _check_options(name: object, ci: object, charge_on_first_add: object
                   ) -> tuple[str | None, float]:
    """``name`` and the interval level ``ci``, checked (and ``charge_on_first_add``)."""
    if name is not None and (not isinstance(name, str) or not name):
        raise ValidationError("name must be a non-empty string")
    if not isinstance(ci, float | int) or isinstance(ci, bool) or not 0 < ci < 1:
        raise ValidationError("ci must be a level between 0 and 1")
    if not isinstance(charge_on_first_add, bool):
        raise ValidationError("charge_on_first_add must be True or False")
    return name, float(ci)


class Continual:
    """Running totals over ``horizon`` nights for one charge of ``epsilon`` (docs/continual.md).

    ``column`` (with ``bounds=(lo, hi)``) releases a running clamped sum instead of a running
    row count (``integer=True`` for an integer column: exact integer sums); ``by`` and
    ``keys`` (a list, or a named Series) one tree per public key (parallel composition);
    ``privacy_unit`` with ``max_rows_per_unit=T`` protects a unit with at most ``T`` rows over
    the whole horizon (enforced: each night keeps, per unit, at most the rows it has left,
    chosen at random); ``name`` records the release under a name a later process resumes
    from the ledger (with the private ``state=`` file); ``ci`` the intervals' level.
    ``charge_on_first_add=True`` (a nightly job's first run) charges a new release in the
    first :meth:`add`, once every check of that night has passed, instead of here.

    Guarantee: epsilon-DP for the whole sequence of releases over the horizon, under the
    session's neighbouring relation (:mod:`dpframe.core.continual`). Every check runs before
    the charge; nights past the horizon raise :class:`~dpframe.errors.HorizonError`.
    """

    def __init__(self, session: Session, horizon: int, epsilon: object, *,
                 column: str | None = None, bounds: tuple[float, float] | None = None,
                 integer: bool = False, by: str | None = None, keys: object = None,
                 privacy_unit: str | None = None, max_rows_per_unit: int | None = None,
                 name: str | None = None, state: str | os.PathLike[str] | None = None,
                 ci: float = 0.95, charge_on_first_add: bool = False) -> None:
        from ..engine.session import Session

        if not isinstance(session, Session):
            raise ValidationError("Continual needs a dpframe Session")
        self.session = session
        self.horizon = _check_int(horizon, "horizon", 1, MAX_HORIZON)
        self.epsilon = to_fraction(epsilon, "epsilon", positive=True)
        self.column, self.integer = self._check_column(column, bounds, integer)
        self.bounds = None if bounds is None else (
            to_fraction(bounds[0], "bounds", signed=True),
            to_fraction(bounds[1], "bounds", signed=True))
        self.by, self.keys = _keys_of(by, keys)
        self.privacy_unit, self.rows_per_unit = self._check_unit(privacy_unit, max_rows_per_unit)
        self.name, self.level = _check_options(name, ci, charge_on_first_add)
        self.state_path = None if state is None else Path(state)
        self._request = self._make_request()
        self.spec = self._make_spec()
        _ = self.spec.noise  # a scale the sampler cannot take is refused here, before the charge
        session.check_privacy_unit(self.privacy_unit)
        self._nodes: dict[Node, list[int]] = {}
        self._entries: dict[int, int] = {}  # night -> its ledger entry
        self._tally: dict[str, int] = {}
        self._pending: dict[str, int] = {}
        self.entry: int | None = self._resume() if name is not None else None
        if self.entry is None:
            self._state = TreeState(self.spec.levels, max(len(self.keys), 1))
            if not charge_on_first_add:
                self.entry = self._charge()
            else:
                session.require(PrivacyCost(self.epsilon))  # no side effect

    # -- checks (before any charge) -------------------------------------------------------

    @staticmethod
    def _check_column(column: object, bounds: object, integer: object) -> tuple[str | None,
                                                                                 bool]:
        if not isinstance(integer, bool):
            raise ValidationError("integer must be True or False")
        if column is None:
            if bounds is not None:
                raise ValidationError("bounds= goes with column= (a running sum)")
            return None, True
        if not isinstance(column, str) or not column:
            raise ValidationError("column must be a column name")
        if not isinstance(bounds, tuple | list) or len(bounds) != 2:
            raise BoundsError(f"a running sum of {column!r} needs bounds=(lo, hi)")
        # the releases' own rule (finite, lo < hi, within 2**52), before the charge
        Query((Measure("sum", column),), Fraction(1), bounds={column: tuple(bounds)}
              ).bounds_of(column)
        return column, integer

    @staticmethod
    def _check_unit(unit: object, t: object) -> tuple[str | None, int]:
        if unit is None:
            if t is not None:
                raise ValidationError("max_rows_per_unit= goes with privacy_unit=")
            return None, 1
        if not isinstance(unit, str) or not unit:
            raise ValidationError("privacy_unit must be the name of the unit column")
        if t is None:
            raise ValidationError("privacy_unit= needs max_rows_per_unit=T: a unit's rows over "
                                  "the whole horizon")
        return unit, _check_int(t, "max_rows_per_unit", 1)

    def _make_request(self) -> Any:
        if self.column is None:
            return None
        assert self.bounds is not None
        lo, hi = self.bounds
        return fixed_point_request(self.column, lo, hi, Fraction(0), self.integer)

    def _make_spec(self) -> TreeSpec:
        """The tree's noise: per level, one unit moves at most ``T M`` (twice under
        change-one: its rows may move to other nights and keys) over at most ``T`` leaves."""
        two = 2 if self.session.neighbouring == "change_one" else 1
        if self._request is None:
            m, unit, integer = Fraction(1), Fraction(1), True
        else:
            req = self._request
            unit, integer = req.unit, bool(req.integer)
            m = max(abs(req.ilo), abs(req.ihi)) * unit
        return TreeSpec(self.horizon, self.epsilon, two * self.rows_per_unit * m,
                        changed=two * self.rows_per_unit, integer=integer, unit=unit)

    @property
    def op(self) -> str:
        """``"count"`` or ``"sum"``."""
        return "count" if self.column is None else "sum"

    def _label(self) -> str:
        what = "count()" if self.column is None else f"sum({self.column})"
        by = "" if self.by is None else f" by {self.by}"
        return f"continual {what}{by}" + ("" if self.name is None else f" {self.name!r}")

    def params(self) -> dict[str, Any]:
        """The release's public parameters, as the ledger records them (a resume must match)."""
        noise = self.spec.noise
        return jsonable({
            "name": self.name, "horizon": self.horizon, "levels": self.spec.levels,
            "epsilon": str(self.epsilon), "op": self.op, "column": self.column,
            "integer": self.integer,
            "bounds": None if self.bounds is None else [str(b) for b in self.bounds],
            "by": self.by, "keys": list(self.keys), "privacy_unit": self.privacy_unit,
            "max_rows_per_unit": self.rows_per_unit, "neighbouring": self.session.neighbouring,
            "level_sensitivity": str(self.spec.level_sensitivity),
            "int_scale": str(noise.int_scale), "granularity": str(noise.granularity),
        })

    # -- the charge, the ledger and a resume ----------------------------------------------

    def _charge(self) -> int:
        noise = self.spec.noise
        entry = self.session.charge(PrivacyCost(self.epsilon), query=self._label(),
                                    columns=self._columns(),
                                    mechanism=f"{MECHANISM} (geometric)",
                                    privacy_unit=self.privacy_unit)
        self.session.record(entry, status="released", details={
            "noise_scale": noise.scale, "granularity": float(noise.granularity),
            "continual": self.params()})
        return entry

    def _columns(self) -> list[str]:
        return [c for c in (self.by, self.column, self.privacy_unit) if c is not None]

    def _record(self) -> tuple[dict[str, Any] | None, dict[int, tuple[int, list[Any]]]]:
        """The ledger's last release named ``self.name`` and its nights (entry, nodes): the
        first record of a night counts, should another have been added concurrently."""
        head: dict[str, Any] | None = None
        nights: dict[int, tuple[int, list[Any]]] = {}
        for e in self.session.ledger_store.entries():
            det = e.get("details") or {}
            cont = det.get("continual")
            if isinstance(cont, Mapping) and cont.get("name") == self.name:
                head, nights = e, {}
            elif head is not None and det.get("continual_of") == head["id"]:
                nights.setdefault(int(det["night"]), (e["id"], det["nodes"]))
        return head, nights

    def _resume(self) -> int | None:
        """The ledger entry of the release named ``self.name`` with its nights' nodes, or None
        (not found: a new release). A record whose parameters differ is refused."""
        head, nights = self._record()
        if head is None:
            return None
        stored, mine = dict(head["details"]["continual"]), self.params()
        if stored != mine:
            diff = sorted(k for k in set(stored) | set(mine) if stored.get(k) != mine.get(k))
            raise ContinualError(f"the ledger's continual release {self.name!r} was made with "
                                 f"other parameters ({', '.join(diff)}); nothing was charged")
        if sorted(nights) != list(range(1, len(nights) + 1)):
            raise ContinualError(f"the ledger's continual release {self.name!r} has a gap in "
                                 "its nights; nothing was charged")
        for night, (entry, nodes) in nights.items():
            self._entries[night] = entry
            self._nodes.update({(int(j), int(k)): [int(v) for v in vals]
                                for j, k, vals in nodes})
        self._state = self._load_state(len(nights))
        return int(head["id"])

    # -- the private state file ------------------------------------------------------------

    def _read_state(self, done: int) -> dict[str, Any] | None:
        """The state file's content (None: no file and no night to resume)."""
        if self.state_path is None or not self.state_path.exists():
            if done == 0:
                return None
            raise ContinualError(
                f"continual release {self.name!r} has {done} nights in the ledger: resuming it "
                "needs its private state file (state=), which holds the exact sums of the open "
                "tree nodes; nothing was charged")
        try:
            saved = json.loads(self.state_path.read_text())
        except (OSError, ValueError):
            raise ContinualError("cannot read the continual state file; nothing was "
                                 "charged") from None
        if not isinstance(saved, dict) or saved.get("params") != self.params():
            raise ContinualError("the continual state file belongs to another release; "
                                 "nothing was charged")
        return saved

    def _load_state(self, done: int) -> TreeState:
        """The exact state after the ``done`` nights the ledger recorded: the state file's
        ``after`` (or ``before``, when the process stopped between writing it and recording
        the night)."""
        saved = self._read_state(done)
        keys = max(len(self.keys), 1)
        if saved is None:
            return TreeState(self.spec.levels, keys)
        for s in (saved.get("after"), saved.get("before")):
            if isinstance(s, dict) and s.get("night") == done:
                self._tally = {str(u): int(n) for u, n in s.get("tally", {}).items()}
                return TreeState(self.spec.levels, keys, done,
                                 [[int(v) for v in row] for row in s["open"]])
        raise ContinualError(f"the continual state file does not match the {done} nights the "
                             "ledger recorded for this release; nothing was charged")

    def _save_state(self, before: TreeState, tally_before: dict[str, int],
                    after: TreeState, tally_after: dict[str, int]) -> None:
        """Write the state before and after the nights being added, atomically (a crash
        between the write and the ledger's record resumes from ``before``)."""
        if self.state_path is None:
            return
        data = {"params": self.params(),
                "before": {"night": before.night, "open": before.open, "tally": tally_before},
                "after": {"night": after.night, "open": after.open, "tally": tally_after}}
        folder = self.state_path.parent
        try:
            fd, tmp = tempfile.mkstemp(prefix=".dpframe-state-", dir=folder)
        except OSError as exc:
            raise OutputError(f"cannot write the continual state file ({type(exc).__name__}); "
                              "nothing was charged for this night") from None
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(data, fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.state_path)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(exc, OSError):
                raise OutputError(f"cannot write the continual state file "
                                  f"({type(exc).__name__}); nothing was charged for this "
                                  "night") from None
            raise

    # -- nights ----------------------------------------------------------------------------

    @property
    def nights(self) -> int:
        """How many nights have been added (released) so far."""
        return self._state.night

    def add(self, day: object, night: int | None = None, *,
            fill_gaps: bool = False) -> DPInt | DPFloat | pd.DataFrame:
        """Add one night's rows (the next night, or ``night``) and return the running total.

        A night already added is replayed from its recorded nodes: the data is not read,
        nothing is charged or drawn. A night past the next one is refused
        (:class:`~dpframe.errors.ContinualError`) unless ``fill_gaps=True``, which adds the
        nights between as empty nights (noise on zero). Past the horizon:
        :class:`~dpframe.errors.HorizonError`. Every refusal comes before anything is drawn.
        """
        t = self._night(night, fill_gaps)
        if t <= self.nights:
            return self.result(t)
        if self.entry is None:  # charge_on_first_add: the budget, before reading the data
            self.session.require(PrivacyCost(self.epsilon))
        leaves = self._leaves(day)  # every check of the data's schema; nothing charged yet
        for n in range(self.nights + 1, t + 1):  # the skipped nights (empty), then night t
            self._step(n, leaves if n == t else [0] * len(leaves),
                       self._pending if n == t else dict(self._tally))
        return self.result(t)

    def _step(self, night: int, leaves: list[int], tally: dict[str, int]) -> None:
        """Add one night, atomically with respect to the state file and this object: the
        private state after it is written first (a full disk refuses here, before any charge;
        a release not charged yet ignores the file when resumed), then the charge of a new
        release (``charge_on_first_add``), then the night's zero-cost entry, noise and record;
        only then does this object move on (a failure leaves it at the night before)."""
        after = TreeState(self._state.levels, self._state.keys, self._state.night,
                          [list(r) for r in self._state.open])
        done = after.add(leaves, self.horizon)
        self._save_state(self._state, dict(self._tally), after, tally)
        if self.entry is None:  # charge_on_first_add: every check of the night has passed
            self.entry = self._charge()
        self._release_night(night, done)
        self._state, self._tally = after, tally

    def _night(self, night: int | None, fill_gaps: object) -> int:
        """The night to add, or ``HorizonError`` / ``ContinualError`` (no side effect)."""
        t = self.nights + 1 if night is None else _check_int(night, "night", 1)
        if t > self.horizon:
            raise HorizonError(f"night {t} is past the horizon of {self.horizon} nights: its "
                               "charge covers those only; nothing was charged")
        if not isinstance(fill_gaps, bool):
            raise ValidationError("fill_gaps must be True or False")
        if t > self.nights + 1 and not fill_gaps:
            gap = (f"night {t - 1}" if t == self.nights + 2
                   else f"nights {self.nights + 1} to {t - 1}")
            raise ContinualError(f"night {t} skips {gap}: add it first, or pass "
                                 "fill_gaps=True to add the skipped nights as empty ones")
        return t

    def check(self, day: object, night: int | None = None, *, fill_gaps: bool = False) -> int:
        """Every refusal :meth:`add` could raise for this night and input (the night, the
        budget of a release still to charge, the input's columns and dtypes), with no side
        effect: nothing read but the schema, charged or drawn. Returns the night."""
        t = self._night(night, fill_gaps)
        if t <= self.nights:
            return t
        if self.entry is None:
            self.session.require(PrivacyCost(self.epsilon))
        self._plan(self._backend(day))
        return t

    def _release_night(self, night: int, exact: Mapping[Node, list[int]]) -> None:
        """Charge nothing (a zero-cost chained entry), add the noise, record the nodes."""
        entry = self.session.charge(PrivacyCost(0), query=f"{self._label()} night {night}",
                                    columns=self._columns(),
                                    mechanism=f"{MECHANISM} (nodes of night {night})",
                                    privacy_unit=self.privacy_unit)
        noisy = add_node_noise(self.spec, exact, self.session.rng)
        self._nodes.update(noisy)
        self._entries[night] = entry
        self.session.record(entry, status="released", details={
            "continual_of": self.entry, "continual_name": self.name, "night": night,
            "nodes": [[j, k, v] for (j, k), v in sorted(noisy.items())]})

    def _rows(self, day: pd.DataFrame) -> pd.DataFrame:
        """The night's rows after bounding each unit to the rows it has left of ``T`` over
        the horizon (chosen at random); the tally after the night goes to ``_pending``."""
        self._pending = dict(self._tally)
        if self.privacy_unit is None:
            return day
        gen = self.session.rng.sampling_generator()
        assert gen is not None
        shuffled = day.iloc[gen.permutation(len(day))]
        kind = PandasBackend(day).schema([self.privacy_unit])[self.privacy_unit]
        # one unit, one identity: the core's canonical value (1, 1.0 and True are one unit);
        # a missing or non-conforming unit drops its rows
        labels = shuffled[self.privacy_unit].map(lambda v: canonical(v, kind))
        present = labels.notna().to_numpy()
        ids = labels.map(repr)
        rank = ids.groupby(ids.to_numpy()).cumcount().to_numpy()
        used = ids.map(lambda u: self._tally.get(u, 0)).to_numpy(dtype=np.int64)
        keep = present & (rank < self.rows_per_unit - used)
        for u, n in ids[keep].value_counts().items():
            self._pending[str(u)] = self._pending.get(str(u), 0) + int(n)
        return shuffled[keep]

    def _backend(self, day: object) -> Backend:
        """The night's input as a backend: a pandas DataFrame, or a ``dpf.scan`` (Arrow
        batches; read into pandas when a unit's rows are bounded over the horizon)."""
        from .scan import Scan

        if isinstance(day, pd.DataFrame):
            return PandasBackend(day)
        if isinstance(day, Scan):
            if self.privacy_unit is None:
                return day.backend
            import pyarrow as pa

            cols = [c for c in self._columns() if c in day.columns]
            table = pa.Table.from_batches(list(day.source.batches(cols, 1 << 20)),
                                          schema=pa.schema([day.schema.field(c) for c in cols]))
            return PandasBackend(table.to_pandas())
        raise ValidationError("add() takes the night's rows as a pandas DataFrame or a "
                              "dpf.scan")

    def _leaves(self, day: object) -> list[int]:
        """The night's exact leaves (one per key), on the noise lattice. Every refusal (the
        columns, their dtypes) comes before anything is charged or drawn; an operational
        fault of the read is an :class:`~dpframe.errors.InputError`."""
        try:
            backend = self._backend(day)
        except OSError as exc:
            raise InputError(f"cannot read the night's input ({type(exc).__name__}); nothing "
                             "was charged") from None
        plan, cols = self._plan(backend)
        if isinstance(backend, PandasBackend):
            backend = PandasBackend(self._rows(backend.df))
        else:
            self._pending = dict(self._tally)
        req = plan.measures[0].requests[0] if self._request is None else self._request
        try:
            exact = backend.bind(cols).exact(replace(plan.compute, requests=(req,)), None)
        except OSError as exc:
            raise InputError(f"cannot read the night's input ({type(exc).__name__}); nothing "
                             "was charged") from None
        return self.spec.lattice(np.asarray(exact.values[req.key]).tolist())

    def _plan(self, backend: Backend) -> tuple[Any, list[str]]:
        """The exact half's plan on ``backend``'s schema: every refusal of the input."""
        schema = backend.schema()
        for c in self._columns():
            if c not in schema:
                raise UnknownColumnError(f"unknown column {c!r}", c)
        query, cols = self._query()
        plan = plan_release(query, "add_remove", backend.schema(cols))  # the schema's checks
        if self._request is not None and self.integer and \
                plan.measures[0].requests[0].integer is False:
            raise ValidationError(f"integer=True needs an integer column; {self.column!r} is "
                                  "not one")
        return plan, cols

    def _query(self) -> tuple[Query, list[str]]:
        """The exact half's query (row level: units are bounded over the horizon first) and
        the columns it reads."""
        measure: Measure[Any] = (Measure("count") if self.column is None
                                 else Measure("sum", self.column))
        bounds: dict[str, tuple[float, float]] = {}
        if self.column is not None and self.bounds is not None:
            bounds[self.column] = (float(self.bounds[0]), float(self.bounds[1]))
        by = () if self.by is None else (self.by,)
        keys = {} if self.by is None else {self.by: self.keys}
        query = Query((measure,), Fraction(1), bounds=bounds, by=by, keys=keys)
        return query, [c for c in (self.by, self.column) if c is not None]

    # -- results ---------------------------------------------------------------------------

    def result(self, night: int | None = None) -> DPInt | DPFloat | pd.DataFrame:
        """The running total of nights ``1..night`` (default: the last added), from the
        recorded nodes (post-processing only: nothing read, drawn or charged)."""
        t = self.nights if night is None else _check_int(night, "night", 1, self.nights)
        if t < 1:
            raise ContinualError("no night has been added yet")
        g = float(self.spec.noise.granularity)
        nodes = {n: np.asarray(v, dtype=np.float64) for n, v in self._nodes.items()}
        est = prefix_estimate(nodes, t) * g
        hw = self.spec.half_width(t, self.level)
        vals: np.ndarray = est
        lower, upper = est - hw, est + hw
        if self.spec.integer:  # the total is an integer: the interval's integers keep its cover
            vals, lower, upper = np.rint(est).astype(np.int64), np.ceil(lower), np.floor(upper)
        prov = self._provenance(t, hw)
        prov["values_digest"] = values_digest([vals])
        if self.by is None:
            cls = DPInt if self.spec.integer else DPFloat
            return cls(vals[0].item(), provenance=prov, lower=float(lower[0]),
                       upper=float(upper[0]))
        index = pd.Index(list(self.keys), name=self.by)
        out = pd.DataFrame({self.op: vals, "lower": lower, "upper": upper}, index=index)
        out.attrs["dp"] = prov
        return out

    def _provenance(self, night: int, half_width: float) -> dict[str, Any]:
        noise = self.spec.noise
        entry = self._entries.get(night)
        head = getattr(self.session.ledger_store, "chain_head_of", None)
        measure = {
            "aggregate": self.op, "column": self.column, "mechanism": "continual binary tree",
            "epsilon": float(self.epsilon), "delta": 0.0, "noise_scale": noise.scale,
            "granularity": float(noise.granularity), "sensitivity": float(
                self.spec.levels * self.spec.level_sensitivity),
            "ci_level": self.level, "ci_half_width": half_width,
            "bounds": None if self.bounds is None else [float(b) for b in self.bounds]}
        return {
            "query": f"{self._label()} night {night}", "relation": self.session.neighbouring,
            "delta": 0.0, "measures": [measure],
            "ledger_head": None if head is None or entry is None else head(entry),
            "mechanism": f"{MECHANISM} (geometric), Honaker's estimate",
            "continual": self.name, "night": night, "horizon": self.horizon,
            "levels": self.spec.levels, "epsilon": float(self.epsilon),
            "epsilon_covers": f"all {self.horizon} nights", "noise_scale": noise.scale,
            "granularity": float(noise.granularity),
            "level_sensitivity": float(self.spec.level_sensitivity),
            "std": math.sqrt(self.spec.variance(night)), "ci_level": self.level,
            "ci_half_width": half_width, "ledger_entry": self.entry,
            "night_entry": self._entries.get(night), "session": self.session.name,
            "seeded": self.session.seeded, "privacy_unit": self.privacy_unit,
            "max_rows_per_unit": self.rows_per_unit,
            "bounds": None if self.bounds is None else [float(b) for b in self.bounds],
        }

    def __repr__(self) -> str:
        return (f"Continual({self._label()}, horizon={self.horizon}, "
                f"epsilon={float(self.epsilon):g}, nights={self.nights})")


__all__ = ["Continual"]
