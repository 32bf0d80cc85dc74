"""Vela's debug database (``--enable-debug-db`` -> ``<model>_debug.xml``): the exact map from each
scheduled operation back to the model operator it came from.

The file is XML, ``<debug source=...>`` holding ``<table name=...>`` elements whose CDATA is a CSV
table with a header row. Both cores write a ``source`` table (``id``, ``operator``, ...,
``ext_key`` = the operator's index in the input model). The default (regor) core also writes
``perf``, one row per row of the per-layer CSV, in the same order, with the ``source_id``. The
legacy core writes ``optimised`` (``id``, ``source_id``, ``operator``) and ``queue`` (``offset``,
``cmdstream_id``, ``optimised_id``: the operations of each command stream in execution order).

``queue.offset`` is the byte offset of the operation's kernel command (``NPU_OP_CONV``, ``_POOL``
...) in its command stream, the unit of the NPU's QREAD register; the default core adds
``scheduled_id``, the ``perf`` row of the operation (its name and estimated cycles).
:func:`command_streams` gives each stream's operations in that order.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import xml.etree.ElementTree as ET

from tracer.budget.command_stream import CommandStream, StreamOperation
from tracer.budget.ops import normalize_op
from tracer.budget.text import BudgetText
from tracer.budget.vela_csv import VelaLayerTable
from tracer.values import is_ascii_digits

MAX_ID = 2**31  # ids, offsets and model indices of a debug database


@dataclasses.dataclass(frozen=True, slots=True)
class SourceOp:
    """An operator of the input model."""

    id: int
    operator: str
    index: int  # ext_key: position in the input model


@dataclasses.dataclass(frozen=True)
class DebugDb:
    """The tables of a debug database that map operations to model operators.

    Attributes:
        sources: Model operators by id.
        perf: (name, source_id) per per-layer CSV row (regor only; empty for legacy).
        optimised: (source_id, operator) by optimised-operation id.
        queue: (cmdstream_id, optimised_id) in execution order (legacy and regor).
        source: The file.
        streams: The command streams with their operations' offsets (:func:`command_streams`).
    """

    sources: dict[int, SourceOp]
    perf: list[tuple[str, int]]
    optimised: dict[int, tuple[int, str]]
    queue: list[tuple[int, int]]
    source: BudgetText
    streams: tuple[CommandStream, ...] = ()


@dataclasses.dataclass(frozen=True)
class RowMapping:
    """What the debug database says about the rows of a per-layer CSV.

    Attributes:
        indices: Model operator index per CSV row.
        operators: Operator type by model index (from the ``source`` table).
        without_rows: Model indices of operators no CSV row belongs to.
    """

    indices: list[int]
    operators: dict[int, str]
    without_rows: list[int]


def is_debug_db(text: str) -> bool:
    """True if the text is a Vela debug database."""
    head = text.lstrip()[:400]
    return (head.startswith("<?xml") and "<debug" in head) or head.startswith("<debug")


def read_debug_db(source: BudgetText) -> DebugDb:
    """Parse the tables needed for the mapping.

    Raises:
        UsageError: Not well-formed XML, no ``source`` table, or a table row that is not numbers
            where ids are expected.
    """
    try:
        root = ET.fromstring(source.text)
    except ET.ParseError as exc:
        line = exc.position[0] if exc.position else 1
        raise source.error(line, f"not well-formed XML ({exc.msg if hasattr(exc, 'msg') else exc})") from None
    if root.tag != "debug":
        raise source.error(1, f"expected a <debug> root element (Vela debug database), got <{root.tag}>")
    tables = {t.get("name", ""): t.text or "" for t in root.iter("table")}
    if "source" not in tables:
        raise source.error(1, "no 'source' table (expected a Vela --enable-debug-db file)")
    line_of = _table_lines(source.text)

    def rows(name: str) -> list[dict[str, str]]:
        reader = csv.DictReader(io.StringIO(tables.get(name, "").strip()))
        try:
            return list(reader)
        except csv.Error as exc:
            raise source.error(
                line_of.get(name, 1) + reader.line_num, f"table '{name}': not a CSV table ({exc})"
            ) from None

    def num(name: str, row: dict[str, str], key: str, k: int) -> int:
        text = row.get(key)
        if isinstance(text, str) and is_ascii_digits(text.strip()) and len(text.strip()) <= 10 and int(text) <= MAX_ID:
            return int(text)
        raise source.error(line_of.get(name, 1) + k + 1, f"table '{name}': expected an integer '{key}' from 0 to 2**31")

    sources = {}
    for k, r in enumerate(rows("source")):
        sid = num("source", r, "id", k)
        sources[sid] = SourceOp(sid, r.get("operator") or "", num("source", r, "ext_key", k))
    perf = [(r.get("name") or "", num("perf", r, "source_id", k)) for k, r in enumerate(rows("perf"))]
    optimised = {
        num("optimised", r, "id", k): (num("optimised", r, "source_id", k), r.get("operator") or "")
        for k, r in enumerate(rows("optimised"))
    }
    queue_rows = [
        (num("queue", r, "cmdstream_id", k), num("queue", r, "offset", k), num("queue", r, "optimised_id", k))
        for k, r in enumerate(rows("queue"))
    ]
    queue = [(c, o) for c, _, o in sorted(queue_rows, key=lambda q: (q[0], q[1]))]  # by stream, then offset
    perf_rows = {num("perf", r, "id", k): r for k, r in enumerate(rows("perf"))}
    scheduled = [
        num("queue", r, "scheduled_id", k) if (r.get("scheduled_id") or "").strip() else None
        for k, r in enumerate(rows("queue"))
    ]
    streams = _streams(queue_rows, scheduled, perf_rows, optimised, sources, source.path)
    return DebugDb(sources, perf, optimised, queue, source, streams)


def command_streams(db: DebugDb) -> tuple[CommandStream, ...]:
    """The command streams of the database, by id, each with its operations in stream order."""
    return db.streams


def _streams(
    queue_rows: list[tuple[int, int, int]],
    scheduled: list[int | None],
    perf_rows: dict[int, dict[str, str]],
    optimised: dict[int, tuple[int, str]],
    sources: dict[int, SourceOp],
    path: str,
) -> tuple[CommandStream, ...]:
    by_stream: dict[int, list[StreamOperation]] = {}
    for (stream, offset, optimised_id), scheduled_id in zip(queue_rows, scheduled):
        perf = perf_rows.get(scheduled_id) if scheduled_id is not None else None
        if perf is not None:
            source_id = _int_or_none(perf.get("source_id"))
            name, operator = perf.get("name") or "", perf.get("operator") or ""
        else:
            source_id, operator = optimised.get(optimised_id, (None, ""))
            name = ""
        src = sources.get(source_id) if source_id is not None else None
        by_stream.setdefault(stream, []).append(
            StreamOperation(
                offset=offset,
                name=name,
                operator=operator,
                model_index=src.index if src else None,
                model_operator=src.operator if src else "",
                op_cycles=_float_or_none(perf.get("op_cycles")) if perf else None,
                npu_cycles=_float_or_none(perf.get("npu_cycles")) if perf else None,
            )
        )
    return tuple(
        CommandStream(sid, tuple(sorted(ops, key=lambda o: o.offset)), path) for sid, ops in sorted(by_stream.items())
    )


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _float_or_none(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def map_rows(db: DebugDb, table: VelaLayerTable) -> RowMapping | str:
    """Give each per-layer CSV row its model operator index.

    Returns:
        The mapping, or a sentence saying why the database does not fit the CSV.
    """
    operators = {s.index: s.operator for s in db.sources.values()}
    indices = _map_regor(db, table) if db.perf else _map_legacy(db, table)
    if isinstance(indices, str):
        return indices
    used = set(indices)
    return RowMapping(indices, operators, sorted(i for i in operators if i not in used))


def _map_regor(db: DebugDb, table: VelaLayerTable) -> list[int] | str:
    if len(db.perf) != len(table.rows):
        return f"its 'perf' table has {len(db.perf)} rows, the per-layer CSV {len(table.rows)}"
    indices = []
    for (name, source_id), row in zip(db.perf, table.rows):
        if name != row.part.name:
            return f"row {row.line} is {row.part.name!r} in the CSV but {name!r} in the database"
        if source_id not in db.sources:
            return f"operation {name!r} refers to unknown source operator {source_id}"
        indices.append(db.sources[source_id].index)
    return indices


def _map_legacy(db: DebugDb, table: VelaLayerTable) -> list[int] | str:
    # Rows of header block k are the operations of the k-th command stream, in queue order; a few
    # operations (e.g. Memcpy for RESHAPE) are rows but emit no command and so are not queued.
    streams: list[int] = []
    for cmd, _ in db.queue:
        if cmd not in streams:
            streams.append(cmd)
    queued = {o for _, o in db.queue}
    spare = [oid for oid in db.optimised if oid not in queued]
    by_stream = {s: [o for c, o in db.queue if c == s] for s in streams}
    cursor = dict.fromkeys(streams, 0)
    indices = []
    for row in table.rows:
        if row.block >= len(streams):
            return f"the CSV has {row.block + 1} NPU subgraphs, the database {len(streams)} command streams"
        stream = streams[row.block]
        ops = by_stream[stream]
        oid: int | None = None
        at = cursor[stream]
        if at < len(ops) and _same(db.optimised[ops[at]][1], row.part.op):
            oid = ops[at]
            cursor[stream] = at + 1
        else:
            oid = next((o for o in spare if _same(db.optimised[o][1], row.part.op)), None)
            if oid is None:
                return f"row {row.line} ({row.part.op} {row.part.name!r}) has no operation in the database"
            spare.remove(oid)
        source_id = db.optimised[oid][0]
        if source_id not in db.sources:
            return f"operation {oid} refers to unknown source operator {source_id}"
        src = db.sources[source_id]
        if normalize_op(src.operator) != normalize_op(row.original_op):
            return f"row {row.line} is a {row.original_op} in the CSV but a {src.operator} in the database"
        indices.append(src.index)
    return indices


def _same(a: str, b: str) -> bool:
    return a.strip().lower() == b.strip().lower()


def _table_lines(text: str) -> dict[str, int]:
    """Line of each ``<table name=...>`` (for messages); the CSV header follows on the same or next line."""
    lines: dict[str, int] = {}
    for i, line in enumerate(text.splitlines(), start=1):
        for quote in ("'", '"'):
            marker = f"<table name={quote}"
            if marker in line:
                name = line.split(marker, 1)[1].split(quote, 1)[0]
                lines.setdefault(name, i + (0 if 'CDATA["' in line else 1))
    return lines
