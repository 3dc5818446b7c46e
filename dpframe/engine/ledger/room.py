"""Room for an outcome, reserved in its charge's own transaction (issue 36, item 3).

A release's outcome (``released`` / ``failed``) is recorded after its charge committed. If the
disk filled up in between, recording it used to fail with the charge standing and the release
lost. So every charged entry also gets ``ROOM_BYTES`` of zeros in ``outcome_room``, written in
the charge's transaction; recording the outcome deletes that row in its own transaction, so
the outcome's new rows and pages reuse the pages it frees. In WAL mode the database file grows
only when a checkpoint copies pages into it, and the write-ahead log grows only when a commit
writes frames past its end. After each charge and each outcome this connection checkpoints
(``PRAGMA wal_checkpoint(PASSIVE)``), so the next write restarts the log at its first frame; a
charge wrote at least as many frames as the outcomes of its entries will. Recording the outcome
of an entry charged in this process (details up to ``MAX_DETAILS`` bytes of JSON) therefore
writes no byte past the end of the ledger, its ``-wal`` or its ``-shm`` file: it succeeds on a
full disk (tests/engine/ledger/test_outcome_room.py checks the sizes and runs it under a file-size
limit).

What is not covered: a copy-on-write file system (btrfs, ZFS) needs new blocks even to
overwrite; another process reading or writing the ledger between the charge and the outcome
can keep the log from restarting; larger details. Then recording may still fail: the entry stays
``charged`` and :class:`~dpframe.errors.OutcomeNotRecordedError` says that its budget is spent.
The room rows are not part of the hash chain (they hold nothing but zeros).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

#: Zeros reserved per charged entry until its outcome is recorded (16 pages of 4 KiB): the
#: outcome row, the entry's copy of its details, index entries and page splits fit in them.
ROOM_BYTES = 64 * 1024
#: The largest outcome details (JSON bytes) the room is sized for.
MAX_DETAILS = 16 * 1024

_TABLE = ("CREATE TABLE IF NOT EXISTS outcome_room "
          "(entry_id INTEGER PRIMARY KEY, room BLOB NOT NULL)")


def reserve(conn: sqlite3.Connection, entry_ids: Iterable[int]) -> None:
    """Reserve the room of each charged entry (in the charge's transaction)."""
    conn.execute(_TABLE)
    conn.executemany("INSERT OR REPLACE INTO outcome_room (entry_id, room) "
                     "VALUES (?, zeroblob(?))", [(int(e), ROOM_BYTES) for e in entry_ids])


def free(conn: sqlite3.Connection, entry_id: int) -> None:
    """Free the room of ``entry_id`` (first thing in the transaction recording its outcome)."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                          "name = 'outcome_room'").fetchone()
    if exists is not None:
        conn.execute("DELETE FROM outcome_room WHERE entry_id = ?", (int(entry_id),))


def checkpoint(conn: sqlite3.Connection) -> bool:
    """Copy the write-ahead log into the database (outside any transaction) so that the next
    write restarts the log at its first frame; True when every frame was copied. Best effort:
    a failure (a full disk) leaves the log as it was and is not an error."""
    try:
        row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    except sqlite3.Error:
        return False
    return row is not None and row[0] == 0 and row[1] == row[2]
