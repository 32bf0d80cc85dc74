"""``tracer calibrate``: the planner's error per operator type on this board, and a calibration."""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracer.analysis.calibration import LayerObservation

HELP = "measure the planner's error per operator type and learn a calibration"
DESCRIPTION = """\
Hold captures of several models against their budgets and measure, per operator
type, how far the planner's per-layer estimate is off on this board: median
measured/predicted, median and p90 error, bias, and on how many layers and
models that rests. Then learn a correction per operator type (a factor with an
interval), validate it by leaving one model out, and with --save write it for
'tracer report' and 'tracer check' (--calibration FILE).

Each capture comes with its budget, in any of these ways:
  CAPTURE:BUDGET     a file, files joined by commas, or a Vela --output-dir
                     folder (its *_per-layer.csv, *_summary_*.csv, *_debug.xml)
  --run CAPTURE FILE...
  CAPTURE            with --budget FILE... (one budget for every such capture)
  --dataset DS       the captures of a dataset ingested with their budgets
                     ('tracer ingest CAPTURE... -o DS --budget FILE...'),
                     those whose labels match every --where KEY=VALUE

A layer counts when it is one operator of the budget, planned on the NPU, with
an estimate. An operator type is calibrated with at least 3 layers from 2
models; leaving one model out needs 3 models. With less, the table is printed
and the calibration says why it is missing (--save then exits 1). See
docs/calibrate.md for what the calibration assumes.

formats: text (default), json (everything), markdown (the table to publish)

exit codes: 0 done; 1 --save given but no operator type has enough data;
2 bad option, budget or a budget of another model, a dataset without budgets
or no capture matching --where; 3 a capture unreadable or no layer measured
against an estimate.

examples:
  tracer calibrate kws.trace:out/kws/ ad.trace:out/ad/ vww.trace:out/vww/
  tracer calibrate --run a.trace a_per-layer.csv a_summary_U55.csv \\
      --run b.trace b_per-layer.csv b_summary_U55.csv --save board.json
  tracer calibrate *.trace --budget model_vela/ --format markdown
  tracer calibrate --dataset results --where board=b1 --save board.json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer calibrate``."""
    from tracer.cli.analysis_input import add_clock_argument, add_match_argument

    parser.add_argument(
        "captures",
        metavar="CAPTURE[:BUDGET]",
        nargs="*",
        help="a capture (or text log), with its budget after a colon (files joined by commas, or a Vela output folder)",
    )
    parser.add_argument(
        "--run",
        dest="pairs",
        metavar=("CAPTURE", "BUDGET"),
        nargs="+",
        action="append",
        default=[],
        help="a capture and its budget files (repeatable)",
    )
    parser.add_argument(
        "--budget",
        metavar="FILE",
        nargs="+",
        action="extend",
        default=[],
        help="the budget of every CAPTURE given without one (files or a Vela output folder)",
    )
    parser.add_argument(
        "--dataset",
        metavar="DS",
        help="learn from the captures of this dataset too ('tracer ingest --budget' kept their estimates)",
    )
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --dataset: only captures with this label value (repeatable; all must hold)",
    )
    add_match_argument(parser)
    add_clock_argument(parser)
    parser.add_argument("--save", metavar="FILE", help="write the calibration (JSON) to FILE")
    parser.add_argument(
        "--format", choices=("text", "json", "markdown"), default="text", help="output format (default: text)"
    )
    parser.add_argument("-o", "--output", metavar="PATH", help="write the table to PATH instead of stdout")


def run(args: argparse.Namespace) -> int:
    """Load every run, measure the error, fit, validate, write."""
    from tracer.analysis.calibration import LEVEL, fit, leave_one_model_out
    from tracer.analysis.calibration_data import observations_of
    from tracer.analysis.calibration_errors import feature_effects
    from tracer.analysis.calibration_file import Calibration
    from tracer.cli.analysis_input import analyse_input
    from tracer.cli.output import open_output
    from tracer.errors import CaptureError, ExitCode
    from tracer.export.calibration_table import table_object, write_markdown, write_text
    from tracer.export.json_text import write_json

    runs = _runs(args)
    observations: list[LayerObservation] = []
    planners: list[dict[str, Any]] = []
    if args.dataset:  # first: a dataset that is not one fails before any capture is read
        observations, planners = _from_dataset(args)
    for capture, files in runs:
        one = copy.copy(args)
        one.capture, one.budget = capture, files
        loaded, analysis = analyse_input(one)
        assert loaded.budget is not None
        if loaded.budget.model.compiler is not None:
            planners.append(loaded.budget.model.compiler.to_json())
        found, left = observations_of(analysis, capture)
        for why in left:
            args.console.info(f"left out: {why}")
        observations += found
    if not observations:
        raise CaptureError(
            "no layer of the captures was measured against a planner's estimate of it: nothing to calibrate"
        )
    planner, notes = _planner(planners)
    fitted = fit(observations)
    held = leave_one_model_out(observations)
    table = table_object(observations, fitted, held, feature_effects(observations), planner, LEVEL, notes)
    with open_output(args.output) as out:
        if args.format == "json":
            write_json(table, out)
            out.write("\n")
        elif args.format == "markdown":
            write_markdown(table, out)
        else:
            write_text(table, out)
    if not fitted.operators:
        args.console.warn(
            f"too few data to calibrate: {len(observations)} layer(s) of {len({o.model for o in observations})} "
            "model(s); an operator type needs at least 3 layers from 2 models"
        )
        if args.save:
            args.console.warn(f"{args.save} not written")
            return ExitCode.CHECK_FAILED
        return ExitCode.OK
    if args.save:
        calibration = Calibration(
            fitted.operators,
            planner,
            tuple(table["models"]),
            LEVEL,
            fitted.too_few,
            {"all": table["all"], "operators": table["operators"], **table["validation"]},
        )
        with open_output(args.save) as out:
            out.write(json.dumps(calibration.to_json(), indent=2) + "\n")
        args.console.info(f"calibration of {len(fitted.operators)} operator type(s) written to {args.save}")
    return ExitCode.OK


def _from_dataset(args: argparse.Namespace) -> tuple[list[LayerObservation], list[dict[str, Any]]]:
    """The observations ``tracer ingest --budget`` kept in ``--dataset``, and their planners."""
    from tracer.fleet import require_extra

    require_extra("calibrate --dataset", ("pyarrow",))
    from tracer.fleet.dataset import Dataset, parse_selector
    from tracer.fleet.predictions import dataset_observations

    return dataset_observations(Dataset.open(args.dataset), parse_selector(args.where))


def _runs(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """(capture, budget files) of every run given (none: ``--dataset`` alone)."""
    from tracer.errors import UsageError

    if args.where and not args.dataset:
        raise UsageError("--where selects captures of a dataset: give --dataset DS")

    runs: list[tuple[str, list[str]]] = []
    for item in args.captures:
        capture, budget = _split(item)
        if budget:
            runs.append((capture, [f for f in budget.split(",") if f]))
        elif args.budget:
            runs.append((capture, list(args.budget)))
        else:
            raise UsageError(f"{item}: no budget: give CAPTURE:BUDGET, --run CAPTURE FILE..., or --budget FILE...")
    for group in args.pairs:
        if len(group) < 2:
            raise UsageError(f"--run {' '.join(group)}: expected a capture and at least one budget file")
        runs.append((group[0], list(group[1:])))
    if not runs and not args.dataset:
        raise UsageError(
            "no captures: give CAPTURE:BUDGET ..., --run CAPTURE FILE... or --dataset DS (see tracer calibrate --help)"
        )
    return runs


def _split(item: str) -> tuple[str, str]:
    """``CAPTURE:BUDGET`` -> (capture, budget); a drive letter (``C:``) is part of the path."""
    start = 2 if len(item) > 2 and item[1] == ":" and item[0].isalpha() else 0
    at = item.find(":", start)
    if at < 0 or Path(item).exists():
        return item, ""
    return item[:at], item[at + 1 :]


def _planner(planners: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """The planner the budgets share (config keys that differ are left out, with a note);
    ``planners``: each budget's (``Compiler.to_json``), where it says one.
    """
    if not planners:
        return {}, ["the budgets do not say which planner made them"]
    notes: list[str] = []
    names = {str(p.get("name")) for p in planners}
    versions = {p.get("version") for p in planners}
    config = dict(planners[0].get("config") or {})
    for p in planners[1:]:
        other = p.get("config") or {}
        for key in list(config):
            if other.get(key) != config[key]:
                values = sorted({str((x.get("config") or {}).get(key)) for x in planners})
                notes.append(f"the budgets differ in {key} ({', '.join(values)}): one calibration for all of them")
                del config[key]
    if len(names) > 1:
        notes.append(f"the budgets come from several planners ({', '.join(sorted(names))})")
    return {
        "name": "/".join(sorted(names)),
        "version": versions.pop() if len(versions) == 1 else None,
        "config": config,
    }, notes
