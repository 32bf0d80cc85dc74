"""A :class:`~tracer.analysis.statistics.Tally` of values added in parts (any parts, merged lazily
once enough wait) gives the nearest-rank quantiles of all the values at once."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.analysis.statistics import Tally, nearest_rank

PARTS = st.lists(st.lists(st.integers(-(2**40), 2**40) | st.integers(0, 5), max_size=40), min_size=1, max_size=12)


@given(PARTS, st.sampled_from([0.0, 0.01, 0.5, 0.99, 1.0]), st.sampled_from([1, 7, Tally.PENDING]))
@settings(max_examples=150, deadline=None)
def test_parts_give_the_quantiles_of_the_whole(parts: list[list[int]], q: float, pending: int) -> None:
    tally = Tally()
    tally.PENDING = pending  # merged after every part, now and then, or only when read
    for part in parts:
        tally.add(np.array(part, np.int64))
    joined = np.array([v for part in parts for v in part], np.int64)
    assert len(tally) == len(joined)
    if len(joined):
        assert tally.nearest_rank(q) == nearest_rank(joined, q)
        values, counts = np.unique(joined, return_counts=True)
        assert tally.values.tolist() == values.tolist() and tally.counts.tolist() == counts.tolist()
