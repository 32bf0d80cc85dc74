"""Per-layer records (arena and stack reports, cache operations, NPU jobs) are gathered into
columns after every batch (``gather_events``), on the thread that assembles the records: the
timeline at the stream's end finds them ready, and they are the same whatever the batches.

The oracle reads the kernel's event table once, whole, with plain numpy (what the timeline did
before the records were gathered per batch).
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from telemetry_encoder import TelemetryEncoder

from tracer.decode.itm import ItmDecoder
from tracer.telemetry import kernel as k
from tracer.telemetry.decoder import TelemetryDecoder
from tracer.telemetry.wire import RecordType, TimeSource


def _stream(inferences: int) -> bytes:
    """Inferences with cache maintenance, NPU jobs (one ended with another job's id, one never
    ended), arena and stack reports: every kind of record gathered, and the pairing's exceptions.
    """
    enc = TelemetryEncoder()
    t = 1_000
    enc.target_info(t, 100_000_000, TimeSource.DWT)
    enc.arena(t + 5, 4096, 8192)
    t += 100
    for n in range(inferences):
        enc.inference_begin(t, n)
        for layer in range(3):
            enc.layer_begin(t + 10, layer, 1)
            enc.cache_op(t + 11, 1 + layer % 2, 0x2000_0000 + 64 * n, 32 * (layer + 1))
            enc.npu_job_begin(t + 12, layer)
            if not (n == 2 and layer == 1):  # a job that never ends
                enc.npu_job_end(t + 40, layer if (n, layer) != (3, 2) else 9)  # an end of another job
            enc.cache_op(t + 41, 2, 0x2000_1000, 64)
            enc.layer_end(t + 50, layer)
            t += 60
        enc.inference_end(t + 5)
        enc.arena(t + 6, 1000 + n, 8192)
        enc.stack(t + 7, 0, "main", 4096, 500 + n)
        t += 100
    return bytes(enc.out)


def _decode(data: bytes, cuts: list[int]) -> TelemetryDecoder:
    itm = ItmDecoder(hold_timestamps=False)
    decoder = TelemetryDecoder()
    for a, b in itertools.pairwise(sorted({0, len(data), *(min(c, len(data)) for c in cuts)})):
        decoder.feed(itm.feed(data[a:b]))
        # Gathered as each batch was assembled: nothing is left for the timeline to gather.
        assert decoder._tables.gathered.done == int(decoder._state[k.S_N_EVENTS])
    decoder.feed(itm.finish())
    decoder.finish()
    return decoder


def _columns(records: object) -> list[list[int]]:
    return [records.column(i).tolist() for i in range(len(records._columns))]  # type: ignore[attr-defined]


def _oracle(decoder: TelemetryDecoder) -> dict[str, list[list[int]]]:
    """The columns read from the whole event table at once."""
    t = decoder._tables
    n = int(decoder._state[k.S_N_EVENTS])
    types, times, inference = t.events[k.EV_TYPE, :n], t.events[k.EV_TIME, :n], t.events[k.EV_INFERENCE, :n]
    first_word = t.events[k.EV_WORDS, :n]
    cache = np.flatnonzero(types == RecordType.CACHE_OP)
    jobs = np.flatnonzero((types == RecordType.NPU_JOB_BEGIN) | (types == RecordType.NPU_JOB_END))
    pairs = [
        (b, e)
        for b, e in itertools.pairwise(jobs.tolist())
        if types[b] == RecordType.NPU_JOB_BEGIN
        and types[e] == RecordType.NPU_JOB_END
        and t.words[first_word[b]] == t.words[first_word[e]]
    ]
    return {
        "cache_ops": [
            times[cache].tolist(),
            *(t.words[first_word[cache] + i].tolist() for i in range(3)),
            inference[cache].tolist(),
        ],
        "npu_jobs": [
            [int(times[b]) for b, _ in pairs],
            [int(times[e]) for _, e in pairs],
            [int(inference[b]) for b, _ in pairs],
            [int(t.words[first_word[b]]) for b, _ in pairs],
        ],
        "arena": [times[types == RecordType.ARENA].tolist()],
        "stacks": [times[types == RecordType.STACK].tolist()],
    }


def _gathered(decoder: TelemetryDecoder) -> dict[str, list[list[int]]]:
    timeline = decoder.timeline()
    return {
        "cache_ops": _columns(timeline.cache_ops),
        "npu_jobs": _columns(timeline.npu_jobs),
        "arena": [[a.cycle for a in timeline.arena]],
        "stacks": [[s.cycle for s in timeline.stacks]],
    }


def test_whole_stream_matches_the_event_table(kernels: str) -> None:
    decoder = _decode(_stream(6), [])
    got, want = _gathered(decoder), _oracle(decoder)
    assert got == want
    assert len(got["cache_ops"][0]) == 36 and len(got["npu_jobs"][0]) == 16  # two jobs left unpaired
    assert got["arena"][0] and len(got["stacks"][0]) == 6


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 4000), max_size=12))
def test_any_split_gathers_the_same(kernels: str, cuts: list[int]) -> None:
    data = _stream(6)
    assert _gathered(_decode(data, cuts)) == _gathered(_decode(data, []))


def test_discarded_rows_are_gathered_again(kernels: str) -> None:
    """A stream read in windows drops the rows it took: what is held is gathered afresh, and what
    was taken before stays as it was handed out.
    """
    data = _stream(6)
    itm = ItmDecoder(hold_timestamps=False)
    decoder = TelemetryDecoder()
    taken_jobs, taken_ops = [], []
    for a, b in itertools.pairwise(range(0, len(data) + 700, 700)):
        decoder.feed(itm.feed(data[a:b]))
        rows = decoder.take()
        kept = (_columns(rows.npu_jobs), _columns(rows.cache_ops))
        decoder.discard_taken()
        assert (_columns(rows.npu_jobs), _columns(rows.cache_ops)) == kept  # views that stay valid
        taken_jobs.append(kept[0])
        taken_ops.append(kept[1])
    decoder.finish()
    last = decoder.take()
    taken_jobs.append(_columns(last.npu_jobs))
    taken_ops.append(_columns(last.cache_ops))
    whole = _gathered(_decode(data, []))
    assert [list(itertools.chain(*(part[i] for part in taken_jobs))) for i in range(4)] == whole["npu_jobs"]
    assert [list(itertools.chain(*(part[i] for part in taken_ops))) for i in range(5)] == whole["cache_ops"]
