"""``tracer demo``: build the demo firmware, run it on QEMU (Cortex-M55), record and report."""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from tracer.cli.source_setup import seconds

if TYPE_CHECKING:
    from tracer.base.timeline import InferenceTimeline
    from tracer.budget.model import Budget
    from tracer.cli.output import Console
    from tracer.elf.inlines import CodeLocator
    from tracer.power.recording import PowerRecording

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
  task-preemption  a second task (sensor) preempts layer 2 (pw2) in every 4th inference (2, 6,
                   10 ...): a timer interrupt wakes it, PendSV switches to it, it runs about half
                   as long as the layer; the capture has the task lane
  data-dependent   a detection post-process runs after the network as layer 10 (detect10);
                   frames 2, 5, 8 ... have an object, so more candidates: more work by design,
                   which the firmware reports with trc_layer_work()

  npu-sampling     after the ten layers, a Vela-compiled model (firmware_snippets/demo/model) runs
                   as one NPU job (layer 10) on a simulated NPU that walks its real command stream,
                   while a timer samples QREAD/STATUS/PMU and the interrupted PC at --sample-hz;
                   the report splits the job into Vela's operations (its debug database is read
                   from the model folder) and names the CPU hot spots of every layer from the ELF

The firmware runs two tasks in every scenario (inference and sensor) and drains its records
between layers (trc_flush), so that a layer's span holds only the records' reservations.

--slow LAYER:PCT makes one layer slower by PCT percent of its own time in every inference (a spin
on the time base at the end of the layer: exact on the deterministic target), a build with a known
regression for 'tracer compare' and 'tracer trend'; the capture's header and labels say so.

--power: the firmware sets a sync pin before each inference (trc_sync_pin),
and tracer writes what a Joulescope at 250 kS/s would have recorded beside
the capture (CAPTURE.jls, through pyjls): current from a per-layer power model,
white and 1/f noise, a meter clock 120 ppm fast, the pin on its input gpi[0].
The report attributes it (energy per layer and inference), labelled SIMULATED:
QEMU draws no power. Needs the power extra (pip install 'tracer[power]').

examples:
  tracer demo
  tracer demo --power -o demo.trace
  tracer report demo.trace --power demo.jls
  tracer demo --inferences 20 -o demo.trace
  tracer demo --inferences 5 --format json
  tracer report demo.trace --per-inference
  tracer demo --scenario isr-jitter -o jitter.trace && tracer check jitter.trace --fail-on warning
  tracer demo --scenario npu-sampling --sample-hz 10000 --inferences 100 -o sampling.trace
  tracer demo -o good.trace && tracer demo --slow pw4:3 -o slow.trace && tracer compare good.trace slow.trace --threshold 2
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer demo``."""
    from tracer.sources.qemu import SCENARIOS

    parser.add_argument("--inferences", type=int, default=20, metavar="N", help="inferences to run (default: 20)")
    parser.add_argument("-o", "--output", metavar="CAPTURE", help="keep the capture here (default: a temporary file)")
    parser.add_argument("--force", action="store_true", help="replace CAPTURE if it exists")
    parser.add_argument(
        "--scenario",
        choices=SCENARIOS,
        default="clean",
        metavar="NAME",
        help=f"what the firmware does: {', '.join(SCENARIOS)} (default: clean; see below)",
    )
    parser.add_argument(
        "--sample-hz",
        type=_rate,
        metavar="HZ",
        help="npu-sampling: the sampling timer's rate, 1 to 100k, k suffix accepted (default: 1k)",
    )
    parser.add_argument(
        "--slow", metavar="LAYER:PCT", help="make layer LAYER (conv0, dw1 ... fc9) slower by PCT percent, e.g. pw4:3"
    )
    parser.add_argument(
        "--power",
        action="store_true",
        help="also write a simulated power-meter recording beside the capture (CAPTURE.jls) and report its "
        "energy per layer (see below)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="report format (default: text)")
    parser.add_argument("--per-inference", action="store_true", help="list every inference with every layer")
    parser.add_argument(
        "--build-dir",
        metavar="DIR",
        type=Path,
        help="where make builds the firmware (default: firmware_snippets/build in a checkout, "
        "else ~/.cache/tracer/firmware-build-VERSION)",
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        metavar="S",
        help="give up after S seconds of running (default: 30 + 0.5 per inference)",
    )


def run(args: argparse.Namespace) -> int:
    """Build, run, record, report."""
    from tracer.errors import ExitCode, UsageError

    if args.inferences < 1:
        raise UsageError(f"--inferences must be at least 1, not {args.inferences}")
    if args.sample_hz is not None and args.scenario != "npu-sampling":
        raise UsageError("--sample-hz applies to --scenario npu-sampling only")
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
    from tracer.capture.writer import CaptureWriter
    from tracer.cli.output import open_output, terminal_width
    from tracer.errors import ExitCode
    from tracer.export.report_json import report_object, write_report_json
    from tracer.export.report_text import write_report_text
    from tracer.pipeline.load import load_timeline
    from tracer.pipeline.provenance import git_revision
    from tracer.pipeline.record import record
    from tracer.sources.qemu import SAMPLING_SCENARIO, QemuDemoSource, Slowdown, check_tools, demo_elf

    console = args.console
    slow = Slowdown.parse(args.slow) if args.slow else None
    check_tools(build=True)
    console.info("building the demo firmware (make; nothing is rebuilt when up to date)")
    elf = demo_elf(args.build_dir)
    power = getattr(args, "power", False)
    source = QemuDemoSource(elf, args.inferences, args.scenario, sample_hz=args.sample_hz, slow=slow, sync_pin=power)
    timeout = args.timeout if args.timeout is not None else 30.0 + 0.5 * args.inferences
    console.info(f"running {args.inferences} inferences on QEMU {elf.name} (-icount shift=0)")
    source.open()
    try:
        meta = CaptureMetadata.from_json({**source.metadata(), **(git_revision(elf) or {})})
        with CaptureWriter(capture, meta, overwrite=args.force) as writer, console.progress("recording") as bar:
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
    budget, locator = _sampling_inputs(elf) if args.scenario == SAMPLING_SCENARIO else (None, None)
    recording = _simulated_meter(timeline, capture, console) if power else None
    report = report_object(analyze(timeline, facts, budget, locator=locator, power=recording), args.per_inference)
    with open_output(None) as out:
        if args.format == "json":
            write_report_json(report, out)
        else:
            write_report_text(report, out, terminal_width(None))
    if status != 0:
        output = source.qemu_output()
        said = "; ".join(line.text for line in timeline.console if line.text.startswith("ERROR"))
        console.error(
            f"the demo firmware exited with status {status}"
            + (f": {said}" if said else "")
            + (f" (QEMU: {output})" if output else "")
        )
        return ExitCode.SOURCE_UNAVAILABLE
    return ExitCode.OK


def _simulated_meter(timeline: InferenceTimeline, capture: Path, console: Console) -> PowerRecording:
    """Write CAPTURE.jls: a simulated Joulescope's recording of the run (docs/energy.md)."""
    from tracer.base.timeline import Engine
    from tracer.power.reading import open_recording
    from tracer.power.simulate import Meter, PowerModel, SimulatedRecording, write_jls

    layer_mw = {
        i: (60.0 + 8.0 * (i % 4)) if info.engine == Engine.NPU else (26.0 + 4.0 * (i % 3))
        for i, info in timeline.layers.items()
    }
    model = PowerModel(layer_mw, other_mw=18.0, idle_mw=3.0)
    meter = Meter(250_000, drift_ppm=120.0, lead_s=0.002, tail_s=0.002, white_mw=2.0, pink_mw=1.0, seed=28)
    path = capture.with_suffix(".jls")
    write_jls(os.fspath(path), SimulatedRecording(timeline, model, meter), "tracer demo --power")
    console.info(f"wrote a SIMULATED power recording to {path} (250 kS/s, meter clock +120 ppm)")
    return open_recording(os.fspath(path))


def _sampling_inputs(elf: Path) -> tuple[Budget, CodeLocator]:
    """The npu-sampling model's Vela outputs (with its debug database) and the firmware's symbols."""
    from tracer.budget import load_budget
    from tracer.elf.inlines import open_locator
    from tracer.sources.qemu import firmware_dir

    vela = firmware_dir() / "demo" / "model" / "vela"
    files = [
        vela / "sampling_net_per-layer.csv",
        vela / "sampling_net_summary_Ethos_U55_High_End_Embedded.csv",
        vela / "sampling_net_debug.xml",
    ]
    return load_budget(files), open_locator(elf)


def _rate(text: str) -> int:
    from tracer.cli.analysis_input import frequency

    return int(frequency(text))
