"""The cycle histogram (:func:`~tracer.analysis.statistics.histogram`) counts every value in the
bin its edges give, as numpy's histogram of the same edges does, whether it sorts the values
itself or is given them sorted (the jitter sorts each layer's cycles once and reads its median,
p99 and histogram from that one sort)."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.analysis.statistics import histogram, histogram_sorted, nearest_rank, summarize_sorted

VALUES = st.lists(st.integers(0, 2**40) | st.integers(1000, 1010), min_size=1, max_size=300)


@given(VALUES, st.sampled_from([1, 3, 10, 64]))
@settings(max_examples=200, deadline=None)
def test_counts_are_numpys_for_the_same_edges(values: list[int], bins: int) -> None:
    array = np.array(values, np.int64)
    edges, counts = histogram(array, bins)
    expected, _ = np.histogram(array, bins=np.array(edges, np.int64))
    assert counts == expected.tolist()
    assert sum(counts) == len(values) and edges[0] == min(values) and edges[-1] == max(values) + 1
    assert all(hi > lo for lo, hi in itertools.pairwise(edges))  # no bin narrower than one cycle
    assert histogram_sorted(np.sort(array), bins) == (edges, counts)


@given(VALUES)
@settings(max_examples=100, deadline=None)
def test_the_sorted_summary_has_the_nearest_rank_percentiles(values: list[int]) -> None:
    array = np.array(values, np.int64)
    ordered = np.sort(array)
    summary = summarize_sorted(ordered, int(ordered.sum()))
    assert summary.p50 == nearest_rank(array, 0.5) and summary.p99 == nearest_rank(array, 0.99)
    assert summary.max == int(array.max())
