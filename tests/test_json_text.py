"""``write_json`` writes exactly the text ``json.dump(value, out, indent=2)`` writes: any value
(hypothesis), long lists of rows alike (written from templates), rows with values the templates do
not write (subclasses, NaN, keys that look like the placeholders), streamed rows, and the CLI's
report on a capture with per-inference PMU rows.
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

from tracer.base.columns import JsonRows
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
