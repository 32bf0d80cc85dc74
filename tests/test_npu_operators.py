"""Per-operator NPU time from QREAD samples, on streams with known content (reference encoder).

Each stream has a CPU layer and an NPU layer (one job of a three-operation command stream); the
NPU samples are placed where the truth says each operation runs, with QREAD as the command
processor shows it (after the running operation's kernel command, up to the next one). What is
checked: the mapping rule at its edges, the shares and Wilson intervals, the per-inference
estimates, the PMU-based comparison with Vela, and that no debug database, a database of another
compile or an ambiguous layer keep the per-job view and say why. The real sampling_net debug
database and the tiny_int8 one (two streams) are read from the repository.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from sample_streams import TelemetryEncoder, npu_profile, npu_sample, pc_sample, sampler_info
from telemetry_streams import CLOCK_HZ, decode

from tracer.analysis.npu_operators import wilson
from tracer.analysis.sampling import layer_breakdowns, sampling_analysis
from tracer.base.timeline import InferenceTimeline
from tracer.budget.command_stream import CommandStream, StreamOperation
from tracer.budget.loader import load_budget
from tracer.budget.text import BudgetText
from tracer.budget.vela_debugdb import read_debug_db
from tracer.telemetry.wire import TimeSource

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "firmware_snippets" / "demo" / "model" / "vela"
TINY = Path(__file__).resolve().parent / "data" / "vela" / "out_u55-128_regor"

OFFSETS = [100, 200, 300]  # kernel commands of the three operations
QSIZE = 308  # the stream ends with NPU_OP_STOP after the last kernel command
QBASE = 0x31000000
DURATIONS = [2000, 5000, 3000]  # cycles of each operation
JOB = sum(DURATIONS)


def stream_of(offsets: list[int], source: str = "test.xml", cycles: list[float] | None = None) -> CommandStream:
    ops = tuple(
        StreamOperation(off, f"op{k}", "Conv2D", k, "Conv2D", None if cycles is None else cycles[k], None)
        for k, off in enumerate(offsets)
    )
    return CommandStream(1, ops, source)


def qread_at(elapsed: int) -> int:
    """QREAD as the command processor shows it ``elapsed`` cycles into the job."""
    end = 0
    for k, duration in enumerate(DURATIONS):
        end += duration
        if elapsed < end:
            within = elapsed - (end - duration)
            wait_at = OFFSETS[k + 1] if k + 1 < len(OFFSETS) else QSIZE - 4  # the next kernel command, or STOP
            return min(OFFSETS[k] + 4 + 4 * within, wait_at)  # reading ahead one command per cycle
    return QSIZE


def build(
    inferences: int = 4,
    step: int = 50,
    qbase: int | list[int] = QBASE,
    qsize: int = QSIZE,
    pmu: bool = True,
    idle_head: int = 200,
) -> InferenceTimeline:
    """Inferences of a CPU layer then one NPU job sampled every ``step`` cycles (phase varying)."""
    enc = TelemetryEncoder()
    t = 1_000
    enc.target_info(t, CLOCK_HZ, TimeSource.DWT)
    enc.layer_info(t + 1, 0, 0, "ADD", "pre")
    enc.layer_info(t + 2, 1, 1, "ethos-u", "job")
    sampler_info(enc, t + 3, 0x103, step, 0, 16 * 20)
    bases = qbase if isinstance(qbase, list) else [qbase]
    for n in range(inferences):
        t += 10_000
        enc.inference_begin(t)
        enc.layer_begin(t + 10, 0)
        pc_sample(enc, t + 20, 0x10000100)
        enc.layer_end(t + 500, 0)
        start = t + 1_000
        enc.layer_begin(start, 1, 1)
        enc.npu_job_begin(start + 1, n)
        npu_start = start + idle_head
        s = start + 3 + (n * 17) % step
        while s < npu_start + JOB + 150:
            elapsed = s - npu_start
            running = 0 <= elapsed < JOB
            npu_sample(
                enc,
                s,
                qread_at(elapsed) if running else (0 if elapsed < 0 else QSIZE),
                1 if running else 0x22,
                bases[n % len(bases)],
                qsize,
                pmu_cycles=max(0, min(elapsed, JOB)),
                counters=[elapsed],
            )
            s += step
        end = npu_start + JOB + 200
        if pmu:
            enc.pmu_snapshot(end - 2, JOB, [JOB])
        enc.npu_job_end(end - 1, n)
        enc.layer_end(end, 1)
        enc.inference_end(end + 10)
        t = end + 10
    return decode(bytes(enc))


@pytest.fixture(scope="module")
def timeline() -> InferenceTimeline:
    return build()


def test_wilson_interval_known_values() -> None:
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and math.isclose(hi, 1.959963984540054**2 / (10 + 1.959963984540054**2), rel_tol=1e-12)
    lo, hi = wilson(5, 10)
    assert math.isclose(lo + hi, 1.0) and math.isclose(lo, 0.2365931, abs_tol=1e-6)
    assert wilson(3, 0) == (0.0, 1.0)


def test_mapping_rule_at_the_edges() -> None:
    """QREAD after operation k's kernel command and up to operation k+1's (inclusive) is k; at or
    before the first kernel command it is the first operation (its opening transfers)."""
    enc = TelemetryEncoder()
    enc.target_info(0, CLOCK_HZ, TimeSource.DWT)
    enc.layer_info(1, 0, 1, "ethos-u", "job")
    enc.inference_begin(100)
    enc.layer_begin(110, 0, 1)
    values = [0, 96, 100, 104, 200, 204, 296, 300, 304, 304]
    for k, q in enumerate(values):
        npu_sample(enc, 120 + k, q, 1, QBASE, QSIZE)
    enc.layer_end(200, 0)
    enc.inference_end(210)
    tl = decode(bytes(enc))
    prof = npu_profile(tl, [stream_of(OFFSETS)])
    assert prof is not None and prof.mapped
    assert [op.samples for op in prof.jobs[0].operators] == [5, 3, 2]


def test_shares_match_the_truth_and_intervals_cover_it(timeline: InferenceTimeline) -> None:
    prof = npu_profile(timeline, [stream_of(OFFSETS)])
    assert prof is not None and prof.mapped and prof.message is None
    (job,) = prof.jobs
    assert job.layer == 1 and job.jobs == 4 and job.qbase == QBASE and job.qsize == QSIZE
    job_cycles = JOB + 400  # the span: idle head, the NPU's run, idle tail
    assert job.cycles_mean == job_cycles and job.npu_cycles_mean == JOB
    assert job.samples == sum(op.samples for op in job.operators) + (job.samples - job.running)
    for op, truth in zip(job.operators, DURATIONS):
        assert op.share_low <= truth / job_cycles <= op.share_high
        assert abs(op.cycles - truth) <= 0.05 * truth
        assert op.cycles_low <= truth <= op.cycles_high
        assert op.npu_cycles == pytest.approx(op.share * JOB)
    assert job.idle_low <= 400 / job_cycles <= job.idle_high
    # Per inference: each job's own samples; they add up to the job's running time.
    assert job.per_inference_cycles.shape == (4, 3)
    assert job.per_inference_samples.sum() == job.running
    assert np.allclose(job.per_inference_cycles.sum(axis=1), job.running / job.samples * job_cycles, rtol=0.1)
    assert prof.achieved_hz == pytest.approx(CLOCK_HZ / 50, rel=0.02)


def test_vela_estimate_is_compared_in_npu_cycles(timeline: InferenceTimeline) -> None:
    predicted = [1000.0, 5000.0, 6000.0]
    prof = npu_profile(timeline, [stream_of(OFFSETS, cycles=predicted)], 500_000_000)
    assert prof is not None
    ops = prof.jobs[0].operators
    assert [op.predicted_npu_cycles for op in ops] == predicted
    assert [op.predicted_cycles for op in ops] == [p * CLOCK_HZ / 500_000_000 for p in predicted]
    for op, truth, p in zip(ops, DURATIONS, predicted):
        assert op.ratio == pytest.approx(op.npu_cycles / p)
        assert op.ratio == pytest.approx(truth / p, rel=0.06)


def test_without_pmu_the_comparison_is_in_time() -> None:
    tl = build(pmu=False)
    prof = npu_profile(tl, [stream_of(OFFSETS, cycles=[1000.0, 5000.0, 6000.0])], CLOCK_HZ)
    assert prof is not None
    op = prof.jobs[0].operators[1]
    assert op.npu_cycles is None and op.ratio == pytest.approx(op.cycles / 5000.0)


def test_no_debug_database_keeps_the_job_whole(timeline: InferenceTimeline) -> None:
    prof = npu_profile(timeline, [])
    assert prof is not None and not prof.mapped
    assert "no Vela debug database" in (prof.message or "")
    (job,) = prof.jobs
    assert job.operators == () and job.stream is None
    assert job.jobs == 4 and job.samples > 0 and job.running > 0 and job.cycles_mean == JOB + 400


@pytest.mark.parametrize(
    ("offsets", "what"),
    [([100, 200, 400], "offsets do not fit"), ([10, 20, 30], "offsets do not fit")],
)
def test_a_database_of_another_compile_is_refused(timeline: InferenceTimeline, offsets: list[int], what: str) -> None:
    """The last kernel command beyond the sampled stream, or far from its end: not this stream."""
    prof = npu_profile(timeline, [stream_of(offsets)])
    assert prof is not None and not prof.mapped and what in (prof.message or "")
    assert all(job.operators == () for job in prof.jobs)


def test_a_database_with_more_streams_is_refused(timeline: InferenceTimeline) -> None:
    streams = read_debug_db(BudgetText.read(TINY / "tiny_int8_debug.xml")).streams
    assert len(streams) == 2
    prof = npu_profile(timeline, streams)
    assert prof is not None and not prof.mapped
    assert "2 command stream(s), but the capture has 1 sampled NPU layer" in (prof.message or "")


def test_two_streams_in_one_layer_are_ambiguous() -> None:
    tl = build(qbase=[QBASE, QBASE + 0x1000])
    prof = npu_profile(tl, [stream_of(OFFSETS)])
    assert prof is not None and not prof.mapped and "2 different command streams" in (prof.message or "")


def test_no_npu_sample_no_section() -> None:
    enc = TelemetryEncoder()
    enc.target_info(0, CLOCK_HZ, TimeSource.DWT)
    tl = decode(bytes(enc))
    assert npu_profile(tl, []) is None
    assert sampling_analysis(tl) is None


def test_the_real_sampling_net_database_reads_its_one_stream() -> None:
    budget = load_budget(
        [
            MODEL / "sampling_net_per-layer.csv",
            MODEL / "sampling_net_debug.xml",
            MODEL / "sampling_net_summary_Ethos_U55_High_End_Embedded.csv",
        ]
    )
    (stream,) = budget.command_streams
    assert stream.offsets == [328, 484, 628, 744, 904, 1016, 1156]
    assert [op.name for op in stream.operations] == ["conv1", "dw2", "add3", "pool4", "pw5", "gap6", "fc7"]
    assert [op.model_index for op in stream.operations] == list(range(7))
    assert sum(op.op_cycles or 0 for op in stream.operations) == 21212  # Vela's total for the network
    assert budget.model.clock_hz == 500_000_000


def test_sampling_analysis_report_sections_and_breakdowns(timeline: InferenceTimeline) -> None:
    budget_free = sampling_analysis(timeline)
    assert budget_free is not None and budget_free.npu is not None and not budget_free.npu.mapped
    sections = budget_free.report_sections()
    assert set(sections) == {"sampling", "npu_operators", "cpu_hotspots"}
    assert sections["sampling"]["pc_samples"] == 4 and sections["sampling"]["sampler"][0]["period_cycles"] == 50
    assert sections["sampling"]["overhead_share"] is not None
    # Without a mapping only the CPU layer's hot spots make a breakdown.
    breakdowns = layer_breakdowns(budget_free)
    assert set(breakdowns) == {0} and breakdowns[0].parts == (("0x10000100", 1.0),)
