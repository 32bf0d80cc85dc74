"""``write_json`` writes exactly the text ``json.dump(value, out, indent=2)`` writes: any value
(hypothesis), long lists of rows alike (written from templates), rows with values the templates do
not write (subclasses, NaN, keys that look like the placeholders), streamed rows, streamed rows
written from their columns (and the PMU section's columns are its rows).
"""

from __future__ import annotations

import enum
import io
import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.analysis.pmu import InferenceCounterTable
from tracer.base.columns import Column, JsonRows
from tracer.export.json_text import FLUSH_ROWS, ROWS, write_json
from tracer.export.report_json import write_report_json


def text_of(value: Any) -> str:
    out = io.StringIO()
    write_json(value, out)
    return out.getvalue()


KEYS = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["%s", "%", "\x00", "\x000\x00", "\x001\x00", '"\\u00000\\u0000"', "\n"]),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["%s", "%d", "\x000\x00", "é€😀", "a\nb"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.tuples(inner, inner),
        st.dictionaries(KEYS, inner, max_size=5),
    ),
    max_leaves=30,
)


@st.composite
def rows_alike(draw: st.DrawFn) -> list[Any]:
    """A long list whose rows share one or a few shapes, with any scalars in them."""
    shapes = draw(st.lists(VALUES, min_size=1, max_size=3))

    def fill(shape: Any) -> Any:
        if isinstance(shape, dict):
            return {key: fill(value) for key, value in shape.items()}
        if isinstance(shape, (list, tuple)):
            return type(shape)(fill(value) for value in shape)
        return draw(SCALARS)

    count = draw(st.integers(ROWS, 3 * ROWS))
    return [fill(shapes[draw(st.integers(0, len(shapes) - 1))]) for _ in range(count)]


@given(VALUES)
@settings(max_examples=200, deadline=None)
def test_any_value_is_json_dumps_text(value: Any) -> None:
    assert text_of(value) == json.dumps(value, indent=2)


@given(rows_alike(), st.integers(0, 3))
@settings(max_examples=150, deadline=None)
def test_long_lists_of_rows_alike_are_json_dumps_text(rows: list[Any], depth: int) -> None:
    value: Any = rows
    for _ in range(depth):  # nested: the templates are re-indented per level
        value = {"rows": value, "n": len(rows)}
    assert text_of(value) == json.dumps(value, indent=2)


class Colour(enum.IntEnum):
    RED = 1


class Name(str):
    pass


def test_rows_the_templates_do_not_write() -> None:
    """Subclasses of int, str and float, NaN and the infinities, a key like a placeholder: the same."""
    rows = [
        {"a": Colour.RED, "b": Name("x"), "c": np.float64(0.5), "d": math.nan, "e": -math.inf},
        {"\x000\x00": 1, "%s": "%d", 7: None, 1.5: True, None: False, True: [1, (2, 3)]},
    ] * ROWS
    rows += [1, "two", None, [], {}, 3.25] * ROWS
    assert text_of(rows) == json.dumps(rows, indent=2)


def test_streamed_rows_are_written_as_a_list() -> None:
    """A report with :class:`JsonRows` (more than a write holds) and the same with a list."""
    rows = [
        {"number": n, "complete": n % 3 > 0, "counters": {"PMU_CYCLES": 7 * n, "EVENT0": n // 2}}
        for n in range(3 * FLUSH_ROWS)
    ]
    streamed = {
        "pmu": {"per_inference": JsonRows(len(rows), lambda: iter(rows)), "empty": JsonRows(0, lambda: iter(()))}
    }
    held = {"pmu": {"per_inference": rows, "empty": []}}
    out = io.StringIO()
    write_report_json(streamed, out)
    assert out.getvalue() == json.dumps(held, indent=2) + "\n"


def test_what_json_cannot_write_is_refused() -> None:
    with pytest.raises(TypeError):
        text_of({"a": object()})
    with pytest.raises(TypeError):
        text_of([{"a": np.int64(1)}] * ROWS)
    with pytest.raises(TypeError):
        text_of({(1, 2): 3})


def fill(template: Any, row: list[Any]) -> Any:
    """``template`` with each :class:`Column` replaced by the row's scalar of that column."""
    if isinstance(template, Column):
        return row[int(template)]
    if isinstance(template, dict):
        return {key: fill(value, row) for key, value in template.items()}
    if isinstance(template, (list, tuple)):
        return [fill(value, row) for value in template]
    return template


@st.composite
def column_rows(draw: st.DrawFn) -> tuple[Any, list[Any], int]:
    """A row template with columns in it (some twice, some constants), and its columns: lists of
    any scalars or numpy arrays (ints, bools, floats with NaN)."""
    width = draw(st.integers(0, 4))
    leaves = st.one_of(SCALARS, st.integers(0, max(width - 1, 0)).map(Column) if width else SCALARS)
    template = draw(
        st.recursive(
            leaves,
            lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
            max_leaves=12,
        )
    )
    count = draw(st.integers(1, 2 * FLUSH_ROWS + 3))
    columns: list[Any] = []
    for _ in range(width):
        kind = draw(st.sampled_from(["list", "int", "bool", "float"]))
        if kind == "list":
            columns.append([draw(SCALARS) for _ in range(3)] * (count // 3) + [None] * (count % 3))
        else:
            base = {"int": np.arange(count) * 7 - 3, "bool": np.arange(count) % 3 == 0, "float": np.arange(count) / 3}
            column = base[kind]
            if kind == "float":
                column[::5] = math.nan
            columns.append(column)
    return template, columns, count


@given(column_rows(), st.integers(0, 2))
@settings(max_examples=120, deadline=None)
def test_rows_written_from_columns_are_json_dumps_text(given_rows: tuple[Any, list[Any], int], depth: int) -> None:
    template, columns, count = given_rows
    lists = [c.tolist() if isinstance(c, np.ndarray) else c for c in columns]
    rows = [fill(template, [column[r] for column in lists]) for r in range(count)]
    value: Any = JsonRows(count, lambda: iter(rows), lambda: (template, columns))
    held: Any = rows
    for _ in range(depth):
        value, held = {"rows": value}, {"rows": held}
    assert text_of(value) == json.dumps(held, indent=2)


def test_columns_the_writer_does_not_take_leave_it_the_rows() -> None:
    """A column of numpy scalars in a list, or of objects: the rows are written instead."""
    rows = [{"n": n} for n in range(ROWS)]
    for column in ([np.int64(n) for n in range(ROWS)], np.array([object()] * ROWS, dtype=object)):
        streamed = JsonRows(len(rows), lambda: iter(rows), lambda column=column: ({"n": Column(0)}, [column]))
        assert text_of(streamed) == json.dumps(rows, indent=2)


def test_integer_columns_of_every_kind_are_json_dumps_text() -> None:
    """Integer columns go to the template's ``%d`` as they are: numpy integers of any width and sign
    (past 2**63 too), a list of Python ints of any size, beside a bool column and a key with a %."""
    count = ROWS + 3
    columns = [
        np.arange(count, dtype=np.uint64) + np.uint64(2**64 - 40),
        np.arange(count, dtype=np.int8) - 9,
        [10**30 * n - n for n in range(count)],
        np.arange(count) % 2 == 0,
    ]
    template = {"big": Column(0), "%d small": [Column(1), Column(3)], "huge": Column(2)}
    lists = [c.tolist() if isinstance(c, np.ndarray) else c for c in columns]
    rows = [fill(template, [column[r] for column in lists]) for r in range(count)]
    streamed = JsonRows(count, lambda: iter(rows), lambda: (template, columns))
    assert text_of({"rows": streamed}) == json.dumps({"rows": rows}, indent=2)


@given(
    st.lists(st.lists(st.integers(-1, 2**40), min_size=3, max_size=3), min_size=1, max_size=40),
    st.lists(st.sampled_from(["PMU_CYCLES", "EVENT0", "AXI0_RD_DATA_BEAT_RECEIVED"]), min_size=3, max_size=3),
)
@settings(max_examples=100, deadline=None)
def test_pmu_rows_from_columns_are_the_rows(values: list[list[int]], names: list[str]) -> None:
    """The per-inference PMU section, streamed: its columns give its rows (every counter measured),
    or there are none (some not measured)."""
    table = InferenceCounterTable(
        np.arange(len(values)) * 3,
        np.arange(len(values)) % 2 == 0,
        list(dict.fromkeys(names)),
        np.array(values)[:, : len(set(names))],
    )
    given_rows = table.json_columns()
    if (table.values < 0).any():
        assert given_rows is None
        return
    assert given_rows is not None
    template, columns = given_rows
    lists = [c.tolist() for c in columns]
    assert [fill(template, [c[r] for c in lists]) for r in range(len(table))] == list(table.json_rows())
