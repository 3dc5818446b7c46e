"""Run ids: idempotent runs of a spec, replayed from the ledger (``dpframe run --run-id ID``).

The first run with an id records, in each query's ledger outcome (``details["run"]``, a JSON
object covered by the hash chain), the release file's exact bytes (zlib, base64) and their
SHA-256, with a digest of the spec and of the input. A later run with the same id charges
nothing and draws no noise: it rewrites from those bytes every release file that is missing
or whose bytes differ (an intact file is left alone), after checking that the spec and the
input are those of the first run (:class:`~dpframe.errors.RunIdError` otherwise, before
anything is charged or written).

What the record holds is released values (the files the first run wrote: DP outputs with
their public provenance) and two digests. The spec's digest is public. The input's digest is
a function of the private data: a ledger that holds one must be kept like the data (with
guesses of the whole input it confirms the right one); dpframe never prints it
(docs/privacy.md, "Run ids").
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import RunIdError
from ..export import atomic_write, to_arrow
from .spec_errors import SpecError

if TYPE_CHECKING:
    from ..core.apply import CoreRelease
    from .spec import ReleaseSpec

#: The key of the run record in a ledger outcome's details, and its format version.
RECORD_KEY = "run"
RECORD_FORMAT = 1
#: Placeholders of a run id: the run's UTC date and the spec's release name.
PLACEHOLDERS = ("date", "name")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,127}")
#: Spec fields that do not change what a run releases (where it reads and writes, how fast)
_NOT_RELEASED = ("path", "ledger", "output_dir", "input_paths", "batch_size", "partitions",
                 "partition_rows", "spill_dir", "input_engine", "run_id")
_CHUNK = 1 << 20


def resolve_run_id(template: str, name: str, now: datetime) -> str:
    """The run id ``template`` with ``{date}`` (``now``'s UTC date, YYYY-MM-DD) and ``{name}``
    (the spec's release name) filled in: 1 to 128 characters among letters, digits and
    ``._:@+=-``, starting with a letter or digit (a :class:`SpecError` otherwise)."""
    try:
        run_id = template.format(date=now.strftime("%Y-%m-%d"), name=name)
    except (KeyError, IndexError, ValueError, AttributeError):
        raise SpecError("a run id may only use the placeholders {date} and {name}") from None
    if not _ID.fullmatch(run_id):
        raise SpecError("a run id is 1 to 128 letters, digits or ._:@+=- (starting with a "
                        "letter or digit)")
    return run_id


def spec_digest(spec: ReleaseSpec) -> str:
    """SHA-256 of what the spec releases: its budget, privacy unit, bounds, keys, queries,
    seed and output format (not where it reads or writes, nor comments or layout)."""
    fields = {k: v for k, v in dataclasses.asdict(spec).items() if k not in _NOT_RELEASED}
    text = json.dumps(fields, sort_keys=True, default=str, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def input_digest(spec: ReleaseSpec, files: Sequence[str] | None) -> str:
    """SHA-256 of the input: each file's bytes in the scan's order (each prefixed by its
    length), or the description of ``[input] generate`` (deterministic synthetic data)."""
    h = hashlib.sha256()
    if files is None:
        g = spec.input_generate
        if g is None:
            raise SpecError("a run id needs input files or [input] generate (a Spark table "
                            "has no digest to check a re-run against)")
        h.update(json.dumps(["generate", g.dataset, g.people, g.seed]).encode())
        return "sha256:" + h.hexdigest()
    for name in files:
        try:
            with open(name, "rb") as f:
                h.update(os.fstat(f.fileno()).st_size.to_bytes(8, "little"))
                while chunk := f.read(_CHUNK):
                    h.update(chunk)
        except OSError as exc:
            raise SpecError(f"cannot read the input to check the run id "
                            f"({type(exc).__name__})") from None
    return "sha256:" + h.hexdigest()


@dataclass(frozen=True)
class RunIdentity:
    """A run's id and the digests a re-run with that id must match."""

    id: str
    spec: str  # spec_digest
    input: str  # input_digest


def release_bytes(release: CoreRelease, output_format: str) -> bytes:
    """The release file's bytes, as ``to_parquet`` / ``to_ipc`` write them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = to_arrow(release)
    sink = pa.BufferOutputStream()
    if output_format == "parquet":
        pq.write_table(table, sink, compression="snappy", write_page_checksum=True)
    else:
        with pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def record(run: RunIdentity, query: str, file: Path, data: bytes) -> dict[str, Any]:
    """The run record of one query's release (stored in its ledger outcome's details)."""
    return {"format": RECORD_FORMAT, "id": run.id, "spec_digest": run.spec,
            "input_digest": run.input, "query": query, "file": file.name,
            "folder": str(file.parent), "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": "zlib+base64:" + base64.b64encode(zlib.compress(data, 9)).decode()}


def record_bytes(rec: Mapping[str, Any]) -> bytes:
    """The release file's bytes held by ``rec`` (checked against its SHA-256)."""
    text = str(rec.get("bytes", ""))
    try:
        if not text.startswith("zlib+base64:"):
            raise ValueError
        data = zlib.decompress(base64.b64decode(text[len("zlib+base64:"):], validate=True))
    except (ValueError, zlib.error):
        raise RunIdError(f"run {rec.get('id')!r}: the ledger's record of query "
                         f"{rec.get('query')!r} is unreadable") from None
    if hashlib.sha256(data).hexdigest() != rec.get("sha256"):
        raise RunIdError(f"run {rec.get('id')!r}: the ledger's record of query "
                         f"{rec.get('query')!r} does not match its digest")
    return data


def recorded(entries: Sequence[Mapping[str, Any]], run_id: str) -> list[dict[str, Any]]:
    """The run records of ``run_id`` in the ledger's (verified) entries, in entry order; each
    with the entry's ``ledger_entry`` id. Only released entries hold one."""
    out = []
    for e in entries:
        rec = (e.get("details") or {}).get(RECORD_KEY)
        if e.get("status") == "released" and isinstance(rec, dict) and rec.get("id") == run_id:
            out.append({**rec, "ledger_entry": int(e["id"])})
    return out


def check_replay(records: Sequence[Mapping[str, Any]], run: RunIdentity | None,
                 spec_sha: str) -> None:
    """Refuse (:class:`RunIdError`, nothing charged or written) a re-run whose spec or input
    differs from the first run's. The input is compared only when ``run`` is given (a dry run
    does not read the input)."""
    rid = records[0]["id"]
    if any(r["spec_digest"] != spec_sha for r in records):
        raise RunIdError(f"run id {rid!r} was released by another spec (its queries, budget, "
                         "bounds, keys or privacy unit differ): a run id replays one spec; "
                         "use a new run id to release this one")
    if run is not None and any(r["input_digest"] != run.input for r in records):
        raise RunIdError(f"run id {rid!r} was released from another input (the input files "
                         "changed since): use a new run id to release this input")


@dataclass(frozen=True)
class Restored:
    """One file of a replay: ``action`` is "restored" (missing or damaged, rewritten from
    the ledger), "intact" (its bytes are the recorded ones: left alone) or, in a dry run,
    "would restore"."""

    query: str
    path: Path
    action: str
    ledger_entry: int


def restore(rec: Mapping[str, Any], folder: Path, *, write: bool = True) -> Restored:
    """Rewrite ``rec``'s file in ``folder`` from the ledger unless its bytes are intact
    (``write=False``: only say so, as "would restore")."""
    path = folder / str(rec["file"])
    if _sha256_of(path) == rec["sha256"]:
        return Restored(str(rec["query"]), path, "intact", int(rec["ledger_entry"]))
    data = record_bytes(rec)
    if not write:
        return Restored(str(rec["query"]), path, "would restore", int(rec["ledger_entry"]))
    folder.mkdir(parents=True, exist_ok=True)
    write_bytes(path, data)
    return Restored(str(rec["query"]), path, "restored", int(rec["ledger_entry"]))


def write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (``OutputError`` on a full disk)."""
    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(data)

    return atomic_write(path, write)


def _sha256_of(path: Path) -> str | None:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
    except OSError:  # missing, a folder, unreadable: rewritten
        return None
    return h.hexdigest()


__all__ = ["PLACEHOLDERS", "RECORD_KEY", "Restored", "RunIdentity", "check_replay",
           "input_digest", "record", "record_bytes", "recorded", "release_bytes",
           "resolve_run_id", "restore", "spec_digest", "write_bytes"]
