"""How a chained row is encoded for its hash, by schema version (the ``version`` of the
``dpframe_schema`` row, also in SQLite's header as ``PRAGMA user_version``).

Both formats hash the same fields of a row: ``row_hash = sha256(encoding of (table, seq, id,
prev_hash, *hashed values))``, the hashed values being :data:`.schema.CHAINED`'s columns in
that order; only the encoding differs.

- **Schema 4** (:func:`row_hash_4`, every new ledger): schema 3's encoding, each entry's
  ``event`` column (the versioned JSON of its privacy event, :mod:`dpframe.core.accountant`)
  appended to its hashed values, so an edited event breaks the chain.
- **Schema 3** (:func:`row_hash_3`, dpframe 0.3's ledgers, which keep it): the ASCII
  representation of the tuple ``(table, seq, id, prev_hash, *values)`` as Python's ``ascii()``
  writes it, UTF-8 bytes hashed. Each value is a self-delimiting literal: ``None``, a decimal
  integer, a quoted string with every non-ASCII character escaped (``\\xNN``, ``\\uNNNN``,
  ``\\UNNNNNNNN``, so it does not depend on the Unicode tables), ``1.0`` for a float, ``b'...'``
  for a blob; so the encoding is injective: two rows that differ in any field, or in a field's
  type, differ in their encoding. It is one C call per row (JSON costs a few times more), and
  the chain's genesis hash names the version, so a schema-3 ledger relabelled as schema 2 fails
  its first row.
- **Schema 2** (:func:`row_hash_2`, dpframe 0.2's ledgers, which keep it: re-chaining them would
  change the chain heads their releases carry): ``sha256(prev_hash + "\\n" + JSON of [table,
  seq, id, *values])`` (``ensure_ascii``, no spaces), kept here verbatim.

Rows are fetched for verification in one layout for every table (:data:`ROW_SQL`): ``row_hash,
table, seq, id, prev_hash, *values`` (then the entry's ``status`` and ``details`` copy), so a
row's encoding is a slice of what SQLite returned.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from operator import itemgetter, methodcaller
from typing import Any

from .schema import CHAINED

_ZERO_HASH = "0" * 64
_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))  # json.dumps's output
_sha256 = hashlib.sha256

#: A chained row as fetched for verification: ``row_hash, table, seq, id, prev_hash, *values``.
Row = tuple[Any, ...]
#: Where a row's hashed part ends, by table (``values`` start at index 5).
WIDTH = {table: 5 + len(cols) for table, cols in CHAINED.items()}

#: The columns of each table's rows in the verification layout.
ROW_COLUMNS = {
    table: f"row_hash, '{table}', seq, id, prev_hash, {', '.join(cols)}"
    + (", status, details" if table == "entries" else "")
    for table, cols in CHAINED.items()
}
#: The SELECT of each table's rows in the verification layout (a WHERE to be added), schemas
#: 2 and 3: an entry's row ends with ``NULL`` where schema 4 has its event.
ROW_SQL = {table: f"SELECT {cols}" + (", NULL" if table == "entries" else "") + f" FROM {table}"
           for table, cols in ROW_COLUMNS.items()}
#: Schema 4's: an entry's row ends with its ``event`` (hashed, :func:`row_hash_4`).
ROW_SQL_4 = {table: f"SELECT {cols}" + (", event" if table == "entries" else "") + f" FROM {table}"
             for table, cols in ROW_COLUMNS.items()}
#: Where an entry's event sits in the verification layout (after ``status, details``).
EVENT_AT = WIDTH["entries"] + 2


def row_sql(version: int) -> dict[str, str]:
    """The verification SELECTs of a ledger of schema ``version``."""
    return ROW_SQL_4 if version >= 4 else ROW_SQL


def canon(values: Iterable[Any]) -> str:
    """The JSON text of ``values`` as a list (schema 2's row encoding; also the seals')."""
    return _ENCODER.encode(values if isinstance(values, list) else list(values))


def sha(text: str) -> str:
    """SHA-256 of ``text`` (UTF-8), hex."""
    return _sha256(text.encode("utf-8")).hexdigest()


# -- schema 3 --------------------------------------------------------------------------------

def row_hash_3(row: Row, width: int) -> str:
    """The schema-3 hash of ``row`` (verification layout) whose hashed part ends at ``width``:
    ``sha256(ascii((table, seq, id, prev_hash, *values)))``."""
    return _sha256(ascii(row[1:width]).encode()).hexdigest()


def hashes_3(rows: list[Row], width: int) -> list[str]:
    """:func:`row_hash_3` of every row of ``rows`` (one table's), in one C-level pass."""
    part = itemgetter(slice(1, width))
    return list(map(_hexdigest, map(_sha256, map(str.encode, map(ascii, map(part, rows))))))


_hexdigest = methodcaller("hexdigest")


def genesis_3(app: Any, created: Any, neighbouring: Any, ledger_id: Any) -> str:
    """The ``prev_hash`` of a schema-3 ledger's first row: its identity, its neighbouring
    relation and the version (a relabelled version changes it)."""
    return _sha256(ascii(("genesis", 3, app, created, neighbouring, ledger_id)).encode()
                   ).hexdigest()


# -- schema 4 --------------------------------------------------------------------------------

def _part_4(row: Row, width: int) -> tuple[Any, ...]:
    part = tuple(row[1:width])
    return (*part, row[EVENT_AT]) if row[1] == "entries" else part


def row_hash_4(row: Row, width: int) -> str:
    """The schema-4 hash of ``row``: schema 3's encoding, an entry's ``event`` (its versioned
    privacy-event JSON text) appended to its hashed values: ``sha256(ascii((table, seq, id,
    prev_hash, *values[, event])))``."""
    return _sha256(ascii(_part_4(row, width)).encode()).hexdigest()


def hashes_4(rows: list[Row], width: int) -> list[str]:
    """:func:`row_hash_4` of every row of ``rows`` (one table's)."""
    return [row_hash_4(r, width) for r in rows]


def genesis_4(app: Any, created: Any, neighbouring: Any, ledger_id: Any) -> str:
    """The ``prev_hash`` of a schema-4 ledger's first row (the version named, as schema 3)."""
    return _sha256(ascii(("genesis", 4, app, created, neighbouring, ledger_id)).encode()
                   ).hexdigest()


# -- schema 2 (dpframe 0.2), kept verbatim ---------------------------------------------------

def legacy_row_hash(prev: str, table: str, seq: int, rid: int, values: Iterable[Any]) -> str:
    """Schema 2's ``sha256(prev_hash || canonical serialization)`` of one chained row."""
    return sha(prev + "\n" + canon([table, seq, rid, *values]))


def row_hash_2(row: Row, width: int) -> str:
    """:func:`legacy_row_hash` of ``row`` in the verification layout ("" when a value is of no
    type dpframe writes, a blob: no hash matches it)."""
    try:
        return legacy_row_hash(row[4], row[1], row[2], row[3], row[5:width])
    except (TypeError, ValueError):
        return ""


def hashes_2(rows: list[Row], width: int) -> list[str]:
    """:func:`row_hash_2` of every row of ``rows`` (one table's)."""
    return [row_hash_2(r, width) for r in rows]


def genesis_2(app: Any, created: Any, neighbouring: Any, ledger_id: Any) -> str:
    """The ``prev_hash`` of a schema-2 ledger's first row: the ledger's identity and
    neighbouring relation."""
    return sha(_ZERO_HASH + "\n" + canon(["genesis", app, created, neighbouring, ledger_id]))


#: The row hash and the genesis hash of each chained schema version.
ROW_HASH: dict[int, Callable[[Row, int], str]] = {2: row_hash_2, 3: row_hash_3, 4: row_hash_4}
HASHES: dict[int, Callable[[list[Row], int], list[str]]] = {
    2: hashes_2, 3: hashes_3, 4: hashes_4}
GENESIS: dict[int, Callable[[Any, Any, Any, Any], str]] = {
    2: genesis_2, 3: genesis_3, 4: genesis_4}
