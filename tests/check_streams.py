"""Captures with known content for the budget, findings, check and export tests.

Built with the reference telemetry encoder (the bytes the C library emits) and written as real
``.trace`` captures, so the tests go through the same decoding as a recorded capture.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from telemetry_encoder import TelemetryEncoder

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.writer import CaptureWriter
from tracer.telemetry.wire import INFO_NPU_PMU_SIMULATED, TimeSource


@dataclasses.dataclass
class LayerSpec:
    """One layer of a synthetic model.

    Attributes:
        name: Its name.
        op: Its operator (TFLite spelling).
        npu: Runs on the NPU (with a PMU snapshot, NPU job and cache records).
        cycles: Cycles per execution, or one value per inference.
        active: NPU_ACTIVE share of the PMU cycle counter, for NPU layers.
    """

    name: str
    op: str
    npu: bool
    cycles: int | Sequence[int]
    active: float = 0.95

    def cycles_of(self, inference: int) -> int:
        """Cycles of this layer in inference ``inference``."""
        return self.cycles if isinstance(self.cycles, int) else self.cycles[inference]


def encode_model(
    layers: Sequence[LayerSpec],
    inferences: int = 5,
    clock_hz: int = 100_000_000,
    arena: tuple[int, int] | None = (40_000, 65_536),
    stacks: Sequence[tuple[str, int, int, bool]] = (("main", 8192, 2000, True),),
    text_before: str = "",
    text_after: str = "",
    simulated: bool = False,
) -> TelemetryEncoder:
    """The telemetry of ``inferences`` inferences of a model made of ``layers``.

    Args:
        layers: The model.
        inferences: How many.
        clock_hz: The clock the firmware reports.
        arena: (used, size) reported once, or None.
        stacks: (name, size, high-water, canary intact) reported after every inference.
        text_before, text_after: Console text on ITM port 0 before and after the inferences.
        simulated: Label the NPU PMU values simulated (as the QEMU demo does).
    """
    enc = TelemetryEncoder()
    t = 1_000
    if text_before:
        enc.text(text_before)
    enc.target_info(t, clock_hz, TimeSource.DWT, flags=(INFO_NPU_PMU_SIMULATED if simulated else 0))
    # NPU_ACTIVE (35), AXI1 read beats (386): the events MLEK's profiler counts.
    enc.pmu_config(t + 1, 55, [35, 386], simulated=simulated)
    for index, layer in enumerate(layers):
        enc.layer_info(t + 2 + index, index, int(layer.npu), layer.op, layer.name)
    if arena is not None:
        enc.arena(t + 50, *arena)
    t += 1_000
    for n in range(inferences):
        enc.inference_begin(t, n)
        t += 20
        for index, layer in enumerate(layers):
            cycles = layer.cycles_of(n)
            enc.layer_begin(t, index, int(layer.npu))
            if layer.npu:
                enc.cache_op(t + 1, 1, 0x3100_0000, 1024)
                enc.npu_job_begin(t + 2, index)
                npu_cycles = max(cycles - 10, 1)
                enc.pmu_snapshot(t + cycles - 6, npu_cycles, [int(npu_cycles * layer.active), 40 + index])
                enc.npu_job_end(t + cycles - 4, index)
                enc.cache_op(t + cycles - 2, 2, 0x3100_0400, 1024)
            enc.layer_end(t + cycles, index)
            t += cycles + 5
        enc.inference_end(t)
        for stack_id, (name, size, high, ok) in enumerate(stacks):
            enc.stack(t + 10 + stack_id, stack_id, name, size, high, ok)
        t += 500
    if text_after:
        enc.text(text_after)
    return enc


def write_capture(path: Path, data: bytes, source: str = "test://check") -> Path:
    """``data`` (ITM bytes, not TPIU-formatted) as a .trace capture."""
    with CaptureWriter(path, CaptureMetadata(source=source, tpiu=False), flush_bytes=4096) as writer:
        writer.write(data)
    return path


def budget_toml(
    path: Path,
    layers: Sequence[tuple[str, str, str, float]],
    clock_hz: int | None = None,
    model: str = "",
    extra: str = "",
) -> Path:
    """A TOML budget with ``[[layer]]`` tables of (name, op, engine, cycles) in order."""
    lines = ["[model]", 'name = "synthetic"']
    if clock_hz:
        lines.append(f"clock_hz = {clock_hz}")
    if model:
        lines.append(model)
    for index, (name, op, engine, cycles) in enumerate(layers):
        lines += [
            "",
            "[[layer]]",
            f"index = {index}",
            f'name = "{name}"',
            f'op = "{op}"',
            f'engine = "{engine}"',
            f"cycles = {cycles}",
        ]
    path.write_text("\n".join(lines) + "\n" + extra)
    return path
