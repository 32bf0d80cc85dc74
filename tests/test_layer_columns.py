"""Per-layer and per-inference sums made on whole columns agree with their row-by-row definition,
for any mix of layers, completeness, spans out of inference order and unmeasured counters."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.analysis.by_layer import layer_groups
from tracer.analysis.pmu import _span_sums
from tracer.analysis.samples import layer_samples
from tracer.base.timeline import Inferences, InferenceTimeline, LayerSpans

NAMES = ("PMU_CYCLES", "NPU_ACTIVE", "EVENT0")


@st.composite
def span_columns(draw: st.DrawFn) -> LayerSpans:
    n = draw(st.integers(0, 40))
    big = draw(st.booleans())  # layer indices past 16 bits take the sorting path
    layer = draw(st.lists(st.integers(0, 70_000 if big else 5), min_size=n, max_size=n))
    names = NAMES[: draw(st.integers(0, len(NAMES)))]
    pmu = [[draw(st.one_of(st.just(-1), st.integers(0, 1 << 40))) for _ in names] for _ in range(n)]
    if draw(st.booleans()):  # snapshots: a row measures every counter or none (the spans share a mask)
        pmu = [[-1 if row[0] < 0 else max(v, 0) for v in row] if row else row for row in pmu]
    start = draw(st.lists(st.integers(0, 1 << 32), min_size=n, max_size=n))
    return LayerSpans(
        inference=np.array(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)), np.int64),
        layer=np.array(layer, np.int32),
        start=np.array(start, np.int64),
        end=np.array([s + draw(st.integers(0, 1 << 33)) for s in start], np.int64),
        complete=np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool),
        isr_cycles=np.array(draw(st.lists(st.sampled_from([0, 0, 5, 1 << 35]), min_size=n, max_size=n)), np.int64),
        pmu=np.array(pmu, np.int64).reshape(n, len(names)),
        pmu_names=names,
    )


@settings(max_examples=60, deadline=None)
@given(span_columns())
def test_layer_samples_are_each_layers_complete_rows(spans: LayerSpans) -> None:
    samples = layer_samples(spans)
    rows = [i for i in range(len(spans)) if spans.complete[i]]
    assert list(samples) == sorted({int(spans.layer[i]) for i in rows})
    for index, got in samples.items():
        mine = [i for i in rows if spans.layer[i] == index]
        assert got.cycles.tolist() == [int(spans.end[i] - spans.start[i]) for i in mine]
        isr = [int(spans.isr_cycles[i]) for i in mine]
        assert (got.isr_cycles.tolist() if got.isr_cycles is not None else [0] * len(mine)) == isr
        assert (got.isr_cycles is None) == (not any(isr))
        expected = {}
        for j, name in enumerate(spans.pmu_names):
            have = [int(spans.pmu[i, j]) for i in mine if spans.pmu[i, j] >= 0]
            if have:
                expected[name] = (sum(have), len(have))
        assert got.pmu == expected and list(got.pmu) == list(expected)


@settings(max_examples=60, deadline=None)
@given(span_columns())
def test_layer_groups_are_each_layers_complete_rows_by_inference(spans: LayerSpans) -> None:
    got = [(index, rows.tolist()) for index, rows in layer_groups(spans)]
    rows = [i for i in range(len(spans)) if spans.complete[i]]
    expected = [
        (index, sorted((i for i in rows if spans.layer[i] == index), key=lambda i: int(spans.inference[i])))
        for index in sorted({int(spans.layer[i]) for i in rows})
    ]
    assert got == expected


@settings(max_examples=60, deadline=None)
@given(spans=span_columns(), numbers=st.lists(st.integers(0, 8), unique=True, max_size=6))
def test_span_sums_are_each_inferences_measured_spans(spans: LayerSpans, numbers: list[int]) -> None:
    """Inference rows in any order; spans of an inference without a row are left out."""
    k = len(numbers)
    zeros = np.zeros(k, np.int64)
    inferences = Inferences(np.array(numbers, np.int64), zeros, zeros, np.ones(k, bool), zeros, zeros, [()] * k)
    timeline = InferenceTimeline(inferences=inferences, spans=spans)
    names, columns = _span_sums(timeline)
    expected_names, expected = [], []
    for j, name in enumerate(spans.pmu_names):
        per_row = []
        for number in numbers:
            have = [
                int(spans.pmu[i, j]) for i in range(len(spans)) if spans.inference[i] == number and spans.pmu[i, j] >= 0
            ]
            per_row.append(sum(have) if have else -1)
        if any(v >= 0 for v in per_row):
            expected_names.append(name)
            expected.append(per_row)
    if not len(spans) or not numbers:
        assert names == []
        return
    assert names == expected_names
    assert [c.tolist() for c in columns] == expected
