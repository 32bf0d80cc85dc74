"""The sampler (``trc_sampler.c``) built for the host: the records it emits, as the host decodes them.

``firmware_snippets`` is compiled with the host gcc (``make host``) and linked with
``tests/firmware_harness/sampler_harness.c``, which points the NPU sampler at a register block in
memory (U55 and U85 PMU layouts), samples exception frames (the basic frame, and the Armv8-M frame
with the callee registers stacked first), measures the cost with a scripted clock, and draws
dithered periods. The host decodes the bytes with the telemetry decoder, which puts the samples
on the timeline (:mod:`tracer.telemetry.samples`); every expected value is written in the harness.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from firmware_host import HARNESS, link_harness, printed_facts, run
from telemetry_streams import decode

from tracer.telemetry.wire import MIN_WORDS, RecordType

CLOCK_STEP = 0x100  # the harness's clock advances this much per read


@pytest.fixture(scope="module")
def harness(host_lib: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, dict[str, int]]:
    """Link the harness with the host library, run it: (bytes, facts it printed)."""
    tmp = tmp_path_factory.mktemp("sampler")
    exe = link_harness(host_lib, tmp / "sampler_harness", HARNESS / "sampler_harness.c")
    out = tmp / "out.bin"
    done = run([str(exe), str(out)])
    facts = {k: int(v) for k, v in printed_facts(done.stdout).items()}
    return out.read_bytes(), facts


def test_every_record_is_accepted_and_none_is_damaged(harness: tuple[bytes, dict[str, int]]) -> None:
    timeline = decode(harness[0])
    assert not timeline.loss.any
    types = [r.type for r in timeline.records]
    assert types.count(RecordType.NPU_SAMPLE) == 5 + 2 and types.count(RecordType.PC_SAMPLE) == 5 + 2
    for record in timeline.records:
        assert len(record.words) + 1 >= MIN_WORDS[RecordType(record.type)]


def test_npu_samples_carry_the_registers(harness: tuple[bytes, dict[str, int]]) -> None:
    samples = decode(harness[0]).samples
    npu = samples.npu
    assert len(npu) == 2 and samples.calibration == 10  # 5 rounds of (PC, NPU) while measuring
    assert npu.qread.tolist() == [484, 1164]
    assert npu.status.tolist() == [1, 0x22] and npu.running.tolist() == [True, False]
    assert npu.qbase.tolist() == [0x10003000] * 2 and npu.qsize.tolist() == [1164] * 2
    # U55: PMCCNTR (48 bits) and 4 counters from 0x300; U85: no cycle counter, 8 counters from 0x1300.
    assert npu.pmu_cycles.tolist() == [(0x1234 << 32) | 0x89ABCDEF, -1]
    assert npu.counters[0].tolist() == [100, 101, 102, 103, -1, -1, -1, -1]
    assert npu.counters[1].tolist() == [200 + i for i in range(8)]
    assert npu.inference.tolist() == [-1, -1]


def test_pc_samples_come_from_either_frame_layout(harness: tuple[bytes, dict[str, int]]) -> None:
    pc = decode(harness[0]).samples.pc
    assert pc.pc.tolist() == [0x10000400, 0x10000888]
    assert pc.exception.tolist() == [0x13, 0x13]  # IPSR bits of the stacked xPSR


def test_sampler_info_and_the_measured_cost(harness: tuple[bytes, dict[str, int]]) -> None:
    data, facts = harness
    info = decode(data).samples.info
    assert len(info) == 1
    (only,) = info
    assert only.npu and only.pc and only.how == "timer interrupt"
    assert (only.period_cycles, only.dither_cycles) == (3200, 1600)
    # One round is a PC and an NPU sample: two records, one clock read each.
    assert facts["cost"] == 2 * CLOCK_STEP * 16 and only.cost_cycles == 2 * CLOCK_STEP


def test_dithered_period_stays_in_its_band(harness: tuple[bytes, dict[str, int]]) -> None:
    facts = harness[1]
    assert 3200 - 800 <= facts["period_min"] < 3200 - 700
    assert 3200 + 700 < facts["period_max"] < 3200 + 800
