"""Indented JSON text, exactly what ``json.dump(obj, out, indent=2)`` writes, faster for long lists
of rows alike (a report's row per inference).

Python's C encoder serves only ``indent=None``; with an indent every value goes through the pure
Python encoder, a generator per nesting level. Here a long list's rows (a list of at least
:data:`ROWS` values, or :class:`~tracer.base.columns.JsonRows`) are written from a template per
row shape (the keys of each dict, the length of each list, where the scalars go) made once by
encoding a row of placeholders, and filled with each row's scalars encoded as ``json`` encodes
them; everything else is written the way ``json`` writes it. A row with a value of another type
than ``str``, ``int``, ``float``, ``bool`` and ``None`` exactly (a subclass: an IntEnum member, a
numpy float) is written the general way. Two facts make it exact: with
``ensure_ascii`` no string holds a newline, so the text of a value nested ``level`` deep is its
text at the top with ``indent * level`` more after each newline; and a placeholder (a number
between NUL characters) is encoded with escaped NULs, which no key's text holds (a shape whose keys
do is written the general way).

Streamed rows that can give themselves as columns (:meth:`~tracer.base.columns.JsonRows.columns`:
one template, a column per scalar; the per-inference PMU rows when every counter is measured) are
written without making the rows: each column's scalars encoded in bulk (an integer column's
formatted by the template's ``%d``), a chunk of rows at a time.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from typing import IO, Any

import numpy as np

from tracer.base.columns import Column, JsonRows

ROWS = 16  # lists at least this long are written row by row from templates
SHAPES = 256  # templates made at most (rows of other shapes are written the general way)
FLUSH_ROWS = 2048  # rows joined before a write (memory stays bounded for streamed rows)
INDENT = "  "

_encode_str: Callable[[str], str] = json.encoder.encode_basestring_ascii
_BOOL_TEXTS = np.array(["false", "true"], dtype=object)
_PLACEHOLDER = "\x00{}\x00"
_ESCAPED = "\\u0000"


def _float(value: float) -> str:
    """A float as ``json`` writes it (``allow_nan``: NaN and the infinities as JavaScript names)."""
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


_SCALARS: dict[type, Callable[[Any], str]] = {
    str: _encode_str,
    int: int.__repr__,
    float: _float,
    bool: lambda value: "true" if value else "false",
    type(None): lambda value: "null",
}


class _Unusual(Exception):
    """A row holds a value the templates do not write (written the general way)."""


def write_json(value: Any, out: IO[str]) -> None:
    """Write ``value`` as ``json.dump(value, out, indent=2)`` writes it (keys in their order, ASCII
    only, NaN allowed; a :class:`~tracer.base.columns.JsonRows` as the list of its rows), without a
    final newline.
    """
    writer = _Writer(out)
    writer.value(value, 0)
    writer.flush()


class _Writer:
    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.pieces: list[str] = []
        self.templates: dict[tuple[Any, int], str | None] = {}

    def value(self, value: Any, level: int) -> None:
        pieces = self.pieces
        if isinstance(value, str):
            pieces.append(_encode_str(value))
        elif value is None:
            pieces.append("null")
        elif value is True:
            pieces.append("true")
        elif value is False:
            pieces.append("false")
        elif isinstance(value, int):
            pieces.append(int.__repr__(value))
        elif isinstance(value, float):
            pieces.append(_float(value))
        elif isinstance(value, (list, tuple)):
            self.sequence(value, level)
        elif isinstance(value, dict):
            self.mapping(value, level)
        elif isinstance(value, JsonRows):
            self.sequence(value, level)
        else:
            raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")
        if len(pieces) >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        self.out.write("".join(self.pieces))
        self.pieces.clear()

    def sequence(self, rows: Sequence[Any], level: int) -> None:
        if isinstance(rows, JsonRows) and self.columns(rows, level):
            return
        pieces = self.pieces
        inner = "\n" + INDENT * (level + 1)
        first = True
        if len(rows) >= ROWS:
            for row in rows:
                pieces.append("[" + inner if first else "," + inner)
                first = False
                self.row(row, level + 1)
        else:
            for row in rows:
                pieces.append("[" + inner if first else "," + inner)
                first = False
                self.value(row, level + 1)
        pieces.append("[]" if first else "\n" + INDENT * level + "]")

    def columns(self, rows: JsonRows, level: int) -> bool:
        """Streamed rows of one shape written from their columns (:meth:`JsonRows.columns`), rows
        joined from a template and each column's scalars, a chunk at a time; False: they have no
        columns, or one holds a value the template does not write (then the rows are read).
        """
        given = rows.columns()
        if given is None or not len(rows):
            return False
        shape, columns = given
        found = _column_template(shape, level + 1)
        if found is None or any(len(column) != len(rows) for column in columns):
            return False
        template, order = found
        ordered = [columns[i] for i in order]
        integers: list[bool] = []  # per placeholder: its column holds Python ints exactly
        for column in ordered:  # (checked before anything is written: the rows are the fallback)
            if isinstance(column, np.ndarray):
                if column.dtype.kind not in "biuf":
                    return False
                integers.append(column.dtype.kind in "iu")
            else:
                kinds = set(map(type, column))
                if not kinds <= _SCALARS.keys():
                    return False
                integers.append(kinds == {int})
        # An integer column's items go to ``%d`` as they are (what ``int.__repr__`` writes, without
        # a text per item first: most of the columns are counters); the others' texts to ``%s``.
        specs = iter(["%d" if integer else "%s" for integer in integers])
        template = re.sub("%%|%s", lambda found: found[0] if found[0] == "%%" else next(specs), template)
        inner = "\n" + INDENT * (level + 1)
        for lo in range(0, len(rows), FLUSH_ROWS):
            count = min(FLUSH_ROWS, len(rows) - lo)
            items = [
                _items(column[lo : lo + count]) if integer else _texts(column[lo : lo + count])
                for column, integer in zip(ordered, integers)
            ]
            lines = [template % row for row in zip(*items)] if items else [template % ()] * count
            self.pieces.append(("[" if lo == 0 else ",") + inner + ("," + inner).join(lines))
            self.flush()
        self.pieces.append("\n" + INDENT * level + "]")
        return True

    def mapping(self, mapping: dict[Any, Any], level: int) -> None:
        pieces = self.pieces
        inner = "\n" + INDENT * (level + 1)
        first = True
        for key, item in mapping.items():
            pieces.append(("{" + inner if first else "," + inner) + _key(key) + ": ")
            first = False
            self.value(item, level + 1)
        pieces.append("{}" if first else "\n" + INDENT * level + "}")

    def row(self, row: Any, level: int) -> None:
        """One row of a long list, from its shape's template where it has one."""
        scalars: list[str] = []
        try:
            shape = _shape(row, scalars)
        except _Unusual:
            self.value(row, level)
            return
        if shape is None:  # a scalar
            self.pieces.append(scalars[0])
        else:
            key = (shape, level)
            template = self.templates.get(key, "")
            if template == "":
                template = None
                if len(self.templates) < SHAPES:
                    template = self.templates[key] = _template(shape, len(scalars), level)
            if template is None:
                self.value(row, level)
            else:
                self.pieces.append(template % tuple(scalars))
        if len(self.pieces) >= FLUSH_ROWS:
            self.flush()


def _items(values: Any) -> list[Any]:
    """A column's items as Python scalars."""
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


def _texts(values: Any) -> list[str]:
    """Each scalar's text (a numpy column's items as Python scalars)."""
    if isinstance(values, np.ndarray) and values.dtype.kind == "b":
        return _BOOL_TEXTS[values.view(np.uint8)].tolist()  # (a lookup, not a call per item)
    values = _items(values)
    kinds = set(map(type, values))
    if len(kinds) == 1:
        return list(map(_SCALARS[kinds.pop()], values))
    return [_SCALARS[type(value)](value) for value in values]


def _column_template(shape: Any, level: int) -> tuple[str, list[int]] | None:
    """The text of a row of ``shape`` (a :class:`~tracer.base.columns.JsonRows` template) at
    ``level`` with ``%s`` for each :class:`~tracer.base.columns.Column`, and the columns in the
    order their ``%s`` come (None: a key's text holds what a placeholder's does).
    """
    count = 0

    def probe(part: Any) -> Any:
        nonlocal count
        if isinstance(part, Column):
            count += 1
            return _PLACEHOLDER.format(int(part))
        if isinstance(part, dict):
            return {key: probe(value) for key, value in part.items()}
        if isinstance(part, (list, tuple)):
            return [probe(value) for value in part]
        return part

    text = json.dumps(probe(shape), indent=INDENT)
    if text.count(_ESCAPED) != 2 * count:
        return None
    pattern = re.compile('"' + re.escape(_ESCAPED) + "([0-9]+)" + re.escape(_ESCAPED) + '"')
    order = [int(found) for found in pattern.findall(text)]
    text = pattern.sub("%s", text.replace("%", "%%"))
    return text.replace("\n", "\n" + INDENT * level), order


def _key(key: Any) -> str:
    """A dict key's text, as ``json`` makes it."""
    if isinstance(key, str):
        return _encode_str(key)
    if isinstance(key, float):
        return _encode_str(_float(key))
    if key is True:
        return '"true"'
    if key is False:
        return '"false"'
    if key is None:
        return '"null"'
    if isinstance(key, int):
        return _encode_str(int.__repr__(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")


def _shape(value: Any, scalars: list[str]) -> Any:
    """``value``'s shape (None for a scalar; per dict its keys and its values' shapes; per list its
    values' shapes), its scalars' texts appended to ``scalars`` in order.

    Raises:
        _Unusual: A value of another type than the templates write.
    """
    kind = type(value)
    if kind is dict or kind is list or kind is tuple:
        parts = []
        for item in value.values() if kind is dict else value:
            text = _SCALARS.get(type(item))  # (a scalar here, not in a call of its own: most are)
            if text is None:
                parts.append(_shape(item, scalars))
            else:
                scalars.append(text(item))
                parts.append(None)
        return (dict, tuple(value), tuple(parts)) if kind is dict else (list, tuple(parts))
    text = _SCALARS.get(kind)
    if text is None:
        raise _Unusual
    scalars.append(text(value))
    return None


def _template(shape: Any, count: int, level: int) -> str | None:
    """The text of a value of ``shape`` at ``level`` with ``%s`` for each scalar, in order (None: a
    key's text holds what a placeholder's does).
    """
    numbers = iter(range(count))

    def columns(part: Any) -> Any:  # the shape as a row template: a Column per scalar, in order
        if part is None:
            return Column(next(numbers))
        if part[0] is dict:
            return dict(zip(part[1], [columns(p) for p in part[2]]))
        return [columns(p) for p in part[1]]

    found = _column_template(columns(shape), level)
    if found is None or found[1] != list(range(count)):  # (json keeps a dict's order: they are in order)
        return None
    return found[0]
