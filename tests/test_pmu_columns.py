"""Per-inference PMU counters kept as columns: what is computed on the columns agrees with the
per-row definition (``npu_utilization``) for any mix of counters a target or a log gives."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.analysis.pmu import InferenceCounterTable, npu_utilization

NAMES = ("PMU_CYCLES", "CYCLE", "NPU_ACTIVE", "NPU_IDLE", "AXI0_RD_DATA_BEAT_RECEIVED")
counter = st.one_of(st.just(-1), st.integers(0, 2_000_000))


def counter_values(data: st.DataObject, names: list[str], rows: int) -> np.ndarray:
    """A ``rows`` x ``len(names)`` table of counters, each -1 (not measured) or a count."""
    return np.array([[data.draw(counter) for _ in names] for _ in range(rows)], np.int64).reshape(rows, len(names))


@settings(max_examples=300, deadline=None)
@given(
    names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=5, unique=True),
    rows=st.integers(0, 12),
    data=st.data(),
    below=st.floats(0.0, 1.0),
)
def test_utilization_rows_hold_every_row_under_the_limit(names, rows, data, below) -> None:
    values = counter_values(data, names, rows)
    table = InferenceCounterTable(np.arange(rows), np.ones(rows, bool), names, values)
    expected = set()
    for i, row in enumerate(table):
        use = npu_utilization(row.counters)
        if use is not None and use.ratio < below:
            expected.add(i)
    assert expected <= set(table.utilization_rows(below).tolist())


def test_exactly_at_the_limit_is_not_under_it() -> None:
    table = InferenceCounterTable(
        np.arange(3), np.ones(3, bool), ("PMU_CYCLES", "NPU_ACTIVE"), np.array([[100, 50], [100, 49], [0, 0]])
    )
    rows = [i for i in table.utilization_rows(0.5).tolist() if npu_utilization(table[i].counters).ratio < 0.5]
    assert rows == [1]


@settings(max_examples=200, deadline=None)
@given(
    names=st.lists(st.sampled_from(NAMES), min_size=0, max_size=5, unique=True),
    rows=st.integers(0, 12),
    data=st.data(),
)
def test_the_json_rows_made_in_bulk_are_each_rows_own(names, rows, data) -> None:
    """The report's per-inference rows, made from whole columns, are what each row gives."""
    values = counter_values(data, names, rows)
    complete = np.array([data.draw(st.booleans()) for _ in range(rows)], bool)
    table = InferenceCounterTable(np.arange(rows) * 3, complete, names, values)
    got = list(table.json_rows())
    assert got == [row.to_json() for row in table]
    assert [list(r["counters"]) for r in got] == [list(row.counters) for row in table]  # key order too
    assert all(type(r["number"]) is int and type(r["complete"]) is bool for r in got)


def test_a_row_whose_ratio_rounds_under_the_limit_is_held() -> None:
    """NPU_ACTIVE 1 of 2,000,000 cycles is a ratio of 5e-7, which rounds to 0 (six places): under
    a limit of the smallest float, as the row itself says, so the columns must hold the row too."""
    names = ["NPU_ACTIVE", "NPU_IDLE"]
    table = InferenceCounterTable(np.arange(1), np.ones(1, bool), names, np.array([[1, 1_999_999]], np.int64))
    use = npu_utilization(table[0].counters)
    assert use is not None and use.ratio == 0.0
    assert table.utilization_rows(5e-324).tolist() == [0]
