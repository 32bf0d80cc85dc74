"""``tracer live``: watch a board, an FVP or the QEMU demo run, while recording it."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
from typing import Any

from tracer.cli.source_setup import split_command_line, tpiu_id
from tracer.sources.registry import source_schemes
from tracer.units import parse_clock

HELP = "watch a running target on the live screen (TUI), recording it"
DESCRIPTION = """\
Open a source and watch the network run: status (connected, lost, reconnecting, ended; bytes/s,
packets/s, overflows and lost records, the capture being written), inference latency against
the budget, the per-layer table (predicted against measured), the selected layer's history and
distribution, the timeline of one inference, memory (arena and stacks, 75%/90% marks), findings
and the firmware's console.

Every byte received is written to a capture first (default: live-YYYYMMDD-HHMMSS.trace here;
-o to choose, --no-record for none), so `tracer replay` shows the same session again later. A
source that goes away (cable, probe reset, server restart) shows as lost, then reconnecting with
backoff, and comes back by itself; nothing received is lost. Keys: space holds the screen still
(recording goes on), left/right previous/next inference, / filter, e export the report JSON,
? every key, q quit (ctrl+c: exit 130).

sources:
  demo  the demo network on QEMU mps3-an547 (Cortex-M55; built when needed; --inferences N)
  {schemes}

examples:
  tracer live demo --inferences 2000
  tracer live demo --budget captures/demo_budget.toml -o demo-live.trace
  tracer live "qemu://mps3-an547?scenario=npu-sampling" --elf tracer_demo.elf
  tracer live tcp://localhost:3443 --cpu-hz 160M --budget out/kws_per-layer.csv --budget out/kws_summary.csv
  tracer live "serial:///dev/ttyUSB0?baud=921600" --no-record
  tracer live "jlink://600012345?device=STM32H743ZI&cpu=480M&swo=2M"
  tracer live fvp -- FVP_Corstone_SSE-300_Ethos-U55 -a app.axf -C mps3_board.uart0.out_file=-
  tracer live tcp://localhost:3443 -o run.trace --power joulescope://   # + run.jls

--power METER records a power meter beside the capture (CAPTURE with .jls;
joulescope://[SERIAL][?rate=HZ] or ppk2://PORT[?voltage=MV]). While it
records, every few seconds the screen aligns the meter's newest samples with
the capture so far and shows energy per layer (µJ, mW), per inference and a
power lane for the inferences they cover ("energy of inferences #A-#B, meter
recording"); when the source ends, the whole recording, as 'tracer replay
CAPTURE --power CAPTURE.jls' does (docs/energy.md).
""".format(schemes="\n  ".join(source_schemes()))

DEMO_MACHINE = "mps3-an547"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer live``."""
    from tracer.cli.analysis_input import (
        add_budget_file_argument,
        add_calibration_argument,
        add_elf_argument,
        add_sync_input_argument,
    )
    from tracer.cli.screen import add_screen_arguments

    parser.add_argument(
        "source", metavar="SOURCE", help="'demo', a source URL (see below), or 'fvp' then -- and a command"
    )
    parser.add_argument(
        "command", nargs="*", metavar="-- FVP_COMMAND", help="the FVP command line, after -- (fvp only)"
    )
    split_command_line(parser)
    add_budget_file_argument(parser)
    add_calibration_argument(parser)
    record = parser.add_argument_group("recording")
    record.add_argument(
        "-o", "--output", metavar="CAPTURE", help="capture to write (default: live-<date>-<time>.trace)"
    )
    record.add_argument("--no-record", action="store_true", help="do not write a capture")
    record.add_argument("--force", action="store_true", help="replace CAPTURE if it exists")
    record.add_argument(
        "--power",
        metavar="METER",
        help="also record a power meter beside the capture (CAPTURE with .jls): joulescope://[SERIAL][?rate=HZ] "
        "or ppk2://PORT[?voltage=MV]; energy per layer on screen as it records (its newest samples), "
        "of the whole run once the source ends",
    )
    add_sync_input_argument(record)
    source = parser.add_argument_group("the source")
    source.add_argument(
        "--inferences",
        type=int,
        default=10_000,
        metavar="N",
        help="demo: inferences the firmware runs before it exits (default: 10000, about 80 s)",
    )
    source.add_argument(
        "--cpu-hz", type=parse_clock, metavar="HZ", help="core clock, until the firmware says (e.g. 160M)"
    )
    source.add_argument("--tpiu", choices=("on", "off"), help="whether the stream is TPIU-formatted (default: detect)")
    source.add_argument(
        "--tpiu-id", type=tpiu_id, default=1, metavar="N", help="TPIU source ID carrying ITM (default: 1)"
    )
    source.add_argument(
        "--reconnect-on-end",
        action="store_true",
        help="also reconnect when the source closes cleanly (a trace server that restarts)",
    )
    parser.add_argument(
        "--baseline",
        metavar="CAPTURE",
        help="a capture to compare with: per-layer p50 and its change (Δp50) in the layers table",
    )
    add_elf_argument(parser)
    add_screen_arguments(parser)


def source_url(args: argparse.Namespace) -> str:
    """The URL to open: ``demo`` is the QEMU demo."""
    from tracer.errors import UsageError

    if args.source in ("demo", "qemu-demo"):
        if args.inferences < 1:
            raise UsageError(f"--inferences must be at least 1, not {args.inferences}")
        return f"qemu://{DEMO_MACHINE}?inferences={args.inferences}"
    return str(args.source)


def run(args: argparse.Namespace) -> int:
    """Open, record, watch."""
    from tracer.capture.writer import CaptureWriter
    from tracer.cli.analysis_input import load_budget_files, open_elf_symbols
    from tracer.cli.cmd_record import open_beside_meter, start_meter
    from tracer.cli.cmd_replay import baseline_path
    from tracer.cli.screen import require_terminal, run_app, session_options
    from tracer.cli.source_setup import capture_metadata, source_factory
    from tracer.decode.tpiu import TpiuMode
    from tracer.errors import UsageError
    from tracer.session.engine import Session
    from tracer.session.feeds import SourceFeed
    from tracer.sources.reconnect import ReconnectingSource

    console = args.console
    options = dataclasses.replace(session_options(args), baseline=baseline_path(args.baseline))
    if args.power and args.no_record:
        raise UsageError("--power records the meter beside the capture: it needs one (drop --no-record)")
    budget = load_budget_files(args.budget)
    locator = open_elf_symbols(args.elf)
    url = source_url(args)
    build = source_factory(url, args.command)  # a bad URL is a usage error now, not a reconnect loop
    require_terminal("live")
    built: list[Any] = []  # the source of the current connection (the QEMU demo is stopped on quit)

    def factory() -> Any:
        built[:] = [build()]
        return built[0]

    source = ReconnectingSource(factory, reconnect_on_end=args.reconnect_on_end)
    path = args.output or f"live-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}.trace"
    meter = start_meter(args.power, path, args.force)  # before the source: it covers the run
    if meter is not None:
        options = dataclasses.replace(options, meter=meter, meter_input=args.sync_input)
    console.info(f"opening {url}" + (" (building and starting the QEMU demo)" if url.startswith("qemu://") else ""))
    open_beside_meter(source, meter)
    writer = None
    try:
        meta = capture_metadata(source, url, args)
        if not args.no_record:
            writer = CaptureWriter(path, meta, overwrite=args.force)
    except BaseException:
        source.close()
        if meter is not None:
            meter.stop()
        raise
    tpiu = {None: None, "on": TpiuMode.ON, "off": TpiuMode.OFF}[args.tpiu]
    session = Session.live(SourceFeed(source, writer), meta, budget=budget, options=options, tpiu=tpiu)
    code = run_app(session, console, before_close=lambda: _stop_emulator(built), locator=locator)
    if writer is not None:
        console.info(f"recorded {writer.bytes_received:,} bytes to {writer.path}")
    if meter is not None:
        console.info(f"power meter {args.power} recorded to {meter.path}")
    return code


def _stop_emulator(built: list[Any]) -> None:
    """Do not wait for a still-running QEMU demo to finish its inferences after the user quit.

    ``QemuDemoSource.close`` waits for the firmware to exit; when the user quits early there is
    nothing to wait for, so the emulator is stopped here (``terminate``).
    """
    for source in built:
        terminate = getattr(source, "terminate", None)
        if terminate is not None:
            terminate()
