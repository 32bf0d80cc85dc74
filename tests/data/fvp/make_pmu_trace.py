#!/usr/bin/env python3
"""Write a synthetic FVP Ethos-U PMU trace for the compiled tiny_int8 model (tracer's tests).

No FVP runs here, so the trace is made, not recorded. Its layout follows what is public about the
FVP's ``--pmu-trace`` output: Chrome trace-event JSON under ``traceEvents`` with string-typed
numbers in NPU cycles (ExecuTorch PR #14401 shows an ``axi_enabled_cycles`` event), and the
command-queue read position on the ``qread`` track in ``args.qread`` (32-bit words), which is what
ExecuTorch's Model Explorer overlay joins with Vela's debug database (examples/arm/visualize.py).

The schedule: INFERENCES inferences; in each, command stream 1 then, after a CPU gap (the L2Norm
operator), command stream 2. Each NPU operation takes a known number of cycles (below), and the
queue read position passes each operation's offset when the NPU issues it. ``expected.json``
holds the schedule the tests compare against.

Usage: python make_pmu_trace.py DEBUG_DB.xml OUT.json EXPECTED.json
"""

from __future__ import annotations

import csv
import io
import json
import sys
import xml.etree.ElementTree as ET

INFERENCES = 3
CPU_GAP = 5000  # cycles between the two command streams (the CPU runs L2Norm)
BETWEEN = 20000  # cycles between inferences


def main(db_path: str, out_path: str, expected_path: str) -> None:
    root = ET.parse(db_path).getroot()
    queue = list(
        csv.DictReader(io.StringIO(next(t for t in root.iter("table") if t.get("name") == "queue").text.strip()))
    )
    streams: dict[int, list[int]] = {}
    for row in queue:
        streams.setdefault(int(row["cmdstream_id"]), []).append(int(row["offset"]))
    events = [{"name": "process_name", "ph": "M", "pid": "NPU", "args": {"name": "NPU"}}]
    expected = []
    t = 1000
    for inference in range(INFERENCES):
        for n, (stream, offsets) in enumerate(sorted(streams.items())):
            offsets = sorted(offsets)
            run_start = t
            events.append(_qread(t, 0))
            t += 40  # the NPU reads the first operation's register settings
            for i, offset in enumerate(offsets):
                cycles = 300 + 97 * ((i * 7 + inference * 3 + stream) % 11)  # deterministic, varied
                kick = t
                events.append(_qread(kick, offset // 4))
                # a DMA/AXI counter event inside the operation
                events.append(
                    {
                        "name": "axi_enabled_cycles",
                        "ph": "X",
                        "ts": str(kick + 5),
                        "pid": "DMA",
                        "tid": "axi_enabled_cycles",
                        "dur": str(cycles // 2),
                    }
                )
                expected.append(
                    {
                        "inference": inference,
                        "stream": stream,
                        "offset": offset,
                        "start": run_start if i == 0 else kick,
                        "end": None,
                        "axi": cycles // 2,
                    }
                )
                t = kick + cycles
                if i:
                    expected[-2]["end"] = kick
            events.append(_qread(t, offsets[-1] // 4 + 1))  # NPU_OP_STOP read: the job ends
            expected[-1]["end"] = t
            t += CPU_GAP if n + 1 < len(streams) else BETWEEN
    with open(out_path, "w") as f:
        json.dump({"traceEvents": events}, f, indent=1)
    with open(expected_path, "w") as f:
        json.dump(expected, f, indent=1)


def _qread(ts: int, words: int) -> dict[str, object]:
    return {"name": "qread", "ph": "C", "ts": str(ts), "pid": "NPU", "tid": "qread", "args": {"qread": str(words)}}


if __name__ == "__main__":
    main(*sys.argv[1:4])
