"""Cache-coherency rules on synthetic timelines (built with our encoder): missing or partial cleans,
cleans in the wrong order, missing invalidates, line alignment, nondeterministic outputs, and DWT
data-trace writes into buffers an NPU job owns; and no false alarm on a correct sequence."""

from __future__ import annotations

import json
from collections.abc import Callable

from analysis_helpers import findings_of
from hypothesis import given, settings
from hypothesis import strategies as st
from telemetry_encoder import TelemetryEncoder
from telemetry_streams import decode

from tracer.analysis.coherency import analyse_coherency, lines_of
from tracer.analysis.findings.coherency import RULES as COHERENCY_RULES
from tracer.base.firmware_marks import NPU_READS, NPU_WRITES
from tracer.base.timeline import InferenceTimeline
from tracer.telemetry.wire import TimeSource

INPUT = 0x31000000
OUTPUT = 0x31001000
CLEAN, INVALIDATE = 1, 2

# step(n, enc, t, what): called at the part ``what`` of inference n at time t, may emit records itself;
# build() emits its own record for a "write", "clean" or "invalidate" part only when it returns True.
Step = Callable[[int, TelemetryEncoder, int, str], bool]


def correct(n: int, enc: TelemetryEncoder, t: int, what: str) -> bool:
    """Emit every step as a correct firmware does."""
    return True


def build(
    inferences: int = 4,
    step: Step = correct,
    input_len: int = 4096,
    output_len: int = 2048,
    crcs: Callable[[int], tuple[int, int]] | None = None,
) -> InferenceTimeline:
    """Per inference: the CPU writes the input, layer 0 (NPU) cleans it, runs a job reading it
    and writing the output, invalidates the output; layer 1 (CPU) reads the output."""
    enc = TelemetryEncoder()
    enc.target_info(0, 100_000_000, TimeSource.DWT)
    enc.layer_info(1, 0, 1, "ethos-u", "npu0")
    enc.layer_info(2, 1, 0, "SOFTMAX", "softmax")
    for n in range(inferences):
        t = 1000 + n * 100_000
        if step(n, enc, t, "write"):
            enc.cpu_write(t, INPUT, input_len)
        enc.inference_begin(t + 100)
        if crcs:
            enc.buffer_crc(t + 150, 0, crcs(n)[0], input_len)
        enc.npu_buffer(t + 200, n, NPU_READS, INPUT, input_len)
        enc.npu_buffer(t + 210, n, NPU_WRITES, OUTPUT, output_len)
        enc.layer_begin(t + 300, 0, 1)
        if step(n, enc, t + 400, "clean"):
            enc.cache_op(t + 400, CLEAN, INPUT, input_len)
        step(n, enc, t + 450, "before-job")
        enc.npu_job_begin(t + 500, n)
        step(n, enc, t + 600, "during-job")
        enc.npu_job_end(t + 5000, n)
        if step(n, enc, t + 5100, "invalidate"):
            enc.cache_op(t + 5100, INVALIDATE, OUTPUT, output_len)
        enc.layer_end(t + 5200, 0)
        enc.cpu_read(t + 5300, OUTPUT, output_len)
        enc.layer_begin(t + 5400, 1, 0)
        enc.layer_end(t + 6000, 1)
        if crcs:
            enc.buffer_crc(t + 6050, 1, crcs(n)[1], 10)
        enc.inference_end(t + 6100)
    return decode(bytes(enc))


def coherency_findings(timeline: InferenceTimeline) -> list:
    return findings_of(timeline, COHERENCY_RULES)


def test_a_correct_sequence_finds_nothing() -> None:
    """Clean after the write and before the job, invalidate after the job and before the read."""
    tl = build()
    analysis = analyse_coherency(tl)
    assert analysis.jobs_checked == 4 and analysis.buffers_declared == 8
    assert analysis.problems == [] and analysis.notes == []
    assert coherency_findings(tl) == []


def test_missing_clean_names_the_job_the_layer_the_write_and_the_fix() -> None:
    """No clean in inference 2: an error at layer 0 with the CPU's last write and the fix."""

    def no_clean(n: int, enc: TelemetryEncoder, t: int, what: str) -> bool:
        return not (what == "clean" and n == 2)

    tl = build(step=no_clean)
    (finding,) = coherency_findings(tl)
    assert finding.id == "coherency-missing-clean" and finding.severity.value == "error" and finding.layer == 0
    assert finding.inferences == (2,)
    assert finding.message == (
        "NPU job 2 in layer 0 (npu0) read input buffer 0x31000000+4096, but no cache clean covered it after the "
        "CPU's last write (0x31000000+4096 at cycle 201,000) and before the job began (cycle 201,500): the NPU "
        "read stale memory (in 1 of 4 inferences)"
    )
    assert finding.fix.startswith("add SCB_CleanDCache_by_Addr((void *)0x31000000, 4096) after the CPU writes")
    assert "ethosu_invoke" in finding.fix


def test_a_partial_clean_reports_the_lines_left_out() -> None:
    """A clean of the first 1024 bytes only: the other 3072 are reported, as line ranges."""

    def short_clean(n: int, enc: TelemetryEncoder, t: int, what: str) -> bool:
        if what == "clean":
            enc.cache_op(t, CLEAN, INPUT, 1024)
            return False
        return True

    tl = build(step=short_clean)
    (finding,) = coherency_findings(tl)
    assert finding.id == "coherency-missing-clean" and finding.inferences == (0, 1, 2, 3)
    example = finding.evidence["examples"][0]
    assert example["uncleaned_bytes"] == 3072 and example["uncleaned"] == ["0x31000400..0x31001000"]
    assert "left 3072 bytes out" in finding.message


def test_a_clean_before_the_last_write_does_not_count() -> None:
    """The CPU writes the input again after the clean: the clean is stale."""

    def late_write(n: int, enc: TelemetryEncoder, t: int, what: str) -> bool:
        if what == "before-job" and n == 1:
            enc.cpu_write(t, INPUT + 64, 32)
        return True

    tl = build(step=late_write)
    (finding,) = coherency_findings(tl)
    assert finding.id == "coherency-missing-clean" and finding.inferences == (1,)
    assert finding.evidence["examples"][0]["uncleaned"] == ["0x31000040..0x31000060"]


def test_missing_invalidate_before_the_cpu_reads_the_output() -> None:
    """No invalidate after the job: the CPU's read may see stale lines."""

    def no_invalidate(n: int, enc: TelemetryEncoder, t: int, what: str) -> bool:
        return what != "invalidate"

    tl = build(step=no_invalidate)
    (finding,) = coherency_findings(tl)
    assert finding.id == "coherency-missing-invalidate" and finding.layer == 0 and finding.severity.value == "error"
    assert "wrote output buffer 0x31001000+2048, but the CPU read it at cycle 6,300" in finding.message
    assert finding.fix.startswith("add SCB_InvalidateDCache_by_Addr((void *)0x31001000, 2048) after ethosu_invoke")


def test_an_invalidate_before_the_job_only_does_not_count() -> None:
    """Invalidating the output before the job (not after) leaves the read unprotected."""

    def early_invalidate(n: int, enc: TelemetryEncoder, t: int, what: str) -> bool:
        if what == "before-job":
            enc.cache_op(t, INVALIDATE, OUTPUT, 2048)
        return what != "invalidate"

    tl = build(step=early_invalidate)
    assert [f.id for f in coherency_findings(tl)] == ["coherency-missing-invalidate"]


def test_unaligned_invalidate_and_buffer_are_warnings() -> None:
    """A 2000-byte output: its buffer and its invalidate do not fill whole 32-byte lines."""
    tl = build(output_len=2000)
    (finding,) = coherency_findings(tl)
    assert finding.id == "coherency-unaligned" and finding.severity.value == "warning" and finding.layer == 0
    assert finding.message.startswith(
        "the invalidate range and the NPU output buffer 0x31001000+2000 in layer 0 "
        "(npu0) do(es) not cover whole 32-byte cache lines"
    )
    assert "__ALIGNED(32)" in finding.fix
    assert lines_of(0x31001000, 2000) == (0x31001000 // 32, 0x31001000 // 32 + 63)


def test_same_input_different_outputs_flags_a_coherency_suspect() -> None:
    """The same input CRC, three different output CRCs: a warning, pointing at the missing clean."""

    def no_clean(n: int, enc: TelemetryEncoder, t: int, what: str) -> bool:
        return what != "clean"

    tl = build(step=no_clean, crcs=lambda n: (0xCAFE0001, [0x11, 0x22, 0x33, 0x22][n]))
    found = {f.id: f for f in coherency_findings(tl)}
    nondet = found["coherency-nondeterministic-output"]
    assert nondet.severity.value == "warning" and nondet.layer == 0
    assert "the same input (CRC 0xCAFE0001) gave 3 different outputs across 4 inferences" in nondet.message
    assert "NPU job 0 in layer 0 (npu0) is the first coherency problem found (missing-clean)" in nondet.message
    assert nondet.evidence["output_crcs"] == ["0x00000011", "0x00000022", "0x00000033"]
    assert "coherency-missing-clean" in found
    # The same outputs every time: nothing to say.
    assert coherency_findings(build(crcs=lambda n: (0xCAFE0001, 0x11))) == []


def test_dwt_data_trace_write_into_a_buffer_the_npu_owns() -> None:
    """A DWT data-trace write into the input while job 1 runs: an error with the address, value, PC."""

    def poke(n: int, enc: TelemetryEncoder, t: int, what: str) -> bool:
        if what == "during-job" and n == 1:
            enc.data_pc(0, 0x0800028C)
            enc.data_address(0, 0x0040, size=2)  # Armv7-M address offset: bits 15:0 of 0x31000040
            enc.data_value(0, 0x100, write=True)
            enc.data_address(0, 0x0040, size=2)
            enc.data_value(0, 0x100, write=False)  # a read: fine
        return True

    tl = build(step=poke)
    (finding,) = coherency_findings(tl)
    assert finding.id == "coherency-cpu-write-during-npu-job" and finding.layer == 0 and finding.inferences == (1,)
    assert finding.message.startswith(
        "the CPU wrote 0x0040 (low 16 bits) (value 0x100, PC 0x0800028C, DWT data trace) while NPU job 1 in "
        "layer 0 (npu0) owned its input buffer 0x31000000+4096"
    )


def test_without_buffer_marks_nothing_is_claimed() -> None:
    """NPU jobs and cache operations but no declarations (the pipeline benchmark's shape): no finding,
    and the analysis says what it could not check."""
    enc = TelemetryEncoder()
    enc.inference_begin(0)
    enc.layer_begin(10, 0, 1)
    enc.cache_op(20, CLEAN, INPUT, 100)
    enc.npu_job_begin(30, 0)
    enc.npu_job_end(40, 0)
    enc.layer_end(50, 0)
    enc.inference_end(60)
    tl = decode(bytes(enc))
    analysis = analyse_coherency(tl)
    assert analysis.problems == [] and "not checked" in analysis.notes[0]
    assert coherency_findings(tl) == []


def test_an_npu_output_read_by_the_next_job_needs_no_clean() -> None:
    """Job B reads what job A wrote, and the CPU wrote that region before A: no clean needed."""
    enc = TelemetryEncoder()
    enc.inference_begin(0)
    enc.cpu_write(10, OUTPUT, 2048)  # an old CPU write to the region
    enc.npu_buffer(20, 0, NPU_WRITES, OUTPUT, 2048)
    enc.npu_job_begin(30, 0)
    enc.npu_job_end(40, 0)
    enc.npu_buffer(50, 1, NPU_READS, OUTPUT, 2048)
    enc.npu_job_begin(60, 1)
    enc.npu_job_end(70, 1)
    enc.inference_end(80)
    assert analyse_coherency(decode(bytes(enc))).problems == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3), st.integers(0, 8), st.integers(1, 5)), max_size=40))
def test_random_mark_sequences_never_break_the_rules(steps: list[tuple[int, int, int, int]]) -> None:
    """Any order of buffer marks, cache operations and NPU jobs: the rules run, and every finding
    is JSON-ready with a layer that exists or None."""
    enc = TelemetryEncoder()
    enc.inference_begin(0)
    enc.layer_begin(1, 0, 1)
    t = 10
    for what, job, block, size in steps:
        address, length = INPUT + 512 * block, 96 * size
        t += 7
        if what == 0:
            enc.cpu_write(t, address, length)
        elif what == 1:
            enc.cpu_read(t, address, length)
        elif what == 2:
            enc.cache_op(t, 1 + job % 3, address, length)
        elif what == 3:
            enc.npu_buffer(t, job, job % 2, address, length)
        elif what == 4:
            enc.npu_job_begin(t, job)
        elif what == 5:
            enc.npu_job_end(t, job)
        else:
            enc.buffer_crc(t, job % 2, block, length)
    enc.layer_end(t + 1, 0)
    enc.inference_end(t + 2)
    for finding in coherency_findings(decode(bytes(enc))):
        json.dumps(finding.to_json())
        assert finding.layer in (0, None)
