"""What ``report``, ``check`` and ``export`` share: the input and budget options, and loading them."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING

from tracer.analysis.settings import AnalysisSettings

if TYPE_CHECKING:
    from tracer.base.facts import InputFacts
    from tracer.base.timeline import InferenceTimeline
    from tracer.budget.model import Budget
    from tracer.elf.inlines import CodeLocator

INPUT_HELP = "a .trace capture, a raw ITM/SWO file, or a firmware text log (UART dump, FVP stdout)"


def add_budget_arguments(parser: argparse.ArgumentParser) -> None:
    """``--budget FILE...``, ``--tolerance PCT``, ``--clock HZ`` and the jitter thresholds."""
    parser.add_argument(
        "--budget", metavar="FILE", nargs="+", action="extend", default=[],
        help="the predicted budget: Vela per-layer + summary CSVs (+ debug DB), a Glow bundle header, or a "
             "TOML/JSON budget; files of one model combine (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--tolerance", metavar="PCT", type=_percent,
        help="allowed excess over a layer's predicted cycles, in percent, for every layer: it replaces "
             "the budget's own tolerances, saying so (default: the layer's own in the budget, else the "
             "budget's, else 10)",
    )  # fmt: skip
    parser.add_argument(
        "--match", choices=("model", "any"), default="model",
        help="model (default): the budget must describe the capture's model, else exit 2 saying what "
             "differs (layer count, operators, unmatched layers); any: pair the layers anyway (a "
             "renamed or edited model), with a warning saying what differs",
    )  # fmt: skip
    parser.add_argument(
        "--jitter-threshold", metavar="PCT", type=_percent,
        help="excess over a layer's median, in percent, that makes a run an outlier (default: the budget's "
             "jitter_threshold_pct, else 20)",
    )  # fmt: skip
    parser.add_argument(
        "--jitter-min-share", metavar="PCT", type=_share,
        help="share of the inference, in percent, under which a layer's jitter is information, not a warning: "
             "its slowest run over the median inference latency (default: the budget's jitter_min_share_pct, "
             "else 1; 0 turns it off)",
    )  # fmt: skip
    parser.add_argument(
        "--clock", metavar="HZ", type=_frequency,
        help="the clock the input's cycles count, for inputs that do not say (text logs); accepts k/M suffixes",
    )  # fmt: skip


def add_elf_argument(parser: argparse.ArgumentParser) -> None:
    """``--elf PATH``: the firmware image, to name the CPU hot spots of PC samples."""
    parser.add_argument(
        "--elf", metavar="PATH",
        help="the firmware ELF: names the functions of PC samples (CPU hot spots per layer), inlined ones included",
    )  # fmt: skip


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

    def settings(self, args: argparse.Namespace) -> AnalysisSettings:
        """The analysis thresholds the command line sets (the budget's apply where it sets none:
        :meth:`AnalysisSettings.jitter`)."""
        return AnalysisSettings(
            tolerance_pct=getattr(args, "tolerance", None),
            jitter_threshold_pct=getattr(args, "jitter_threshold", None),
            jitter_min_share_pct=getattr(args, "jitter_min_share", None),
        )


def load_input(args: argparse.Namespace) -> Loaded:
    """Load the budget (exit 2 on a bad file) then the input (exit 3 if unreadable); warnings to stderr."""
    from tracer.budget import load_budget
    from tracer.pipeline.load import load_timeline

    console = args.console
    budget = None
    if getattr(args, "budget", None):
        budget = load_budget(args.budget)
        for note in budget.notes:
            console.info(f"budget note: {note}")
    with console.progress("decoding") as bar:
        timeline, source = load_timeline(args.capture, on_progress=bar.update, clock_hz=getattr(args, "clock", None))
    for warning in source.warnings:
        console.warn(warning)
    if source.kind in ("capture", "raw-itm") and source.records == 0 and not len(timeline.inferences):
        console.warn(
            f"{args.capture}: no telemetry records found (firmware_snippets records use ITM ports 24 and 25)"
        )
    if budget is not None:
        _check_model(timeline, budget, args, lost_data=timeline.loss.any or bool(source.warnings))
        _say_tolerance(budget, args)
    locator = None
    if getattr(args, "elf", None):
        from tracer.elf.inlines import open_locator

        locator = open_locator(args.elf)
    return Loaded(timeline, source, budget, source.kind, locator)


def _check_model(timeline: InferenceTimeline, budget: Budget, args: argparse.Namespace, lost_data: bool) -> None:
    """Refuse a budget of another model (exit 2) unless ``--match any``, which only warns."""
    from tracer.budget.matching import match_layers, model_difference
    from tracer.errors import UsageError

    matching = match_layers(timeline.layers.values(), budget, timeline.clock_hz)
    difference = model_difference(matching, budget, capture_lost_data=lost_data)
    if difference is None:
        return
    files = " ".join(str(b) for b in args.budget)
    message = f"{files} does not describe the capture's model: {difference}"
    if getattr(args, "match", "model") == "any":
        args.console.warn(f"{message}; layers paired anyway (--match any)")
        return
    raise UsageError(f"{message}. Give this model's budget, or --match any to pair the layers anyway")


def _say_tolerance(budget: Budget, args: argparse.Namespace) -> None:
    """``--tolerance`` applies to every layer: say which of the budget's own tolerances it replaces."""
    if getattr(args, "tolerance", None) is None:
        return
    own = []
    if budget.model.tolerance_pct is not None:
        own.append(f"model {budget.model.tolerance_pct:g}%")
    own += [f"{la.label} {la.tolerance_pct:g}%" for la in budget.layers if la.tolerance_pct is not None]
    if own:
        args.console.info(
            f"--tolerance {args.tolerance:g}% applies to every layer, in place of the budget's own ({'; '.join(own)})"
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


def _frequency(text: str) -> int:
    from tracer.errors import UsageError
    from tracer.units import parse_clock

    try:
        return parse_clock(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
