"""The SQLite ledger under interrupts: real SIGINT and SIGKILL in subprocesses, and an
exception injected after every SQL statement of every transaction.

What must hold (docs/privacy.md, Budget): an interrupt at any point leaves the ledger unlocked and
consistent (0 wedged sessions: the interrupted process's own next charge works; 0 blocked
processes: another process can charge within a second), and a crash never loses a charge (no
query is answered without its charge on disk).
"""

from __future__ import annotations

import linecache
import os
import queue
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dpframe
import dpframe.engine.ledger.connection as ledger_module
from dpframe.core.accounting import PrivacyCost
from dpframe.engine.ledger import SqliteLedger

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

COST = PrivacyCost(Fraction(1, 1000))
META = {"query": "count", "columns": ["age"], "mechanism": "geometric"}
_ROOT = str(Path(dpframe.__file__).resolve().parent.parent)

_PRELUDE = """
import os, random, signal, sys, time
from fractions import Fraction
from dpframe.core.accounting import PrivacyCost
from dpframe.engine.ledger import SqliteLedger
signal.signal(signal.SIGINT, signal.default_int_handler)
COST = PrivacyCost(Fraction(1, 1000))
def out(s):
    os.write(1, (s + "\\n").encode())
"""

# Waits for another writer's lock when told to, and is interrupted there.
_WAITER = _PRELUDE + """
led = SqliteLedger(sys.argv[1], timeout=30)
out("ready")
sys.stdin.readline()
try:
    out("waiting")
    led.charge(COST, {"query": "first"})
    out("charged")
except KeyboardInterrupt:
    out("interrupted")
sys.stdin.readline()
try:
    i = led.charge(COST, {"query": "second"})
    led.record(i, "released", {})
    out(f"ok {i}")
except Exception as exc:
    out(f"error {exc}")
sys.stdin.readline()
out("bye")
"""

# N charge+record operations with random pauses; every KeyboardInterrupt is caught (wherever it
# lands) and the loop goes on.
_WORKER = _PRELUDE + """
led = SqliteLedger(sys.argv[1], timeout=30)
N = int(sys.argv[2])
state = {"n": 0}
def run():
    while state["n"] < N:
        state["n"] += 1
        time.sleep(random.random() * 0.003)
        try:
            i = led.charge(COST, {"query": "w", "privacy_unit": "rows"})
            out(f"A {i}")
            time.sleep(random.random() * 0.002)
            led.record(i, "released", {"noise_scale": 1.0})
            out(f"R {i}")
        except Exception as exc:
            out(f"E {type(exc).__name__}: {exc}")
out("ready")
while True:
    try:
        run()
        break
    except KeyboardInterrupt:
        out("I")
signal.signal(signal.SIGINT, signal.SIG_IGN)
out("DONE")
"""

# Charges on request, with a one-second lock timeout, and says how long it took.
_PROBER = _PRELUDE + """
led = SqliteLedger(sys.argv[1], timeout=1.0)
out("ready")
for line in sys.stdin:
    if line.strip() == "q":
        break
    t = time.monotonic()
    try:
        i = led.charge(COST, {"query": "probe", "privacy_unit": "rows"})
        led.record(i, "released", {})
        out(f"ok {time.monotonic() - t:.3f}")
    except Exception as exc:
        out(f"E {time.monotonic() - t:.3f} {type(exc).__name__}: {exc}")
"""

# Keeps the ledger busy (so the worker often waits for the lock) until killed.
_COMPETITOR = _PRELUDE + """
led = SqliteLedger(sys.argv[1], timeout=30)
out("ready")
while True:
    time.sleep(random.random() * 0.004)
    i = led.charge(COST, {"query": "c", "privacy_unit": "rows"})
    led.record(i, "released", {})
"""

# Answers (prints "A id") only once its charge has returned; killed at a random instant.
_KILLED = _PRELUDE + """
led = SqliteLedger(sys.argv[1], timeout=30)
out("ready")
while True:
    i = led.charge(COST, {"query": "k"})
    out(f"A {i}")
    led.record(i, "released", {"noise_scale": 1.0})
"""


class Child:
    """A Python subprocess speaking one line per message on stdout."""

    def __init__(self, code: str, *args: str, tmp: Path) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([_ROOT, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        self.err_path = tmp / f"stderr-{id(self)}.txt"
        self._err = open(self.err_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._err, env=env, cwd=str(tmp),
        )
        self.lines: list[str] = []
        self._q: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self._q.put(raw.decode().rstrip("\n"))
        self._q.put(None)

    def expect(self, *prefixes: str, timeout: float = 20.0) -> str | None:
        """The next line starting with one of ``prefixes`` (None on timeout or exit)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                line = self._q.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                self._q.put(None)
                return None
            self.lines.append(line)
            if line.startswith(prefixes):
                return line

    def send(self, line: str = "") -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()

    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")[-2000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        self._err.close()


@pytest.fixture
def children(tmp_path: Path) -> Iterator[Any]:
    made: list[Child] = []

    def spawn(code: str, *args: str) -> Child:
        c = Child(code, *args, tmp=tmp_path)
        made.append(c)
        return c

    yield spawn
    for c in made:
        c.stop()


def _can_write_now(path: Path) -> bool:
    """Whether another connection gets the write lock at once."""
    con = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        con.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        con.close()


# ---- real signals ---------------------------------------------------------------------------


def test_sigint_while_waiting_for_another_writers_lock(tmp_path: Path, children: Any) -> None:
    path = tmp_path / "l.sqlite"
    SqliteLedger(path, 10).close()
    waiter = children(_WAITER, str(path))
    assert waiter.expect("ready"), waiter.stderr()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process is writing
    waiter.send()
    assert waiter.expect("waiting")
    time.sleep(0.3)  # the waiter is now waiting for the lock
    sent = time.monotonic()
    assert waiter.proc.pid is not None
    os.kill(waiter.proc.pid, signal.SIGINT)
    line = waiter.expect("interrupted", "charged", timeout=2.0)
    took = time.monotonic() - sent
    holder.execute("ROLLBACK")  # the other writer is done
    holder.close()
    if line is None:
        line = waiter.expect("interrupted", "charged", timeout=10.0)
    waiter.send()
    second = waiter.expect("ok", "error", timeout=10.0)
    # the interrupted process is still alive: can another process charge within a second?
    started = time.monotonic()
    try:
        other = SqliteLedger(path, timeout=1.0)
        other.charge(COST, META)
        other.close()
        third = "ok"
    except Exception as exc:
        third = f"{type(exc).__name__}: {exc}"
    third_took = time.monotonic() - started
    waiter.send()
    waiter.expect("bye", timeout=10.0)
    outcome = {"interrupt": line, "interrupt handled after (s)": round(took, 3),
               "its next charge": second, "another process": third,
               "another process took (s)": round(third_took, 3)}
    assert line == "interrupted", outcome
    assert took < 1.0, outcome  # Ctrl-C ends the wait at once, not when the lock is released
    assert second is not None and second.startswith("ok"), outcome  # not wedged
    assert third == "ok" and third_took < 1.0, outcome  # nobody blocked
    led = SqliteLedger(path)
    assert [e["query"] for e in led.entries()] == ["second", "count"]  # 'first' charged nothing
    led.verify()
    led.close()


def test_sigint_at_random_points_never_wedges_or_blocks(tmp_path: Path, children: Any) -> None:
    path = tmp_path / "storm.sqlite"
    SqliteLedger(path, 10**6).close()
    worker = children(_WORKER, str(path), "400")
    prober = children(_PROBER, str(path))
    competitor = children(_COMPETITOR, str(path))
    for c in (worker, prober, competitor):
        assert c.expect("ready"), c.stderr()
    assert worker.proc.pid is not None
    rng = random.Random(20260522)
    interrupts = 0
    probes: list[str] = []
    deadline = time.monotonic() + 60
    done = False
    while not done and time.monotonic() < deadline:
        time.sleep(rng.uniform(0.005, 0.03))
        os.kill(worker.proc.pid, signal.SIGINT)
        line = worker.expect("I", "DONE", timeout=10)
        if line != "I":
            done = True
            break
        interrupts += 1
        prober.send("c")
        probes.append(prober.expect("ok", "E", timeout=10) or "E no answer")
    if not done:
        assert worker.expect("DONE", timeout=60), worker.stderr()
    assert worker.proc.wait(timeout=10) == 0, worker.stderr()
    competitor.stop()
    prober.send("q")
    prober.proc.wait(timeout=10)

    wedged = [x for x in worker.lines if x.startswith("E")]
    blocked = [p for p in probes if not p.startswith("ok") or float(p.split()[1]) >= 1.0]
    assert not wedged, (f"{len(wedged)} failed operations after {interrupts} interrupts",
                        wedged[:2])
    assert not blocked, (f"{len(blocked)} of {len(probes)} probes blocked", blocked[:2])
    assert interrupts >= 20, (interrupts, worker.stderr())

    led = SqliteLedger(path)  # verifies the chain
    led.verify()
    rows = led.entries()
    ids = {e["id"] for e in rows}
    answered = {int(x.split()[1]) for x in worker.lines if x.startswith("A ")}
    assert answered <= ids  # every answered query's charge is in the ledger
    pending = [e for e in rows if e["query"] == "w" and e["status"] == "charged"]
    assert len(pending) <= interrupts  # charged without outcome only when interrupted
    assert {e["status"] for e in rows} <= {"charged", "released"}
    assert led.spent() == (Fraction(len(rows), 1000), Fraction(0))
    assert _can_write_now(path)
    led.close()


def test_sigkill_mid_charge_loses_nothing_and_verifies(tmp_path: Path, children: Any) -> None:
    path = tmp_path / "crash.sqlite"
    SqliteLedger(path, 10**6).close()
    rng = random.Random(7)
    answered: set[int] = set()
    for _ in range(5):
        pair = [children(_KILLED, str(path)) for _ in range(2)]  # two writers contend
        for c in pair:
            assert c.expect("ready"), c.stderr()
        time.sleep(rng.uniform(0.05, 0.4))
        for c in pair:
            time.sleep(rng.uniform(0, 0.02))
            assert c.proc.pid is not None
            os.kill(c.proc.pid, signal.SIGKILL)
        for c in pair:
            assert c.proc.wait(timeout=10) == -signal.SIGKILL
            while c.expect("A", timeout=0.2):
                pass
            answered |= {int(x.split()[1]) for x in c.lines if x.startswith("A ")}
        led = SqliteLedger(path)  # opens, verifies the chain
        report = led.verify()
        rows = led.entries()
        ids = [e["id"] for e in rows]
        assert answered <= set(ids)  # no query answered without its charge on disk
        assert len(answered) <= len(ids)
        assert ids == sorted(ids)
        assert report["entries"] == len(rows)
        assert led.spent() == (Fraction(len(rows), 1000), Fraction(0)) == (
            rows[-1]["spent_epsilon"], rows[-1]["spent_delta"])
        led.close()
        with sqlite3.connect(path) as con:
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()
        assert _can_write_now(path)
    assert answered  # the children did answer queries


# ---- an exception after every statement of every transaction ------------------------------


class _Counter:
    def __init__(self, at: int) -> None:
        self.at = at
        self.calls = 0


class _Interrupting:
    """A connection whose ``at``-th ``execute`` runs its statement, then raises
    ``KeyboardInterrupt`` as it returns (a Ctrl-C landing right after the call)."""

    def __init__(self, conn: sqlite3.Connection, counter: _Counter) -> None:
        self._conn = conn
        self._counter = counter

    def execute(self, *args: Any) -> sqlite3.Cursor:
        cur = self._conn.execute(*args)
        self._counter.calls += 1
        if self._counter.calls == self._counter.at:
            raise KeyboardInterrupt
        return cur

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    def close(self) -> None:
        self._conn.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_interrupt_after_any_statement_of_charge_or_record(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    led = SqliteLedger(path, 10, timeout=0.5)
    points = 0
    for op in ("charge", "record", "charge+unit"):
        at = 1
        while True:
            real = led._db._connect()
            pending = led.charge(COST, META) if op == "record" else 0
            led._db._conn = _Interrupting(real, _Counter(at))  # type: ignore[assignment]
            try:
                if op == "record":
                    led.record(pending, "released", {"noise_scale": 1.0})
                else:
                    led.charge(COST, {**META, **({"privacy_unit": "rows"} if "unit" in op
                                                 else {})})
                finished = True
            except KeyboardInterrupt:
                finished = False
            led._db._conn = real
            assert not real.in_transaction, (op, at)  # nothing left open
            assert _can_write_now(path), (op, at)  # nobody blocked
            led.charge(COST, META)  # not wedged
            if hasattr(led, "verify"):
                led.verify()
            rows = led.entries()
            assert led.spent()[0] == Fraction(len(rows), 1000)
            if finished:
                break
            points += 1
            at += 1
    assert points >= 10


def _interrupt_at_line(at: int, fn: Any, *args: Any) -> bool:
    """Run ``fn(*args)``, raising ``KeyboardInterrupt`` at the ``at``-th line it executes in the
    memory ledger's module (a Ctrl-C landing there); True when it finished first.

    Lines of ``with`` statements are passed over: an interrupt as a ``with`` block exits,
    before its ``__exit__`` runs, leaves any lock held (CPython's own caveat, bpo-29988,
    shared by every ``with lock:``); what this checks is the ledger's state, not the lock."""
    import dpframe.engine.ledger.memory as memory

    seen = 0

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal seen
        if frame.f_code.co_filename != memory.__file__:
            return None
        line = linecache.getline(memory.__file__, frame.f_lineno).lstrip()
        if event == "line" and not line.startswith("with "):
            seen += 1
            if seen == at:
                raise KeyboardInterrupt
        return trace

    sys.settrace(trace)
    try:
        fn(*args)
        return True
    except KeyboardInterrupt:
        return False
    finally:
        sys.settrace(None)


@pytest.mark.parametrize("op", ["charge", "charge+unit", "record"])
def test_memory_ledger_interrupted_at_any_line_is_whole_or_untouched(op: str) -> None:
    """An interrupt at any line of a memory-ledger charge or record leaves it consistent: the
    spend is the sum of the entries' charges, every entry's unit is the ledger's, and the
    ledger takes the next charge."""
    from dpframe.engine.ledger.memory import MemoryLedger

    at = 1
    while True:
        led = MemoryLedger(10)
        pending = led.charge(COST, META) if op == "record" else 0
        meta = {**META, "privacy_unit": "column:uid"} if "unit" in op else META
        done = (_interrupt_at_line(at, led.record, pending, "released", {"noise_scale": 1.0})
                if op == "record" else _interrupt_at_line(at, led.charge, COST, meta))
        rows = led.entries()
        assert led.spent() == (Fraction(len(rows), 1000), Fraction(0)), (op, at)
        assert [r["spent_epsilon"] for r in rows] == [Fraction(i + 1, 1000)
                                                      for i in range(len(rows))]
        assert all(r["privacy_unit"] in (None, led.privacy_unit()) for r in rows), (op, at)
        if op == "record":
            assert rows[0]["status"] in ("charged", "released")
        led.charge(COST, meta)  # not wedged
        assert led.spent()[0] == Fraction(len(rows) + 1, 1000)
        if done:
            break
        at += 1
    assert at >= 5


@pytest.mark.parametrize("what", ["create", "budget change", "upgrade"])
def test_interrupt_after_any_statement_of_opening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    real_connect = sqlite3.connect
    at = 1
    while True:
        path = tmp_path / f"{what.replace(' ', '-')}-{at}.sqlite"
        if what == "budget change":
            led = SqliteLedger(path, 1)
            led.charge(COST, META)
            led.close()
        elif what == "upgrade":
            make_schema_1_ledger(path)
        counter = _Counter(at)
        monkeypatch.setattr(ledger_module.sqlite3, "connect",
                            lambda *a, c=counter, **k: _Interrupting(real_connect(*a, **k), c))
        try:
            if what == "create":
                SqliteLedger(path, 1).close()
            elif what == "budget change":
                SqliteLedger(path, 2, allow_budget_change=True).close()
            else:
                SqliteLedger.migrate(path)
            finished = True
        except KeyboardInterrupt:
            finished = False
        monkeypatch.setattr(ledger_module.sqlite3, "connect", real_connect)
        # creation is atomic: no ledger, or a whole one; no temporary file is left behind
        assert not list(tmp_path.glob(".*.creating*")), (what, at)
        assert path.exists() or (what == "create" and not finished), (what, at)
        assert not path.exists() or _can_write_now(path), (what, at)
        if what == "upgrade" and not finished:  # interrupted: schema 1 intact, migrate again
            SqliteLedger.migrate(path)
        led = SqliteLedger(path, 2, allow_budget_change=True) if what == "budget change" \
            else SqliteLedger(path, 1)
        led.verify()
        assert led.spent()[0] == Fraction(len(led.entries()), 1000)
        if what == "budget change":
            assert [h["epsilon"] for h in led.budget_history()] == [1, 2]
        if what == "upgrade":
            assert [e["status"] for e in led.entries()] == ["released", "failed", "charged"]
        led.charge(COST, META)
        led.close()
        if finished:
            break
        at += 1
    assert at >= 5


# ---- a schema-1 ledger, as dpframe 0.1 wrote it ---------------------------------------------

SCHEMA_1 = """
CREATE TABLE dpframe_schema (app TEXT NOT NULL, version INTEGER NOT NULL, created TEXT NOT NULL,
    neighbouring TEXT NOT NULL);
CREATE TABLE budget (id INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL,
    epsilon TEXT NOT NULL, delta TEXT NOT NULL, session TEXT, note TEXT NOT NULL);
CREATE TABLE entries (id INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL, session TEXT,
    query TEXT NOT NULL, columns TEXT NOT NULL, mechanism TEXT NOT NULL,
    requested_epsilon TEXT NOT NULL, requested_delta TEXT NOT NULL, rho TEXT,
    epsilon TEXT NOT NULL, delta TEXT NOT NULL, spent_epsilon TEXT NOT NULL,
    spent_delta TEXT NOT NULL, seeded INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('charged', 'released', 'failed')),
    details TEXT NOT NULL, pid INTEGER);
"""


def make_schema_1_ledger(path: Path, statuses: tuple[str, ...] = ("released", "failed",
                                                                   "charged")) -> None:
    """A ledger exactly as dpframe 0.1 (schema 1) wrote it: budget 1, one entry per status, each
    costing 1/1000."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode = WAL")
    con.executescript(SCHEMA_1)
    con.execute("INSERT INTO dpframe_schema VALUES ('dpframe-ledger', 1, "
                "'2026-01-01T00:00:00.000000+00:00', 'add_remove')")
    con.execute("INSERT INTO budget (time, epsilon, delta, session, note) VALUES "
                "('2026-01-01T00:00:00.000000+00:00', '1/1', '0/1', 'old', 'created')")
    for k, status in enumerate(statuses, start=1):
        details = '{"noise_scale": 1000.0}' if status == "released" else (
            '{"error": "TypeError"}' if status == "failed" else "{}")
        con.execute(
            "INSERT INTO entries (time, session, query, columns, mechanism, requested_epsilon, "
            "requested_delta, rho, epsilon, delta, spent_epsilon, spent_delta, seeded, status, "
            "details, pid) VALUES (?, 'old', 'count', '[\"age\"]', 'geometric', '1/1000', '0/1', "
            "NULL, '1/1000', '0/1', ?, '0/1', 0, ?, ?, 42)",
            (f"2026-01-01T00:00:0{k}.000000+00:00", f"{k}/1000", status, details),
        )
    con.close()
