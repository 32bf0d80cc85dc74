"""What ``report``, ``check`` and ``export`` share: the input and budget options, and loading them.

The options, the typed :class:`AnalysisRequest` made from them at a verb's edge and the loaders
behind it (budget, ELF, power, calibration) are one concept, the command line of an analysis:
kept together (a little over 400 lines) so that an option and the field it fills sit side by side.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tracer.analysis.settings import AnalysisSettings

if TYPE_CHECKING:
    from tracer.analysis.calibration_file import Calibration
    from tracer.analysis.result import Analysis
    from tracer.base.facts import InputFacts
    from tracer.base.timeline import InferenceTimeline
    from tracer.budget.model import Budget
    from tracer.cli.output import Console
    from tracer.elf.inlines import CodeLocator
    from tracer.power.recording import PowerRecording


def add_input_argument(parser: argparse.ArgumentParser) -> None:
    """``CAPTURE``: the input to analyse (``report``, ``check``, ``export``)."""
    parser.add_argument(
        "capture",
        metavar="CAPTURE",
        help="a .trace capture, a raw ITM/SWO file, or a firmware text log (UART dump, FVP stdout)",
    )


def add_budget_file_argument(parser: argparse.ArgumentParser) -> None:
    """``--budget FILE...`` (every verb that holds measurements against a plan)."""
    parser.add_argument(
        "--budget",
        metavar="FILE",
        nargs="+",
        action="extend",
        default=[],
        help="the predicted budget: Vela per-layer + summary CSVs (+ debug DB) or the folder Vela wrote them "
        "to, a Glow bundle header, or a "
        "TOML/JSON budget; files of one model combine (repeatable)",
    )


def add_calibration_argument(parser: argparse.ArgumentParser) -> None:
    """``--calibration FILE`` (every verb that shows a budget's predictions)."""
    parser.add_argument(
        "--calibration",
        metavar="FILE",
        help="a calibration of the planner from 'tracer calibrate --save': each layer's calibrated "
        "prediction is shown beside the planner's (docs/calibrate.md)",
    )


def add_budget_arguments(parser: argparse.ArgumentParser) -> None:
    """``--budget FILE...``, ``--tolerance PCT``, ``--clock HZ`` and the jitter thresholds."""
    add_budget_file_argument(parser)
    parser.add_argument(
        "--tolerance",
        metavar="PCT",
        type=_percent,
        help="allowed excess over a layer's predicted cycles, in percent, for every layer: it replaces "
        "the budget's own tolerances, saying so (default: the layer's own in the budget, else the "
        "budget's, else 10)",
    )
    add_calibration_argument(parser)
    add_match_argument(parser)
    parser.add_argument(
        "--jitter-threshold",
        metavar="PCT",
        type=_percent,
        help="excess over a layer's median, in percent, that makes a run an outlier (default: the budget's "
        "jitter_threshold_pct, else 20)",
    )
    parser.add_argument(
        "--jitter-min-share",
        metavar="PCT",
        type=_share,
        help="share of the inference, in percent, under which a layer's jitter is information, not a warning: "
        "its slowest run over the median inference latency (default: the budget's jitter_min_share_pct, "
        "else 1; 0 turns it off)",
    )
    add_clock_argument(parser)


def add_match_argument(parser: argparse.ArgumentParser) -> None:
    """``--match model|any``: whether a budget of another model is refused."""
    parser.add_argument(
        "--match",
        choices=("model", "any"),
        default="model",
        help="model (default): the budget must describe the capture's model, else exit 2 saying what "
        "differs (layer count, operators, unmatched layers); any: pair the layers anyway (a "
        "renamed or edited model), with a warning saying what differs",
    )


def add_clock_argument(parser: argparse.ArgumentParser) -> None:
    """``--clock HZ``: the clock of inputs that do not say theirs."""
    parser.add_argument(
        "--clock",
        metavar="HZ",
        type=frequency,
        help="the clock the input's cycles count, for inputs that do not say (text logs); accepts k/M suffixes",
    )


def add_power_arguments(parser: argparse.ArgumentParser) -> None:
    """``--power FILE``, ``--supply-voltage V``, ``--sync-input N``: energy per layer (docs/energy.md)."""
    parser.add_argument(
        "--power",
        metavar="FILE",
        help="a power meter's recording of the same run: a Joulescope .jls, a PPK2 CSV export or a "
        "CSV (time, current or power, voltage, digital inputs); adds energy per layer and inference",
    )
    add_meter_arguments(parser)


def add_meter_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--supply-voltage V`` and ``--sync-input N``: how to read a power recording (docs/energy.md)."""
    parser.add_argument(
        "--supply-voltage",
        metavar="V",
        type=float,
        help="the supply voltage, for a recording of current only (a PPK2 CSV)",
    )
    add_sync_input_argument(parser)


def add_sync_input_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--sync-input N``: the meter's digital input the firmware's sync pin is wired to."""
    parser.add_argument(
        "--sync-input",
        metavar="N",
        type=int,
        help="the meter's digital input the sync pin is wired to (default: the one trc_sync_pin names, else 0)",
    )


def add_elf_argument(parser: argparse.ArgumentParser) -> None:
    """``--elf PATH``: the firmware image, to name the CPU hot spots of PC samples."""
    parser.add_argument(
        "--elf",
        metavar="PATH",
        help="the firmware ELF: names the functions of PC samples (CPU hot spots per layer), inlined ones included",
    )


@dataclasses.dataclass
class Loaded:
    """An input read and its budget.

    Attributes:
        timeline: The capture or log.
        facts: For the report's ``capture`` section.
        budget: The normalized budget, or None.
        kind: ``capture``, ``raw-itm``, ``text-log`` or ``capture-text``.
        locator: The ``--elf`` image's symbols and inlined code, or None.
    """

    timeline: InferenceTimeline
    facts: InputFacts
    budget: Budget | None
    kind: str
    locator: CodeLocator | None = None


@dataclasses.dataclass(frozen=True)
class AnalysisRequest:
    """What a command asks to analyse, and how, with its files opened: made from the command line
    once, at the command's edge (:func:`analysis_request`); everything below takes this, not the
    command line.

    Attributes:
        capture: The input: a capture, raw ITM/SWO file, text log or ETDump (``CAPTURE``).
        budget_files: The ``--budget`` files as given (empty: none).
        budget: Those files as one budget, or None.
        settings: The thresholds (``--tolerance``, the jitter ones, ``--against``) and
            ``--calibration``'s calibration.
        calibration_file: The ``--calibration`` file, or None.
        match: ``--match``: ``model`` refuses a budget of another model, ``any`` pairs it anyway.
        clock_hz: ``--clock``: the clock of an input that does not say its own, or None.
        locator: ``--elf``'s symbols and inlined code, or None.
        power: ``--power``'s recording, opened, or None.
        meter_input: ``--sync-input``: the meter's input the sync pin is on, or None.
        whole: Read the input whole whatever its size (``--per-inference``, ``export``).
    """

    capture: str
    budget_files: tuple[str, ...] = ()
    budget: Budget | None = None
    settings: AnalysisSettings = dataclasses.field(default_factory=AnalysisSettings)
    calibration_file: str | None = None
    match: str = "model"
    clock_hz: int | None = None
    locator: CodeLocator | None = None
    power: PowerRecording | None = None
    meter_input: int | None = None
    whole: bool = False


def analysis_request(args: argparse.Namespace, whole: bool = False) -> AnalysisRequest:
    """The request a command line makes: its budget, ``--elf``, ``--power`` and ``--calibration``
    files opened, in that order (exit 2 or 3 on a bad one), the budget's notes said.

    The one place the analysis options are read from the command line; a command without one of
    them (``check`` has no ``--elf``) gets its default.

    Args:
        args: The command line (with its ``console``).
        whole: Read the input whole whatever its size.
    """
    budget_files = tuple(getattr(args, "budget", None) or ())
    budget = load_budget_files(budget_files, args.console)
    locator = open_elf_symbols(getattr(args, "elf", None))
    power = power_recording(getattr(args, "power", None), getattr(args, "supply_voltage", None))
    calibration_file = getattr(args, "calibration", None) or None
    against = getattr(args, "against", None) or "planner"
    settings = AnalysisSettings(
        tolerance_pct=getattr(args, "tolerance", None),
        jitter_threshold_pct=getattr(args, "jitter_threshold", None),
        jitter_min_share_pct=getattr(args, "jitter_min_share", None),
        calibration=load_calibration(calibration_file, bool(budget_files), against),
        against=against,
    )
    return AnalysisRequest(
        capture=args.capture,
        budget_files=budget_files,
        budget=budget,
        settings=settings,
        calibration_file=calibration_file,
        match=getattr(args, "match", None) or "model",
        clock_hz=getattr(args, "clock", None),
        locator=locator,
        power=power,
        meter_input=getattr(args, "sync_input", None),
        whole=whole,
    )


def load_calibration(path: str | None, budget_given: bool, against: str = "planner") -> Calibration | None:
    """The ``--calibration`` file, or None (exit 2 if unreadable; it needs a budget, and
    ``--against calibrated`` needs it).
    """
    from tracer.analysis.calibration_file import read_calibration
    from tracer.errors import UsageError

    if not path:
        if against == "calibrated":
            raise UsageError("--against calibrated needs --calibration FILE (written by 'tracer calibrate --save')")
        return None
    if not budget_given:
        raise UsageError("--calibration corrects a planner's predictions: give the budget too (--budget FILE...)")
    return read_calibration(path)


def analyse_request(
    request: AnalysisRequest, console: Console, on_window: Callable[[InferenceTimeline], None] | None = None
) -> tuple[Loaded, Analysis]:
    """Analyse a request's input (``report``, ``check``, ``export``), as
    :func:`tracer.pipeline.analyse.analyse_file` does for every front end: whole, or in windows
    when it is large; then say its warnings and refuse a budget of another model (exit 2).

    Args:
        request: What to analyse, and how.
        console: Where warnings and progress go.
        on_window: Called with every window of a capture read in windows (not otherwise).
    """
    from tracer.pipeline.analyse import analyse_file

    result = analyse_file(
        request.capture,
        request.budget,
        request.settings,
        locator=request.locator,
        clock_hz=request.clock_hz,
        whole=request.whole,
        on_window=on_window,
        progress=console.progress,
        power=request.power,
        meter_input=request.meter_input,
    )
    if result.read_whole_because:
        console.info(f"{request.capture}: read whole, not in windows: {result.read_whole_because}")
    analysis = result.analysis
    loaded = Loaded(analysis.timeline, analysis.facts, request.budget, analysis.facts.kind, request.locator)
    _after_loading(request, console, loaded, analysis)
    return loaded, analysis


def analyse_input(
    args: argparse.Namespace, whole: bool = False, on_window: Callable[[InferenceTimeline], None] | None = None
) -> tuple[Loaded, Analysis]:
    """:func:`analyse_request` of the command line's :func:`analysis_request`, for a command that
    needs nothing else of the request (``calibrate``, once per run).
    """
    return analyse_request(analysis_request(args, whole), args.console, on_window)


def load_budget_files(files: Sequence[str], console: Console | None = None) -> Budget | None:
    """The ``--budget`` files as one budget, or None without any (exit 2 on a bad file).

    Args:
        files: The files.
        console: Where the budget's notes are said (None: not said; the screen would hide them).
    """
    from tracer.budget import load_budget

    if not files:
        return None
    budget = load_budget(list(files))
    if console is not None:
        for note in budget.notes:
            console.info(f"budget note: {note}")
    return budget


def power_recording(path: str | None, supply_voltage: float | None) -> PowerRecording | None:
    """The ``--power`` recording, opened (exit 2 or 3 on a bad one), or None."""
    if not path:
        return None
    from tracer.power.reading import open_recording

    return open_recording(path, supply_voltage)


def open_elf_symbols(path: str | None) -> CodeLocator | None:
    """``--elf``: the image's symbols and inlined code, or None (exit 2 or 3 on a bad file)."""
    if not path:
        return None
    from tracer.elf.inlines import open_locator

    return open_locator(path)


def _after_loading(request: AnalysisRequest, console: Console, loaded: Loaded, analysis: Analysis) -> None:
    """Say the input's warnings; refuse a budget of another model (exit 2)."""
    timeline, source = loaded.timeline, loaded.facts
    for warning in source.warnings:
        console.warn(warning)
    if source.kind in ("capture", "raw-itm") and source.records == 0 and not len(timeline.inferences):
        console.warn(
            f"{request.capture}: no telemetry records found (firmware_snippets records use ITM ports 24 and 25)"
        )
    if analysis.comparison is not None:
        _check_model(analysis.model_difference(), request, console)
        _say_tolerance(analysis.comparison.budget, request.settings.tolerance_pct, console)


def _check_model(difference: str | None, request: AnalysisRequest, console: Console) -> None:
    """Refuse a budget of another model (exit 2) unless ``--match any``, which only warns (the
    layers as the analysis matched them: once).
    """
    from tracer.errors import UsageError

    if difference is None:
        return
    files = " ".join(str(b) for b in request.budget_files)
    message = f"{files} does not describe the capture's model: {difference}"
    if request.match == "any":
        console.warn(f"{message}; layers paired anyway (--match any)")
        return
    raise UsageError(f"{message}. Give this model's budget, or --match any to pair the layers anyway")


def _say_tolerance(budget: Budget, tolerance: float | None, console: Console) -> None:
    """``--tolerance`` applies to every layer: say which of the budget's own tolerances it replaces."""
    if tolerance is None:
        return
    own = []
    if budget.model.tolerance_pct is not None:
        own.append(f"model {budget.model.tolerance_pct:g}%")
    own += [f"{la.label} {la.tolerance_pct:g}%" for la in budget.layers if la.tolerance_pct is not None]
    if own:
        console.info(
            f"--tolerance {tolerance:g}% applies to every layer, in place of the budget's own ({'; '.join(own)})"
        )


def _percent(text: str, most: float = 10_000) -> float:
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r} (expected e.g. 10 or 12.5)") from None
    if not 0 <= value <= most:
        raise argparse.ArgumentTypeError(f"percentage out of range: {text!r} (0 to {most:g} percent)")
    return value


def _share(text: str) -> float:
    return _percent(text, most=100)


def frequency(text: str) -> int:
    """``--clock HZ``'s type: a clock in Hz, k/M suffixes accepted (argparse's error otherwise)."""
    from tracer.errors import UsageError
    from tracer.units import parse_clock

    try:
        return parse_clock(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
