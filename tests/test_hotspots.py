"""CPU hot spots: PC samples attributed to layers and named from the ELF, inlined functions included.

``tests/data/elf/inline.c`` is built with the real ``arm-none-eabi-gcc -O2 -g`` (two kernels
folded into their caller, one with a helper folded into it, one kept out of line). Names are
checked against ``arm-none-eabi-addr2line -i`` for every code address, not against our reader.
The attribution and the shares are checked on streams built with the reference encoder.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from sample_streams import TelemetryEncoder, dwt_pc_sample, pc_sample
from telemetry_streams import CLOCK_HZ, decode

from tracer.analysis.hotspots import OTHER, TOP_FUNCTIONS, CpuHotSpots, hot_spots, pc_layers
from tracer.base.timeline import InferenceTimeline
from tracer.elf.inlines import CodeLocator, open_locator
from tracer.errors import UsageError
from tracer.telemetry.wire import TimeSource

HERE = Path(__file__).parent / "data" / "elf"


def cpu_hot_spots(
    timeline: InferenceTimeline, locator: CodeLocator | None, top: int = TOP_FUNCTIONS
) -> CpuHotSpots | None:
    """The hot spots of ``timeline``'s PC samples as the sampling analysis makes them (each
    sample's layer, then the functions), with ``top`` functions per layer; None without any."""
    pc = timeline.samples.pc
    if not len(pc):
        return None
    order = np.argsort(pc.cycle, kind="stable")
    layer_of = pc_layers(timeline, pc.cycle[order])
    return hot_spots(timeline, pc.pc[order], pc.exception[order], layer_of, locator, top=top)


@pytest.fixture(scope="module")
def inline_elf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """inline.elf, built now by the cross compiler (-O2 -g)."""
    gcc = shutil.which("arm-none-eabi-gcc")
    assert gcc, "arm-none-eabi-gcc is needed (apt-get install gcc-arm-none-eabi; .ci/run installs it)"
    out = tmp_path_factory.mktemp("inline") / "inline.elf"
    subprocess.run(
        [
            gcc,
            "-mcpu=cortex-m55",
            "-mthumb",
            "-O2",
            "-g",
            "-nostdlib",
            "-ffreestanding",
            "-Wall",
            "-Werror",
            "-T",
            str(HERE / "tiny.ld"),
            str(HERE / "inline.c"),
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    return out


def addr2line(elf: Path, addresses: list[int]) -> list[list[str]]:
    """Per address, the function of each frame ``addr2line -i`` prints, innermost first."""
    done = subprocess.run(
        ["arm-none-eabi-addr2line", "-i", "-f", "-a", "-e", str(elf), *(f"{a:#x}" for a in addresses)],
        check=True,
        capture_output=True,
        text=True,
    )
    frames: list[list[str]] = []
    lines = done.stdout.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("0x"):
            frames.append([])
            i += 1
            continue
        frames[-1].append(lines[i])  # function name, then file:line
        i += 2
    return frames


def text_range(elf: Path) -> tuple[int, int]:
    done = subprocess.run(["arm-none-eabi-nm", "-S", str(elf)], check=True, capture_output=True, text=True)
    ends = []
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "Tt":
            ends.append((int(parts[0], 16), int(parts[0], 16) + int(parts[1], 16)))
    return min(a for a, _ in ends), max(b for _, b in ends)


def test_inlined_functions_match_addr2line_at_every_address(inline_elf: Path) -> None:
    locator = open_locator(inline_elf)
    assert locator.has_inlines
    lo, hi = text_range(inline_elf)
    addresses = list(range(lo, hi, 2))
    expected = addr2line(inline_elf, addresses)
    inlined_seen = set()
    for address, frames in zip(addresses, expected):
        function, inlined = locator.locate(address)
        assert function == frames[-1], hex(address)  # the outermost frame is the real function
        outer_inline = frames[-2] if len(frames) > 1 else None
        assert inlined == outer_inline, (hex(address), frames)
        if inlined:
            inlined_seen.add(inlined)
    assert {"scale", "accumulate"} <= inlined_seen or "run_layer" in inlined_seen


def test_an_elf_without_debug_information_names_symbols_only(inline_elf: Path, tmp_path: Path) -> None:
    stripped = tmp_path / "stripped.elf"
    subprocess.run(["arm-none-eabi-objcopy", "--strip-debug", str(inline_elf), str(stripped)], check=True)
    locator = open_locator(stripped)
    assert not locator.has_inlines
    image_function = locator.image.function_at(locator.image.symbols["run_layer"].address)
    assert locator.locate(locator.image.symbols["run_layer"].address) == (image_function[0], None)


def test_not_an_elf_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.elf"
    bad.write_bytes(b"not an elf at all")
    with pytest.raises(UsageError):
        open_locator(bad)


def pcs_timeline(per_layer: dict[int, list[int]], outside: list[int], handler_pcs: list[int] = ()) -> InferenceTimeline:
    """Two inferences with layers 0 (CPU) and 1 (NPU); each layer gets the given PCs sampled."""
    enc = TelemetryEncoder()
    enc.target_info(0, CLOCK_HZ, TimeSource.DWT)
    enc.layer_info(1, 0, 0, "ADD", "cpu_layer")
    enc.layer_info(2, 1, 1, "ethos-u", "npu_layer")
    t = 100
    for _ in range(2):
        enc.inference_begin(t)
        for pc in outside:
            t += 5
            pc_sample(enc, t, pc)
        for layer in (0, 1):
            t += 10
            enc.layer_begin(t, layer, layer)
            for pc in per_layer.get(layer, []):
                t += 5
                pc_sample(enc, t, pc)
            for pc in handler_pcs if layer == 0 else []:
                t += 5
                pc_sample(enc, t, pc, exception=15)
            t += 10
            enc.layer_end(t, layer)
        t += 10
        enc.inference_end(t)
        t += 100
    return decode(bytes(enc))


def test_samples_go_to_their_layer_and_shares_add_up(inline_elf: Path) -> None:
    locator = open_locator(inline_elf)
    run_layer = locator.image.symbols["run_layer"].address
    out_of_line = locator.image.symbols["kernel_out_of_line"].address
    scale_pc = next(r.low for r in locator.ranges if r.name == "scale" and r.depth == 1)
    tl = pcs_timeline(
        {0: [scale_pc] * 6 + [out_of_line + 4] * 3 + [run_layer], 1: [out_of_line] * 2},
        [run_layer] * 3,
        handler_pcs=[out_of_line + 2],
    )
    spots = cpu_hot_spots(tl, locator)
    assert spots is not None and spots.symbolised and spots.inlines and spots.message is None
    assert spots.samples == 2 * (3 + 11 + 2) and spots.outside_layers == 6 and spots.in_handlers == 2
    cpu, npu = spots.layers
    assert (cpu.layer, cpu.engine, cpu.samples) == (0, "cpu", 22) and (npu.layer, npu.engine, npu.samples) == (
        1,
        "npu",
        4,
    )
    assert sum(f.samples for f in cpu.functions) == cpu.samples
    assert sum(f.share for f in cpu.functions) == pytest.approx(1.0)
    top = cpu.functions[0]
    assert (top.name, top.inlined_in, top.samples) == ("scale", "run_layer", 12)
    assert cpu.functions[1].name == "kernel_out_of_line" and cpu.functions[1].samples == 8  # 3 + the handler's
    assert [f.name for f in npu.functions] == ["kernel_out_of_line"]


def test_the_tail_goes_to_one_other_row() -> None:
    pcs = [0x1000 + 4 * k for k in range(12) for _ in range(12 - k)]  # 12 distinct PCs, decreasing counts
    tl = pcs_timeline({0: pcs}, [])
    spots = cpu_hot_spots(tl, None, top=5)
    assert spots is not None and not spots.symbolised and "no ELF" in (spots.message or "")
    (layer,) = spots.layers
    assert [f.name for f in layer.functions][:5] == [f"{0x1000 + 4 * k:#010x}" for k in range(5)]
    assert layer.functions[-1].name == OTHER and len(layer.functions) == 6
    assert sum(f.samples for f in layer.functions) == layer.samples == 2 * len(pcs)
    assert sum(f.share for f in layer.functions) == pytest.approx(1.0)


def test_incomplete_inferences_do_not_count() -> None:
    tl = pcs_timeline({0: [0x2000] * 4}, [])
    tl.inferences.complete[:] = np.array([True, False])
    spots = cpu_hot_spots(tl, None)
    assert spots is not None and spots.layers[0].samples == 4 and spots.outside_layers == 4


def test_no_pc_samples_no_section() -> None:
    tl = pcs_timeline({}, [])
    assert cpu_hot_spots(tl, None) is None


def test_dwt_pc_samples_over_swo_go_to_the_span_they_arrived_in(tmp_path: Path) -> None:
    """DWT PC sample packets between the records: each counts to the layer whose begin and end
    records bracket it; a layer whose end record is damaged gets none (its samples stay outside)."""
    from tracer.analysis.sampling import sampling_analysis
    from tracer.pipeline.capture import decode_capture

    enc = TelemetryEncoder()
    enc.target_info(0, CLOCK_HZ, TimeSource.DWT)
    enc.layer_info(1, 0, 0, "ADD", "a")
    enc.layer_info(2, 1, 0, "MUL", "b")
    damaged_at = 0
    t = 1_000
    for n in range(3):
        enc.inference_begin(t)
        enc.layer_begin(t + 10, 0)
        for pc in (0x100, 0x100, 0x104):
            dwt_pc_sample(enc, pc)
        dwt_pc_sample(enc, None)  # sleeping: not a PC
        enc.layer_end(t + 500, 0)
        dwt_pc_sample(enc, 0x900)  # between layers
        enc.layer_begin(t + 510, 1)
        for pc in (0x200,) * 4:
            dwt_pc_sample(enc, pc)
        if n == 1:
            damaged_at = len(enc.out)
        enc.layer_end(t + 900, 1)
        enc.inference_end(t + 910)
        t += 2_000
    data = bytearray(bytes(enc))
    data[damaged_at + 3] ^= 0x40  # a bit flip in the header of inference 1's layer-1 end record
    raw = tmp_path / "swo.bin"
    raw.write_bytes(bytes(data))
    timeline = decode_capture(raw).timeline
    analysis = sampling_analysis(timeline)
    assert analysis is not None and analysis.hotspots is not None
    spots = analysis.hotspots
    assert spots.source == "DWT PC sampling (SWO) PC samples"
    by_layer = {layer.layer: layer for layer in spots.layers}
    assert by_layer[0].samples == 6 and {f.name: f.samples for f in by_layer[0].functions} == {
        "0x00000100": 4,
        "0x00000104": 2,
    }
    assert by_layer[1].samples == 8  # inferences 0 and 2; inference 1 lost its layer-1 end
    assert spots.samples == 3 * 8 and spots.outside_layers == 3 * 8 - 14


def test_dwt_pc_samples_that_start_late_in_the_capture_are_placed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PC sampling turned on at the 7th inference, the stream fed in batches of 64 bytes: the
    layers before it, whose begin records the collector never read, are passed over, and every
    sample goes to the layer it arrived in (before, the first such layer ended the matching:
    every sample stayed outside the layers)."""
    from tracer.capture.metadata import CaptureMetadata
    from tracer.capture.writer import CaptureWriter
    from tracer.pipeline import capture as pipeline_capture
    from tracer.pipeline.capture import decode_capture
    from tracer.telemetry.wire import RecordType

    monkeypatch.setattr(pipeline_capture, "FEED_BYTES", 64)
    enc = TelemetryEncoder()
    enc.target_info(0, CLOCK_HZ, TimeSource.DWT)
    enc.layer_info(1, 0, 0, "ADD", "a")
    t = 1_000
    for n in range(12):
        enc.inference_begin(t)
        enc.layer_begin(t + 10, 0)
        if n >= 6:
            for pc in (0x100, 0x104):
                dwt_pc_sample(enc, pc)
        enc.layer_end(t + 500, 0)
        enc.inference_end(t + 510)
        t += 1_000
    path = tmp_path / "late.trace"
    with CaptureWriter(path, CaptureMetadata(source="test", tpiu=False, cpu_hz=CLOCK_HZ), flush_bytes=64) as w:
        w.write(bytes(enc))
    timeline = decode_capture(path).timeline
    samples = [r for r in timeline.records if r.type == RecordType.PC_SAMPLE]
    assert len(samples) == 6 * 2
    starts = [1_000 + 1_000 * n + 10 for n in range(6, 12)]
    for sample, start in zip(samples, [s for s in starts for _ in range(2)]):
        assert start <= sample.cycle < start + 490  # inside its inference's layer
