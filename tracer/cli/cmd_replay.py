"""``tracer replay``: a recorded capture on the live screen, at any speed."""

from __future__ import annotations

import argparse
import dataclasses
import os

HELP = "replay a capture on the live screen (TUI), at any speed"
DESCRIPTION = """\
Replay a capture on the same screen as `tracer live`: status, inference latency against the
budget, per-layer table (predicted against measured, sortable, filterable), the selected layer's
history and distribution, the timeline of one inference (CPU, NPU, interrupts, NPU jobs, cache
maintenance), memory (arena and stacks against their sizes, 75%/90% marks), findings with their
evidence, and the firmware's console.

The bytes are fed at the pace they were recorded (the capture's host arrival times; else the
target time the telemetry carries; else the SWO byte rate), times --speed. Any inference of the
file can be shown (an index is built on load): left/right, g to go to a number, n/N from a
finding to the next inference and layer that shows it. Keys: space pause, left/right
previous/next inference (paused: step), +/- speed, / filter, e export the report JSON, p
screenshot, ? every key, q quit.

Cycles are target cycles at the clock the firmware reports, shown with the time they make;
numbers the capture labels (QEMU: emulated cycles, simulated NPU PMU; FVP: model estimates)
carry their label on screen.

examples:
  tracer replay captures/demo.trace --budget captures/demo_budget.toml
  tracer replay captures/demo.trace --speed 1/4
  tracer replay bringup.trace --budget out/model_per-layer.csv --budget out/model_summary.csv --speed max
  tracer replay bringup.trace --paused        # then -> steps inference by inference
  tracer replay new.trace --baseline last-good.trace --budget out/model_summary.csv
  tracer replay sampled.trace --elf build/app.elf    # hot spots named
  tracer replay run.trace --power run.jls    # energy per layer, power lane

--power adds each layer's energy per execution (µJ) and mean power (mW) to the
layers table, the inference's energy to the timeline's header and a power lane
(mW) to the timeline, once the recording is aligned with the capture (read
beside the replay; docs/energy.md). A recording that cannot be aligned says why
in the layers table's title.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer replay``."""
    from tracer.cli.analysis_input import (
        add_budget_file_argument,
        add_calibration_argument,
        add_elf_argument,
        add_power_arguments,
    )
    from tracer.cli.screen import add_screen_arguments

    parser.add_argument("capture", metavar="CAPTURE", help="a .trace capture or another tool's raw ITM file")
    add_budget_file_argument(parser)
    add_calibration_argument(parser)
    parser.add_argument(
        "--speed",
        metavar="X",
        default="1",
        help="replay speed: a factor (2, 0.25, 1/4) or 'max' for as fast as possible (default: 1)",
    )
    parser.add_argument("--paused", action="store_true", help="start paused (right arrow steps one inference)")
    parser.add_argument(
        "--baseline",
        metavar="CAPTURE",
        help="another capture to compare with: per-layer p50 and its change (Δp50) in the layers table",
    )
    add_elf_argument(parser)
    add_power_arguments(parser)
    add_screen_arguments(parser)


def baseline_path(path: str | None) -> str | None:
    """``--baseline``: a capture that is there (it is read beside the screen).

    Raises:
        CaptureError: No such file.
    """
    if path is None:
        return None
    from tracer.errors import CaptureError

    if not os.path.isfile(path):
        raise CaptureError(f"--baseline {path}: no such file")
    return path


def run(args: argparse.Namespace) -> int:
    """Open the capture, then the screen."""
    from tracer.cli.analysis_input import load_budget_files, open_elf_symbols, power_recording
    from tracer.cli.screen import require_terminal, run_app, session_options
    from tracer.errors import UsageError
    from tracer.session.engine import Session
    from tracer.session.pacing import parse_speed

    try:
        speed = parse_speed(args.speed)
    except ValueError as exc:
        raise UsageError(f"--speed: {exc}") from None
    options = dataclasses.replace(
        session_options(args, speed, args.paused),
        baseline=baseline_path(args.baseline),
        power=power_recording(
            args.power, args.supply_voltage
        ),  # opened here: a bad file is exit 2 or 3 before the screen
        meter_input=args.sync_input,
    )
    budget = load_budget_files(args.budget)
    locator = open_elf_symbols(args.elf)
    session = Session.replay(args.capture, budget=budget, options=options)
    try:
        require_terminal("replay")
    except UsageError:
        session.close()
        raise
    return run_app(session, args.console, locator=locator)
