"""The synthetic workload the benchmarks stream: one inference of an instrumented TFLite Micro +
Ethos-U application with a 30-layer model, as our own telemetry encoder's slots.

Per inference: begin, input CRC, 30 layers (18 on the NPU, each with a cache clean before its NPU
job, the job's begin and end, a PMU snapshot and an invalidate after), output CRC, end, and the
main stack's report. Each benchmark adds its own reports after that (:func:`inference_slots`).
"""

from __future__ import annotations

from collections.abc import Mapping

from telemetry_encoder import SlotSpec

from tracer.telemetry.wire import RecordType as R

LAYERS = 30


def is_npu(layer: int) -> bool:
    """Which layers run on the NPU (3 of every 5)."""
    return layer % 5 < 3


def inference_slots(scale: Mapping[int, float] | None = None) -> tuple[list[SlotSpec], int]:
    """One inference up to the main stack's report, and the time offset after its end record.

    Args:
        scale: Per layer index, a factor on its length (a build where some layers are slower).
    """
    slots = [SlotSpec(R.INFERENCE_BEGIN, 0, ("hi", "inference")), SlotSpec(R.BUFFER_CRC, 900, (0, 0x1234ABCD, 3072))]
    t = 2000
    for layer in range(LAYERS):
        npu = is_npu(layer)
        slots.append(SlotSpec(R.LAYER_BEGIN, t, (layer | (int(npu) << 16),)))
        length = round((4000 + 300 * layer) * (scale or {}).get(layer, 1.0))
        if npu:
            slots += [
                SlotSpec(R.CACHE_OP, t + 40, (1, 0x31000000, 4096)),
                SlotSpec(R.NPU_JOB_BEGIN, t + 60, ("inference",)),
                SlotSpec(R.PMU_SNAPSHOT, t + length - 80, (4 | (1 << 8), 1200 + layer, 0, 1100, 384, 256, 31)),
                SlotSpec(R.NPU_JOB_END, t + length - 60, ("inference", 0)),
                SlotSpec(R.CACHE_OP, t + length - 40, (2, 0x31001000, 2048)),
            ]
        slots.append(SlotSpec(R.LAYER_END, t + length, (layer,), jitter=37 * (layer % 4)))
        t += length + 200
    slots += [
        SlotSpec(R.BUFFER_CRC, t + 100, (1, 0x55AA55AA, 10)),
        SlotSpec(R.INFERENCE_END, t + 300, ("inference", 0)),
        SlotSpec(R.STACK, t + 900, (0 | (1 << 8) | (4 << 16), 16384, 2048, int.from_bytes(b"main", "little"))),
    ]
    return slots, t
