"""``tracer record``: copy a source into a crash-safe capture."""

from __future__ import annotations

import argparse
import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracer.cli.source_setup import seconds, split_command_line, tpiu_id
from tracer.sources.registry import source_schemes
from tracer.units import parse_clock

if TYPE_CHECKING:
    from tracer.capture.writer import CaptureWriter
    from tracer.cli.output import Console
    from tracer.power.live import MeterRecorder
    from tracer.sources.fvp import FvpSource

HELP = "record a source into a .trace capture"
DESCRIPTION = """\
Record the bytes of a source, exactly as received, into a capture. The capture is crash-safe: a
killed process or a pulled cable keeps every byte flushed so far (at most 0.1 s is at risk).
Recording ends at the end of the stream, after --duration, or on Ctrl-C, SIGTERM or SIGHUP (exit 130;
the capture keeps every byte received). A source that
goes away mid-capture (cable pulled, probe reset, connection reset) ends the recording with exit 4;
every byte received before is in the capture.

sources:
  {schemes}

probe options (jlink://, pyocd://): cpu=HZ swo=HZ | rtt=1 rtt_buffer=N rtt_address=ADDR|SYMBOL |
  arena=SYMBOL|ADDR arena_size=N|SYMBOL stack=NAME@SYMBOL poll_hz=HZ (memory polling); elf=PATH.
  See docs/probes.md.

examples:
  tracer record tcp://localhost:3443 -o bringup.trace --duration 30 --cpu-hz 160M     # pyOCD/OpenOCD SWO server
  tracer record tcp://localhost:2332 -o jlink.trace --cpu-hz 480M                       # J-Link GDB server SWO port
  tracer record socket://127.0.0.1:4321 -o qemu.trace                                   # QEMU UART on TCP
  tracer record "serial:///dev/ttyUSB0?baud=2000000" -o swo.trace --swo-hz 2M           # USB-UART on the SWO pin
  tracer record "jlink://600012345?device=STM32H743ZI&cpu=480M&swo=2M" -o h7.trace --elf app.elf
  tracer record "jlink://ip=192.168.1.40?device=Cortex-M55&rtt=1" -o rtt.trace
  tracer record "pyocd://0240000034544e45?target=stm32h743zitx&cpu=480M&swo=2M" -o h7.trace
  tracer record "pyocd://?target=nrf52840&arena=arena_used_bytes&stack=main@main_stack" -o mem.trace --elf app.elf
  tracer record orbflow://localhost:3402 -o orb.trace
  tracer record socket://127.0.0.1:4321 -o run.trace --power joulescope://   # + run.jls
  tracer record fvp -o fvp.trace --debug-db out/model_debug.xml -- \\
      FVP_Corstone_SSE-300_Ethos-U55 -a app.axf -C ethosu.extra_args="--pmu-trace npu.json"
""".format(schemes="\n  ".join(source_schemes()))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer record``."""
    parser.add_argument(
        "source", metavar="SOURCE", help="source URL (see below), or 'fvp' followed by -- and an FVP command line"
    )
    parser.add_argument(
        "command", nargs="*", metavar="-- FVP_COMMAND", help="the FVP command line to run, after -- (fvp only)"
    )
    split_command_line(parser)
    parser.add_argument("-o", "--output", metavar="CAPTURE", required=True, help="capture file to create (.trace)")
    parser.add_argument("--duration", type=seconds, metavar="S", help="stop after S seconds (default: until the end)")
    parser.add_argument("--force", action="store_true", help="replace CAPTURE if it exists")
    parser.add_argument(
        "--power",
        metavar="METER",
        help="also record a power meter beside the capture (CAPTURE with .jls): joulescope://[SERIAL][?rate=HZ] "
        "or ppk2://PORT[?voltage=MV]; then 'tracer report CAPTURE --power CAPTURE.jls' (docs/energy.md)",
    )
    parser.add_argument(
        "--elf",
        metavar="PATH",
        help="firmware ELF: its build ID goes into the capture; probe options may name its symbols",
    )
    parser.add_argument(
        "--debug-db",
        metavar="XML",
        help="Vela debug database (--enable-debug-db) to map an FVP's PMU trace to layers (fvp only)",
    )
    meta = parser.add_argument_group("what the capture header records")
    meta.add_argument("--cpu-hz", type=parse_clock, metavar="HZ", help="core clock, e.g. 160M")
    meta.add_argument("--swo-hz", type=parse_clock, metavar="HZ", help="SWO bit rate, e.g. 2M")
    meta.add_argument("--tpiu", choices=("on", "off"), help="whether the stream is TPIU-formatted (default: detect)")
    meta.add_argument(
        "--tpiu-id", type=tpiu_id, default=1, metavar="N", help="TPIU source ID carrying ITM (default: 1)"
    )
    meta.add_argument("--ts-prescaler", type=int, choices=(1, 4, 16, 64), default=None, help="ITM timestamp prescaler")
    meta.add_argument("--notes", default="", help="free text stored in the header")


@contextmanager
def _stop_signals_set(stop: threading.Event, caught: list[str]) -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP set ``stop`` instead of raising inside a write; a second one raises.

    A KeyboardInterrupt landing between two steps of appending a chunk could leave the writer's
    bookkeeping behind the file; stopping at the top of the recording loop cannot. All three end
    the recording the same way: the tail is flushed and the capture closed. ``caught`` gets the
    name of the signal that stopped it.
    """
    from tracer.cli.signals import on_stop_signals

    def handler(name: str) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        caught.append(name)
        stop.set()

    with on_stop_signals(handler):
        yield


def run(args: argparse.Namespace) -> int:
    """Record until the end, the duration, or Ctrl-C."""
    from tracer.capture.writer import CaptureWriter
    from tracer.cli.source_setup import capture_metadata, source_factory
    from tracer.errors import ExitCode, UsageError
    from tracer.pipeline.provenance import git_revision
    from tracer.pipeline.record import record
    from tracer.sources.fvp import FvpSource

    console = args.console
    source: Any = source_factory(args.source, args.command)()
    if args.debug_db and not isinstance(source, FvpSource):
        raise UsageError("--debug-db maps an FVP's PMU trace to layers: use it with the fvp source")
    image = None
    if args.elf:
        from tracer.elf import open_elf

        image = open_elf(args.elf)
        if hasattr(source, "attach_elf"):
            source.attach_elf(image)
    meter = start_meter(args.power, args.output, args.force)
    open_beside_meter(source, meter)
    try:
        meta = capture_metadata(source, args.source, args)
        if args.ts_prescaler is not None:
            meta.ts_prescaler = args.ts_prescaler
        meta.notes = args.notes
        revision = git_revision(args.elf)  # the checkout the firmware (or the command) is in
        if revision is not None and "git_revision" not in meta.extra:
            meta = meta.merged(revision)
        if image is not None:
            meta = meta.merged(image.identity)
            if not image.build_id:
                console.warn(
                    f"{image.name} has no build ID (link with -Wl,--build-id); its content hash is recorded instead"
                )
        with CaptureWriter(args.output, meta, overwrite=args.force) as writer:
            stop = threading.Event()
            caught: list[str] = []
            with console.progress(f"recording {args.source}") as bar, _stop_signals_set(stop, caught):
                try:
                    result = record(source, writer, duration=args.duration, stop=stop, on_tick=bar.update)
                except KeyboardInterrupt:  # a second signal while stopping
                    result = None
                if result is None or result.ended == "stopped":
                    writer.close()
                    how = "interrupted" if caught[:1] in ([], ["SIGINT"]) else f"stopped by {caught[0]}"
                    console.info(f"{how}; {args.output} keeps {writer.bytes_received} bytes")
                    return ExitCode.INTERRUPTED
            if isinstance(source, FvpSource):
                _ingest_pmu_trace(source, writer, args.debug_db, console)
    finally:
        source.close()
        if meter is not None:
            meter.stop()
            console.info(f"power meter {args.power} recorded to {Path(args.output).with_suffix('.jls')}")
    console.info(f"recorded {result.bytes} bytes in {result.seconds:.1f} s to {args.output} ({result.ended})")
    npu = getattr(source, "npu_sampling", None)  # probe sampling of the NPU: the rate it achieved
    if npu is not None:
        console.info(npu.sentence())
    if result.ended == "lost":
        console.error(f"source lost: {result.message}; every byte received ({result.bytes} bytes) is in {args.output}")
        return ExitCode.SOURCE_UNAVAILABLE
    return ExitCode.OK


def start_meter(url: str | None, output: str, force: bool) -> MeterRecorder | None:
    """The ``--power`` meter ``url``, recording into ``output`` with .jls (started before the
    source: it covers it); None without one (``record`` and ``live``).
    """
    if not url:
        return None
    from tracer.errors import UsageError
    from tracer.power.live import meter_recorder

    path = Path(output).with_suffix(".jls")
    if path.exists() and not force:
        raise UsageError(f"{path} exists (the meter's recording beside {output}); --force replaces it")
    meter = meter_recorder(url, str(path))
    meter.start()
    return meter


def open_beside_meter(source: Any, meter: MeterRecorder | None) -> None:
    """Open ``source``; if it cannot be opened, stop the meter started for it (``record``, ``live``)."""
    try:
        source.open()
    except BaseException:
        if meter is not None:
            meter.stop()
        raise


def _ingest_pmu_trace(source: FvpSource, writer: CaptureWriter, debug_db: str | None, console: Console) -> None:
    """Report the FVP's exit status; keep its PMU trace in the capture and summarise its NPU timeline."""
    import numpy as np

    from tracer.errors import CaptureError, reading_file
    from tracer.limits import MAX_PMU_TRACE_BYTES, InputError, gunzip_limited, parse_json, read_limited
    from tracer.telemetry.fvp_pmu_trace import npu_timeline, pmu_trace_note, read_debug_db, read_pmu_trace

    code = source.wait(timeout=30)  # the FVP writes the trace as it exits
    if code not in (0, None):
        console.warn(f"the FVP exited with status {code}; its last output:\n{source.output_tail}")
    path = source.pmu_trace
    if path is None:
        if debug_db:
            console.warn(
                '--debug-db given but the FVP command asks for no PMU trace (-C ethosu.extra_args="--pmu-trace FILE")'
            )
        return
    if not Path(path).is_file():
        console.warn(f"the FVP wrote no PMU trace at {path}")
        return
    try:
        with reading_file(str(path), "a PMU trace", CaptureError):
            blob = read_limited(Path(path), MAX_PMU_TRACE_BYTES, "a PMU trace")
        trace = read_pmu_trace(blob, str(path))
        raw = parse_json(blob if blob[:2] != b"\x1f\x8b" else gunzip_limited(blob, MAX_PMU_TRACE_BYTES, "a PMU trace"))
        raw_events = raw["traceEvents"] if isinstance(raw, dict) else raw
    except (CaptureError, InputError, KeyError, OSError) as exc:
        console.warn(f"PMU trace {path} not kept: {exc}")
        return
    writer.note(pmu_trace_note(str(path), raw_events))
    patch: dict[str, Any] = {"fvp_pmu_trace": str(path), "fvp_pmu_trace_sha256": hashlib.sha256(blob).hexdigest()}
    if debug_db:
        patch["vela_debug_db"] = str(debug_db)
    writer.update_metadata(patch)
    console.info(f"kept the FVP PMU trace {path} ({len(trace.events)} events) in the capture")
    if not debug_db:
        return
    timeline = npu_timeline(trace, read_debug_db(debug_db), source=str(path))
    for problem in timeline.log["fvp_pmu_trace"]["problems"]:
        console.warn(problem)
    console.info(
        f"NPU timeline: {len(timeline.inferences)} inferences, {len(timeline.npu_jobs)} NPU jobs, "
        f"{len(timeline.spans)} layer spans (NPU measured; CPU gaps are model estimates)"
    )
    if len(timeline.inferences):
        spans = timeline.spans
        rows = np.flatnonzero(spans.inference == timeline.inferences.number[0])
        for row in rows[np.argsort(spans.start[rows], kind="stable")].tolist():
            info = timeline.layer(int(spans.layer[row]))
            note = "  (model estimate)" if info.engine.value == "cpu" else ""
            cycles = int(spans.end[row] - spans.start[row])
            console.info(f"  layer {info.index:>3} {info.label:<24} {info.engine.value}  {cycles:>10} cycles{note}")
