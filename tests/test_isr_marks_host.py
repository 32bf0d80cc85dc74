"""The trc library's interrupt and buffer marks, built for the host: the exact bytes it emits
(against our encoder, written from the wire-format reference) and what the decoder makes of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from firmware_host import link_harness, run
from telemetry_encoder import TelemetryEncoder

from tracer.base.firmware_marks import NPU_READS, NPU_WRITES
from tracer.decode.itm import decode_bytes
from tracer.telemetry.decoder import TelemetryDecoder

CLOCK_START = 1000
CLOCK_STEP = 10

HARNESS = r"""
#include <stdio.h>
#include <string.h>
#include "trc.h"

static unsigned char g_out[4096];
static unsigned g_len;
static uint32_t g_clock = 1000u;

static int capture(void *ctx, const uint8_t *bytes, uint32_t length)
{
    (void)ctx;
    memcpy(&g_out[g_len], bytes, length);
    g_len += length;
    return 0;
}

static uint32_t now32(void) { g_clock += 10u; return g_clock; }

int main(int argc, char **argv)
{
    if (argc != 2) {
        return 2;
    }
    trc_use_writer(capture, 0);
    trc_set_time(now32, 0, 100000000u, TRC_TIME_USER);
    trc_isr_info(18u, "S32K_TIMER");
    trc_isr_info(40u, "A_VERY_LONG_INTERRUPT_HANDLER_NAME_CUT_AT_31");
    trc_inference_begin();
    trc_npu_buffer(7u, TRC_NPU_READS, (const void *)(uintptr_t)0x31000000u, 3072u);
    trc_npu_buffer(7u, TRC_NPU_WRITES, (const void *)(uintptr_t)0x31000C00u, 2048u);
    trc_layer_begin(0u, TRC_ENGINE_NPU);
    trc_isr_enter(18u);
    trc_isr_exit(18u);
    trc_layer_end(0u);
    trc_cpu_write((const void *)(uintptr_t)0x31000000u, 3072u);
    trc_cpu_read((const void *)(uintptr_t)0x31000C00u, 2048u);
    trc_inference_end(0u);
    printf("active=%u\n", (unsigned)trc_active_exception());
    FILE *out = fopen(argv[1], "wb");
    if (out == 0 || fwrite(g_out, 1, g_len, out) != g_len || fclose(out) != 0) {
        return 1;
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def emitted(host_lib: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, str]:
    """Link the harness with the library built by the host gcc (-Werror), run it."""
    tmp = tmp_path_factory.mktemp("marks")
    source = tmp / "marks.c"
    source.write_text(HARNESS)
    exe = link_harness(host_lib, tmp / "marks", source)
    out = tmp / "out.bin"
    done = run([str(exe), str(out)])
    return out.read_bytes(), done.stdout


def expected() -> bytes:
    """The same calls, per the wire-format reference."""
    clock = iter(range(CLOCK_START + 2 * CLOCK_STEP, 1 << 32, CLOCK_STEP))  # trc_set_time read one
    enc = TelemetryEncoder()
    enc.isr_info(next(clock), 18, "S32K_TIMER")
    enc.isr_info(next(clock), 40, "A_VERY_LONG_INTERRUPT_HANDLER_NAME_CUT_AT_31"[:31])
    enc.inference_begin(next(clock))
    enc.npu_buffer(next(clock), 7, NPU_READS, 0x31000000, 3072)
    enc.npu_buffer(next(clock), 7, NPU_WRITES, 0x31000C00, 2048)
    enc.layer_begin(next(clock), 0, 1)
    enc.isr_enter(next(clock), 18)
    enc.isr_exit(next(clock), 18)
    enc.layer_end(next(clock), 0)
    enc.cpu_write(next(clock), 0x31000000, 3072)
    enc.cpu_read(next(clock), 0x31000C00, 2048)
    enc.inference_end(next(clock))
    return bytes(enc)


def test_marks_are_the_bytes_of_the_wire_format(emitted: tuple[bytes, str]) -> None:
    """ISR_INFO (name cut at 31), NPU_BUFFER, ISR_ENTER/EXIT, CPU_WRITE/READ: byte for byte."""
    data, stdout = emitted
    reference = expected()
    first = next((i for i, (a, b) in enumerate(zip(data, reference)) if a != b), None)
    assert len(data) == len(reference) and first is None, f"first difference at byte {first}"
    assert "active=0" in stdout  # thread mode (a host build has no IPSR)


def test_the_decoder_reads_the_marks(emitted: tuple[bytes, str]) -> None:
    """An ISR slice inside layer 0 with its name, and the buffer marks as records."""
    decoder = TelemetryDecoder()
    decoder.feed(decode_bytes(emitted[0]))
    decoder.finish()
    tl = decoder.timeline()
    assert [(s.exception, s.name, s.end - s.start) for s in tl.isrs] == [(18, "S32K_TIMER", 10)]
    assert tl.spans.isr_cycles.tolist() == [10] and tl.spans.cycles.tolist() == [30]
    assert decoder.isr_names[40] == "A_VERY_LONG_INTERRUPT_HANDLER_N"
    kinds = [r.type for r in tl.records if r.type in (0x2A, 0x2C, 0x2D)]
    assert kinds == [0x2C, 0x2C, 0x2A, 0x2D]
    assert tl.inferences.complete.all() and not tl.loss.any
