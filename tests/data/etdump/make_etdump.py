"""Write ``arm_runner_two_inferences.etdp``: an ETDump built with the flatbuffers builder from
ExecuTorch's own ETDump schema (the code tracer generated from it, tracer.telemetry.etdump.schema).

Not recorded on a device: ExecuTorch is too heavy to install here (it needs PyTorch). The blocks and
events follow what ExecuTorch's runtime writes (devtools/etdump/etdump_flatcc.cpp,
runtime/executor/method.cpp, backends/arm/runtime/EthosUBackend.cpp at commit cff6f4dd32): one
``Execute`` block per ``Method::execute()`` call holding a ``Method::execute`` profile event,
``OPERATOR_CALL`` / ``DELEGATE_CALL`` events with their instruction ids, and inside the delegate call
the Ethos-U backend's ``EthosUBackend::execute()`` and ``+EthosUBackend::execute()NPU`` events
(recorded with the delegate call's instruction id); size-prefixed, identifier ``ED00``. The tick
values are made up; the tests assert the ones written here.

Run: ``python tests/data/etdump/make_etdump.py`` (from the repository root).
"""

from __future__ import annotations

from pathlib import Path

import flatbuffers

from tracer.telemetry.etdump.schema import AllocationEvent, Allocator, ETDump, Event, ProfileEvent, RunData

OUT = Path(__file__).with_name("arm_runner_two_inferences.etdp")
# (name, instruction id, start tick, end tick) per Execute block
RUNS = [
    [
        ("Method::execute", -1, 1_000, 501_000),
        ("OPERATOR_CALL", 0, 1_200, 11_200),
        ("DELEGATE_CALL", 1, 11_300, 491_300),
        ("EthosUBackend::execute()", 1, 11_400, 491_200),
        ("+EthosUBackend::execute()NPU", 1, 20_000, 480_000),
        ("OPERATOR_CALL", 2, 491_400, 500_900),
    ],
    [
        ("Method::execute", -1, 600_000, 1_110_000),
        ("OPERATOR_CALL", 0, 600_200, 610_400),
        ("DELEGATE_CALL", 1, 610_500, 1_100_500),
        ("EthosUBackend::execute()", 1, 610_600, 1_100_400),
        ("+EthosUBackend::execute()NPU", 1, 619_000, 1_089_000),
        ("OPERATOR_CALL", 2, 1_100_600, 1_109_900),
    ],
]
ALLOCATIONS = [(0, 752_640), (0, 1_048_576)]  # (allocator id, bytes) in the first block


def build() -> bytes:
    b = flatbuffers.Builder(1024)
    runs = []
    for k, events in enumerate(RUNS):
        offsets = []
        if k == 0:
            for allocator, size in ALLOCATIONS:
                AllocationEvent.Start(b)
                AllocationEvent.AddAllocatorId(b, allocator)
                AllocationEvent.AddAllocationSize(b, size)
                alloc = AllocationEvent.End(b)
                Event.Start(b)
                Event.AddAllocationEvent(b, alloc)
                offsets.append(Event.End(b))
        for name, instruction, start, end in events:
            text = b.CreateString(name)
            ProfileEvent.Start(b)
            ProfileEvent.AddName(b, text)
            ProfileEvent.AddChainIndex(b, 0)
            ProfileEvent.AddInstructionId(b, instruction)
            ProfileEvent.AddStartTime(b, start)
            ProfileEvent.AddEndTime(b, end)
            profile = ProfileEvent.End(b)
            Event.Start(b)
            Event.AddProfileEvent(b, profile)
            offsets.append(Event.End(b))
        RunData.StartEventsVector(b, len(offsets))
        for offset in reversed(offsets):
            b.PrependUOffsetTRelative(offset)
        vector = b.EndVector()
        allocators = None
        if k == 0:
            name = b.CreateString("method allocator")
            Allocator.Start(b)
            Allocator.AddName(b, name)
            one = Allocator.End(b)
            RunData.StartAllocatorsVector(b, 1)
            b.PrependUOffsetTRelative(one)
            allocators = b.EndVector()
        block = b.CreateString("Execute")
        RunData.Start(b)
        RunData.AddName(b, block)
        if allocators is not None:
            RunData.AddAllocators(b, allocators)
        RunData.AddEvents(b, vector)
        runs.append(RunData.End(b))
    ETDump.StartRunDataVector(b, len(runs))
    for run in reversed(runs):
        b.PrependUOffsetTRelative(run)
    run_data = b.EndVector()
    ETDump.Start(b)
    ETDump.AddVersion(b, 0)
    ETDump.AddRunData(b, run_data)
    b.FinishSizePrefixed(ETDump.End(b), file_identifier=b"ED00")
    return bytes(b.Output())


if __name__ == "__main__":
    OUT.write_bytes(build())
    print(f"{OUT}: {OUT.stat().st_size} bytes")
