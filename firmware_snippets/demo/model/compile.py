#!/usr/bin/env python3
"""Compile ``sampling_net.tflite`` with Vela and turn the result into what the demo firmware needs.

Steps (run from anywhere; everything is written beside this file):

1. ``make_model.py`` writes ``sampling_net.tflite`` (deterministic).
2. Vela (the ``vela`` command of the ``ethos-u-vela`` package, version 5.2 used here) compiles it
   for an Ethos-U55-128 (:data:`VELA_ARGS`) into ``vela/``: the optimised model
   ``sampling_net_vela.tflite``, the debug database ``sampling_net_debug.xml``
   (``--enable-debug-db``), the per-layer estimate ``sampling_net_per-layer.csv``
   (``--verbose-performance``), the summary CSV, and Vela's printout ``sampling_net_vela.txt``
   with the register command stream listing (``--verbose-register-command-stream``).
3. The register command stream is taken out of the optimised model (the ``ethos-u`` custom
   operator's first input: Vela's driver-actions payload ``COP1 ...`` whose ``CmdStream`` entry
   holds the words the NPU reads from QBASE) and written with the simulator's per-operation
   costs to ``sampling_stream.h`` (C, for the demo) and ``sampling_stream.json`` (the same numbers
   for tests and readers).

The simulated NPU (``demo/npu_sim.c``) spends on each operation Vela's estimate (``op_cycles`` of
the debug database's ``perf`` table) times :data:`SLOWDOWN`: two operations deliberately miss the
plan (one slower, one faster) so that a comparison with Vela has something to find. Its PMU
counters grow per operation by amounts derived from Vela's access-cycle estimates
(:func:`simulated_counters`). All of it is simulation, labelled so wherever it is shown.

``--no-vela`` skips step 2 and regenerates the header from the committed Vela outputs;
``--out DIR`` writes everything to DIR instead (the tests regenerate into a temporary folder and
compare with what is committed).
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL = "sampling_net"
OUT = "vela"
SYSTEM_CONFIG = "Ethos_U55_High_End_Embedded"
VELA_ARGS = [
    f"{MODEL}.tflite",
    "--accelerator-config",
    "ethos-u55-128",
    "--config",
    "Arm/vela.ini",
    "--system-config",
    SYSTEM_CONFIG,
    "--memory-mode",
    "Shared_Sram",
    "--enable-debug-db",
    "--verbose-performance",
    "--verbose-register-command-stream",
    "--output-dir",
    OUT,
]

# Simulated cost of each operation relative to Vela's estimate, by output tensor name.
SLOWDOWN = {"dw2": 2.5, "pw5": 0.6}
# The stream's opening weight transfer (before the first kernel starts): this share of the first
# operation's cycles, spent with the command processor waiting at its NPU_OP_DMA_WAIT.
SETUP_SHARE = 8  # 1/8
# Simulated time base: CPU ticks (32 MHz SysTick on QEMU mps3-an547) per simulated NPU cycle.
# The 42 us job of an Ethos-U55 at 500 MHz then lasts about 8.6 ms, as a mid-size model's job
# does on hardware, so that a timer at 1-10 kHz takes tens to hundreds of samples per job.
TICKS_PER_NPU_CYCLE = 10

# Ethos-U command words: bits 0-9 opcode, bit 14 one payload word follows.
KERNEL_OPS = {0x002: "NPU_OP_CONV", 0x003: "NPU_OP_DEPTHWISE", 0x005: "NPU_OP_POOL", 0x006: "NPU_OP_ELEMENTWISE"}
OP_STOP = 0x000
DA_CONFIG, DA_CMD_STREAM, DA_READ_APB, DA_NOP = 0x01, 0x02, 0x03, 0x05


def command_stream(optimised: Path) -> bytes:
    """The register command stream of the (single) ``ethos-u`` operator of a Vela-optimised model."""
    from ethosu.vela.tflite import Model  # Vela's schema modules, only here

    data = optimised.read_bytes()
    model = Model.Model.GetRootAsModel(data, 0)
    graph = model.Subgraphs(0)
    streams = []
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        if model.OperatorCodes(op.OpcodeIndex()).CustomCode() == b"ethos-u":
            tensor = graph.Tensors(op.Inputs(0))
            streams.append(model.Buffers(tensor.Buffer()).DataAsNumpy().tobytes())
    if len(streams) != 1:
        raise SystemExit(f"{optimised}: expected one ethos-u operator, found {len(streams)}")
    return driver_payload_stream(streams[0])


def driver_payload_stream(payload: bytes) -> bytes:
    """The command stream inside Vela's driver-actions payload (``COP1``, config, NOPs, CmdStream)."""
    words = struct.unpack(f"<{len(payload) // 4}I", payload[: len(payload) // 4 * 4])
    if not words or words[0] != int.from_bytes(b"COP1", "little"):
        raise SystemExit("the ethos-u operator's data does not start with COP1")
    i = 1
    while i < len(words):
        tag = words[i]
        kind = tag & 0xFF
        if kind == DA_CMD_STREAM:
            length = (tag >> 16) | (((tag >> 8) & 0xFF) << 16)
            return struct.pack(f"<{length}I", *words[i + 1 : i + 1 + length])
        i += 3 if kind == DA_CONFIG else 1
        if kind not in (DA_CONFIG, DA_NOP, DA_READ_APB):
            raise SystemExit(f"unexpected driver action {kind:#x} at word {i}")
    raise SystemExit("no CmdStream in the driver payload")


def kickoffs(stream: bytes) -> list[int]:
    """Byte offsets of the kernel-operation commands, in stream order."""
    offsets = []
    at = 0
    while at < len(stream):
        word = int.from_bytes(stream[at : at + 4], "little")
        if word & 0x3FF in KERNEL_OPS and not word & 0x4000:
            offsets.append(at)
        at += 8 if word & 0x4000 else 4
    return offsets


def debug_tables(path: Path) -> dict[str, list[dict[str, str]]]:
    """The debug database's tables (CSV in CDATA) as lists of rows."""
    root = ET.parse(path).getroot()
    return {t.get("name", ""): list(csv.DictReader(io.StringIO((t.text or "").strip()))) for t in root.iter("table")}


def simulated_counters(perf: dict[str, str], cycles: int) -> dict[str, int]:
    """The simulated PMU counters one operation adds: NPU_ACTIVE its cycles; AXI0 (SRAM) beats read
    and written two to one from Vela's SRAM access cycles; AXI1 (flash) beats read from Vela's
    off-chip flash access cycles (a 128-bit flash burst line per 4 access cycles)."""
    sram = int(perf.get("Sram_ac") or 0)
    flash = int(perf.get("OffChipFlash_ac") or 0)
    return {"npu_active": cycles, "axi0_rd": 2 * sram // 3, "axi0_wr": sram // 3, "axi1_rd": flash // 4}


def operations(stream: bytes, tables: dict[str, list[dict[str, str]]]) -> list[dict[str, object]]:
    """One entry per kernel operation, in stream order, checked against the debug database."""
    perf = {row["id"]: row for row in tables["perf"]}
    queue = sorted(tables["queue"], key=lambda q: int(q["offset"]))
    found = kickoffs(stream)
    offsets = [int(q["offset"]) for q in queue]
    if offsets != found:
        raise SystemExit(f"debug database offsets {offsets} are not the stream's kernel commands {found}")
    ops = []
    for index, q in enumerate(queue):
        row = perf[q["scheduled_id"]]
        vela = int(row["op_cycles"])
        cycles = round(vela * SLOWDOWN.get(row["name"], 1.0))
        ops.append(
            {
                "index": index,
                "offset": int(q["offset"]),
                "name": row["name"],
                "operator": row["operator"],
                "vela_op_cycles": vela,
                "npu_cycles": cycles,
                "ticks": cycles * TICKS_PER_NPU_CYCLE,
                "counters": simulated_counters(row, cycles),
            }
        )
    return ops


def header(stream: bytes, ops: list[dict[str, object]], setup: int) -> str:
    words = struct.unpack(f"<{len(stream) // 4}I", stream)
    lines = [
        "/* Generated by demo/model/compile.py from the Vela compile in demo/model/vela/: do not edit.",
        " * The register command stream of sampling_net (Ethos-U55-128) and what the simulated NPU",
        " * spends on each of its kernel operations (npu_sim.h). */",
        "#ifndef DEMO_SAMPLING_STREAM_H",
        "#define DEMO_SAMPLING_STREAM_H",
        "",
        "#include <stdint.h>",
        "",
        f"#define SAMPLING_STREAM_WORDS {len(words)}u",
        f"#define SAMPLING_OPS {len(ops)}u",
        f"#define SAMPLING_SETUP_CYCLES {setup}u          /* of operation 0, before its kickoff */",
        f"#define SAMPLING_TICKS_PER_NPU_CYCLE {TICKS_PER_NPU_CYCLE}u",
        "",
        "typedef struct sampling_op_cost {",
        "    uint32_t npu_cycles; /* simulated cycles of the operation */",
        "    uint32_t counters[4]; /* what it adds to NPU_ACTIVE, AXI0 read, AXI0 write, AXI1 read beats */",
        "} sampling_op_cost;",
        "",
        "static const uint32_t k_sampling_stream[SAMPLING_STREAM_WORDS] __attribute__((aligned(16))) = {",
    ]
    for i in range(0, len(words), 6):
        lines.append("    " + " ".join(f"0x{w:08x}u," for w in words[i : i + 6]))
    lines += ["};", "", "static const sampling_op_cost k_sampling_ops[SAMPLING_OPS] = {"]
    for op in ops:
        c = op["counters"]
        assert isinstance(c, dict)
        lines.append(
            f"    {{{op['npu_cycles']}u, {{{c['npu_active']}u, {c['axi0_rd']}u, {c['axi0_wr']}u, {c['axi1_rd']}u}}}},"
            f" /* {op['name']} {op['operator']} at {op['offset']} */"
        )
    lines += ["};", "", "#endif", ""]
    return "\n".join(lines)


def find_vela() -> str:
    """The ``vela`` command: beside this Python first (a virtual environment), else on PATH."""
    beside = Path(sys.executable).with_name("vela")
    found = str(beside) if beside.exists() else shutil.which("vela")
    if found is None:
        raise SystemExit("vela not found: pip install 'ethos-u-vela>=5.2,<6' (or pass --no-vela)")
    return found


def run_vela(where: Path) -> None:
    """Vela on ``where/sampling_net.tflite`` into ``where/vela`` (relative paths: the debug
    database records its source path)."""
    out = where / OUT
    if out.exists():
        shutil.rmtree(out)
    done = subprocess.run([find_vela(), *VELA_ARGS], cwd=where, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"vela failed:\n{done.stdout}{done.stderr}")
    listing = "$ vela " + " ".join(VELA_ARGS) + "\n" + done.stdout
    (out / f"{MODEL}_vela.txt").write_text(listing)


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    import make_model

    where = Path(argv[argv.index("--out") + 1]) if "--out" in argv else HERE
    where.mkdir(parents=True, exist_ok=True)
    if "--no-vela" not in argv:
        (where / f"{MODEL}.tflite").write_bytes(make_model.build_model())
        run_vela(where)
    vela_dir = (where if "--no-vela" not in argv else HERE) / OUT
    stream = command_stream(vela_dir / f"{MODEL}_vela.tflite")
    ops = operations(stream, debug_tables(vela_dir / f"{MODEL}_debug.xml"))
    setup = int(ops[0]["npu_cycles"]) // SETUP_SHARE
    (where / "sampling_stream.h").write_text(header(stream, ops, setup))
    truth = {
        "model": f"{MODEL}.tflite",
        "stream_bytes": len(stream),
        "setup_cycles": setup,
        "ticks_per_npu_cycle": TICKS_PER_NPU_CYCLE,
        "slowdown": SLOWDOWN,
        "operations": ops,
        "total_npu_cycles": sum(int(op["npu_cycles"]) for op in ops),
    }
    (where / "sampling_stream.json").write_text(json.dumps(truth, indent=2) + "\n")
    print(f"{len(ops)} operations, stream {len(stream)} bytes, {truth['total_npu_cycles']} simulated NPU cycles")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
