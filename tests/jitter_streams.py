"""Telemetry streams for the jitter tests: inferences of layers of given lengths, some runs made
longer by what the test emits inside them (an interrupt, another task, more work)."""

from __future__ import annotations

from collections.abc import Callable

from telemetry_encoder import TelemetryEncoder

from tracer.base.timeline import InferenceTimeline
from tracer.decode.itm import decode_bytes
from tracer.telemetry.decoder import TelemetryDecoder
from tracer.telemetry.wire import COUNTERS_PMU, TimeSource

PERIOD = 100_000
EVENTS = [35, 130, 135, 386]  # NPU_ACTIVE, AXI0 read beats, AXI0 write beats, AXI1 read beats

INFERENCE_TASK, SENSOR_TASK = 0x2000_0100, 0x2000_0200  # task ids (TCB addresses)

# extra(n, layer, enc, t) -> cycles added to the layer, emitting what it wants at time t.
Extra = Callable[[int, int, TelemetryEncoder, int], int]
# setup(enc, t): records before the first inference (task names, counter configuration).
Setup = Callable[[TelemetryEncoder, int], None]


def build(
    inferences: int,
    lengths: list[int],
    extra: Extra | None = None,
    npu: tuple[int, ...] = (),
    pmu: Callable[[int, int, int], list[int]] | None = None,
    start: int = 0,
    setup: Setup | None = None,
    time_source: TimeSource = TimeSource.DWT,
) -> InferenceTimeline:
    """``inferences`` inferences of layers of ``lengths`` cycles; ``extra`` lengthens some."""
    decoder = TelemetryDecoder()
    decoder.feed(decode_bytes(stream(inferences, lengths, extra, npu, pmu, start, setup, time_source)))
    decoder.finish()
    return decoder.timeline()


def stream(
    inferences: int,
    lengths: list[int],
    extra: Extra | None = None,
    npu: tuple[int, ...] = (),
    pmu: Callable[[int, int, int], list[int]] | None = None,
    start: int = 0,
    setup: Setup | None = None,
    time_source: TimeSource = TimeSource.DWT,
) -> bytes:
    """The ITM bytes :func:`build` decodes."""
    enc = TelemetryEncoder()
    enc.target_info(start, 100_000_000, time_source)
    enc.isr_info(start + 1, 24, "TIMER0")
    enc.pmu_config(start + 2, 55, EVENTS)
    for index in range(len(lengths)):
        enc.layer_info(start + 3, index, 1 if index in npu else 0, "CONV_2D", f"l{index}")
    if setup is not None:
        setup(enc, start + 4)
    for n in range(inferences):
        t = start + 1000 + n * PERIOD
        enc.inference_begin(t)
        t += 100
        for index, length in enumerate(lengths):
            enc.layer_begin(t, index, 1 if index in npu else 0)
            add = extra(n, index, enc, t) if extra else 0
            if pmu is not None and index in npu:
                cycles, *counters = pmu(n, index, length)
                enc.pmu_snapshot(t + length + add - 10, cycles, counters)
            t += length + add
            enc.layer_end(t, index)
            t += 50
        enc.inference_end(t)
    return bytes(enc)


def timer_in_layer(layer: int, every: int, first: int, cycles: int) -> Extra:
    def extra(n: int, index: int, enc: TelemetryEncoder, t: int) -> int:
        if index == layer and n % every == first:
            enc.isr_enter(t + 300, 24)
            enc.isr_exit(t + 300 + cycles, 24)
            return cycles
        return 0

    return extra


def two_tasks(enc: TelemetryEncoder, t: int) -> None:
    """Setup: the inference task and the sensor task named, the inference task running."""
    enc.task_info(t, INFERENCE_TASK, "inference", priority=2)
    enc.task_info(t + 1, SENSOR_TASK, "sensor", priority=3)
    enc.task_switch(t + 2, INFERENCE_TASK)


def task_in_layer(layer: int, inferences: tuple[int, ...], cycles: int, isr: int = 0) -> Extra:
    """The sensor task takes ``cycles`` from ``layer`` in ``inferences``, woken by TIMER0 running
    ``isr`` cycles just before (none when 0)."""

    def extra(n: int, index: int, enc: TelemetryEncoder, t: int) -> int:
        if index != layer or n not in inferences:
            return 0
        at = t + 200
        if isr:
            enc.isr_enter(at, 24)
            enc.isr_exit(at + isr, 24)
            at += isr
        enc.task_switch(at, SENSOR_TASK)
        enc.task_switch(at + cycles, INFERENCE_TASK)
        return isr + cycles

    return extra


def work_in_layer(
    layer: int, work: Callable[[int], int], cycles_per_work: int, instructions: Callable[[int], int] | None = None
) -> Extra:
    """``layer`` reports ``work(n)`` (trc_layer_work) and takes ``cycles_per_work`` more cycles per
    unit of it; with ``instructions``, also INST_RETIRED (configure it with :func:`inst_retired`)."""

    def extra(n: int, index: int, enc: TelemetryEncoder, t: int) -> int:
        if index != layer:
            return 0
        add = work(n) * cycles_per_work
        enc.work(t + 5, index, work(n))
        if instructions is not None:
            enc.cpu_counters(t + 6, index, COUNTERS_PMU, [instructions(n)])
        return add

    return extra


def inst_retired(enc: TelemetryEncoder, t: int) -> None:
    """Setup: the Armv8.1-M PMU counts INST_RETIRED (event 0x0008) per layer."""
    enc.cpu_counter_config(t, COUNTERS_PMU, [0x0008])
