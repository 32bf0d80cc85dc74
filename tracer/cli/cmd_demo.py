"""``tracer demo``: build the demo firmware, run it on QEMU (Cortex-M55), record and report."""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path

from tracer.cli.source_setup import seconds

HELP = "run the demo network on QEMU mps3-an547 (Cortex-M55), record it and print the report"
DESCRIPTION = """\
Build the demo firmware (firmware_snippets/demo: a 10-layer int8 network instrumented with the
trc library) when needed, run it on QEMU's Corstone-300 board (qemu-system-arm -M mps3-an547,
-icount shift=0, so every run is cycle-for-cycle identical), record its UART through pyserial
socket:// into a capture, and print the report of that capture.

QEMU has no NPU and no cycle-accurate CPU: cycles are SysTick ticks (32 MHz) of emulated time, in
which one instruction takes 1 ns; the layers marked NPU run on the CPU, and their NPU PMU values
are simulated. The capture and the report say so.

Needs qemu-system-arm and, to build, arm-none-eabi-gcc and make (Debian/Ubuntu:
apt-get install --no-install-recommends qemu-system-arm gcc-arm-none-eabi make); exit 4 if missing.
The firmware sources come with the package; TRACER_FIRMWARE_DIR=DIR builds from another
firmware_snippets folder (your own copy, edited) instead.

scenarios (--scenario; the fault is in the capture, the demo itself exits 0):
  clean            nothing wrong: 'tracer check --fail-on warning' passes
  isr-jitter       a timer interrupt (S32K timer, exception 18) preempts layer 4 (pw4) in every
                   4th inference (1, 5, 9 ...) for about as long as the layer itself
  missing-clean    the cache clean of the input before layer 0's NPU job is left out: the
                   (simulated) NPU reads stale lines, and the same input frame gives different
                   outputs
  stack-overflow   layer 6 (pool6) of inference 2 puts a scratch buffer on the stack that runs
                   64 bytes past the main stack's canary
  arena-too-small  a 12 KiB arena for a 13 KiB plan: the allocation fails as in TensorFlow Lite
                   Micro ("Failed to resize buffer. Requested: ..."), no inference runs

--slow LAYER:PCT makes one layer slower by PCT percent of its own time in every inference (a spin
on the time base at the end of the layer: exact on the deterministic target), a build with a known
regression for 'tracer compare' and 'tracer trend'; the capture's header and labels say so.

examples:
  tracer demo
  tracer demo --inferences 20 -o demo.trace
  tracer demo --inferences 5 --format json
  tracer report demo.trace --per-inference
  tracer demo --scenario isr-jitter -o jitter.trace && tracer check jitter.trace --fail-on warning
  tracer demo -o good.trace && tracer demo --slow pw4:3 -o slow.trace && tracer compare good.trace slow.trace --threshold 2
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer demo``."""
    from tracer.sources.qemu import SCENARIOS

    parser.add_argument("--inferences", type=int, default=20, metavar="N", help="inferences to run (default: 20)")
    parser.add_argument("-o", "--output", metavar="CAPTURE", help="keep the capture here (default: a temporary file)")
    parser.add_argument("--force", action="store_true", help="replace CAPTURE if it exists")
    parser.add_argument("--scenario", choices=SCENARIOS, default="clean", metavar="NAME",
                        help=f"what the firmware does: {', '.join(SCENARIOS)} (default: clean; see below)")  # fmt: skip
    parser.add_argument("--slow", metavar="LAYER:PCT",
                        help="make layer LAYER (conv0, dw1 ... fc9) slower by PCT percent, e.g. pw4:3")  # fmt: skip
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format (default: text)")
    parser.add_argument("--per-inference", action="store_true", help="list every inference with every layer")
    parser.add_argument("--build-dir", metavar="DIR", type=Path,
                        help="where make builds the firmware (default: firmware_snippets/build in a checkout, "
                             "else ~/.cache/tracer/firmware-build-VERSION)")  # fmt: skip
    parser.add_argument("--timeout", type=seconds, metavar="S",
                        help="give up after S seconds of running (default: 30 + 0.5 per inference)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Build, run, record, report."""
    from tracer.errors import ExitCode, UsageError

    if args.inferences < 1:
        raise UsageError(f"--inferences must be at least 1, not {args.inferences}")
    if args.output:
        return _run(args, Path(args.output))
    with tempfile.TemporaryDirectory(prefix="tracer-demo-") as tmp:
        code = _run(args, Path(tmp) / "demo.trace")
        if code == ExitCode.OK:
            args.console.info("the capture was temporary; pass -o FILE to keep it")
        return code


def _run(args: argparse.Namespace, capture: Path) -> int:
    from tracer.analysis.analyze import analyze
    from tracer.capture.metadata import CaptureMetadata
    from tracer.pipeline.record import record
    from tracer.capture.writer import CaptureWriter
    from tracer.errors import ExitCode
    from tracer.export.report_json import report_object, write_report_json
    from tracer.export.report_text import write_report_text
    from tracer.sources.qemu import QemuDemoSource, Slowdown, check_tools, demo_elf
    from tracer.pipeline.load import load_timeline
    from tracer.pipeline.provenance import git_revision

    console = args.console
    slow = Slowdown.parse(args.slow) if args.slow else None
    check_tools(build=True)
    console.info("building the demo firmware (make; nothing is rebuilt when up to date)")
    elf = demo_elf(args.build_dir)
    source = QemuDemoSource(elf, args.inferences, args.scenario, slow=slow)
    timeout = args.timeout if args.timeout is not None else 30.0 + 0.5 * args.inferences
    console.info(f"running {args.inferences} inferences on QEMU {elf.name} (-icount shift=0)")
    source.open()
    try:
        meta = CaptureMetadata.from_json({**source.metadata(), **(git_revision(elf) or {})})
        with CaptureWriter(capture, meta, overwrite=args.force) as writer:
            with console.progress("recording") as bar:
                result = record(source, writer, duration=timeout, on_tick=bar.update)
    finally:
        source.close()
    status = source.exit_code
    if result.ended == "duration":
        console.error(f"the demo did not finish within {timeout:g} s; the capture keeps what arrived")
        return ExitCode.SOURCE_UNAVAILABLE
    if result.ended == "lost":
        console.error(f"lost the connection to QEMU: {result.message}")
        return ExitCode.SOURCE_UNAVAILABLE
    console.info(f"recorded {result.bytes:,} bytes in {result.seconds:.2f} s to {capture}; QEMU exit status {status}")
    timeline, read = load_timeline(capture)
    for warning in read.warnings:
        console.warn(warning)
    # The report names the capture file only when the user asked to keep it (-o).
    facts = dataclasses.replace(read, path=os.fspath(capture) if args.output else None)
    # The report with its findings, as 'tracer report' makes it (the scenarios' faults show there).
    report = report_object(analyze(timeline, facts), args.per_inference)
    if args.format == "json":
        write_report_json(report, _stdout())
    else:
        write_report_text(report, _stdout())
    if status != 0:
        output = source.qemu_output()
        said = "; ".join(line.text for line in timeline.console if line.text.startswith("ERROR"))
        console.error(f"the demo firmware exited with status {status}" + (f": {said}" if said else "")
                      + (f" (QEMU: {output})" if output else ""))  # fmt: skip
        return ExitCode.SOURCE_UNAVAILABLE
    return ExitCode.OK


def _stdout():  # noqa: ANN202 - sys.stdout, looked up at call time (tests replace it)
    import sys

    return sys.stdout
