"""``tracer compare``: is a new build slower or bigger than a base, in which layer, why, is it real."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracer.cli.output import Console
    from tracer.compare.digest import CaptureDigest

HELP = "compare a new build with a base: per-layer median and p99 change, is it real, why; exit 1 on a regression"
DESCRIPTION = """\
Compare the captures (or logs) of a new build with those of a base, per
layer and per inference: the median and p99 change in cycles and percent with
a 95 % interval, and whether the change is real.

With three captures or more (two on one side: its spread stands for the
other's), a build is judged by its captures (on a board
each capture shifts as a whole): Welch's t test and interval over the
captures' medians. With one capture a side, over the executions (Mann-Whitney
U; intervals from order statistics), and a note says the run-to-run variance
is not measured. A p99 too few executions can place gets no interval, with
the reason. On a deterministic target such as the QEMU demo (no spread at
all) the change is exact and only the threshold applies.

For every real change it says why: own time against interrupt time, which
NPU PMU counters moved (AXI beats: memory-bound; MAC and NPU active:
compute-bound), an engine change; and for the builds: arena and stack
high-water marks, findings that appeared or went away.

Verdicts: slower (faster) when the median's whole interval lies beyond
--threshold; inconclusive when it straddles the threshold, with the captures
(or executions) a side that would decide it; changed or unchanged within it.
The plan says how many captures and executions a side need to detect
--plan PCT (default: the threshold) at --alpha with --power.

Exit 1 when a change is slower beyond --threshold (or a memory mark grew
beyond it). An inconclusive change exits 0 with a warning: the gate fails on
what the data show, and the report says how many runs would decide it.
Captures of different models (layer count, operators, names) are refused
with exit 2 and what differs; --match index pairs layers by position,
--match name by name.

inputs:
  BASE NEW                      one capture each
  --base FILE... --new FILE...  sets of captures (repeats of each build)
  --dataset DS --base KEY=VALUE... --new KEY=VALUE...
                                the captures of a dataset ('tracer ingest')
                                whose labels match

With --budget FILE... (the plan of the model both builds run) each build is
held against the planner too: per layer, the measured median of both sides,
the planner's prediction, each side's error (prediction / measured - 1) and
how its size changed, in points. With --calibration FILE (from 'tracer
calibrate --save') the calibrated prediction and its errors beside them: did
the new build move away from what the board is known to do? Information
only: it changes no verdict and no exit code.

Sets are read on Dask: a local cluster of --workers processes, or
--scheduler tcp://HOST:8786; one capture per side is read in this process.

formats:
  text      tables for a terminal (default)
  json      the comparison object (docs/compare.md)
  markdown  for a pull-request comment
  junit     a test case per layer, the inference and each memory mark;
            regressions fail

exit codes: 0 no regression (inconclusive included); 1 a regression; 2 bad
option, different models, or a budget or calibration file that is unreadable
or of another model; 3 an input unreadable; 4 the Dask scheduler
unreachable, or every worker that read a capture died.

examples:
  tracer compare good.trace new.trace
  tracer compare good.trace new.trace --threshold 2 --format markdown \\
      -o comment.md
  tracer compare --base runs/main/*.trace --new runs/pr/*.trace --workers 2
  tracer compare --base runs/main/*.trace --new runs/pr/*.trace --plan 2
  tracer compare --dataset results --base build=41 --new build=42 \\
      --format junit -o compare.xml
  tracer compare good.trace new.trace --budget out/kws/ \\
      --calibration board.json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer compare``."""
    from tracer.cli.analysis_input import _percent as percent
    from tracer.cli.analysis_input import add_budget_file_argument, add_calibration_argument
    from tracer.compare.compare import DEFAULT_ALPHA, DEFAULT_POWER, DEFAULT_THRESHOLD_PCT
    from tracer.compare.models import MatchMode

    parser.add_argument("inputs", nargs="*", metavar="BASE NEW", help="one capture or log of each build")
    parser.add_argument(
        "--base",
        nargs="+",
        action="extend",
        metavar="FILE",
        default=[],
        help="captures of the base build (with --dataset: KEY=VALUE labels selecting them)",
    )
    parser.add_argument(
        "--new",
        nargs="+",
        action="extend",
        metavar="FILE",
        default=[],
        help="captures of the new build (with --dataset: KEY=VALUE labels selecting them)",
    )
    parser.add_argument("--dataset", metavar="DS", help="select the captures from this dataset by their labels")
    parser.add_argument(
        "--threshold",
        type=percent,
        default=DEFAULT_THRESHOLD_PCT,
        metavar="PCT",
        help=f"smallest median change that fails, in percent (default: {DEFAULT_THRESHOLD_PCT:g})",
    )
    parser.add_argument(
        "--alpha",
        type=_probability,
        default=DEFAULT_ALPHA,
        metavar="P",
        help=f"p-value a change must beat to be real (default: {DEFAULT_ALPHA:g})",
    )
    parser.add_argument(
        "--plan",
        type=percent,
        metavar="PCT",
        help="the change the plan detects, in percent (default: the threshold, else 1)",
    )
    parser.add_argument(
        "--power",
        type=_probability,
        default=DEFAULT_POWER,
        metavar="P",
        help=f"the chance the plan detects that change (default: {DEFAULT_POWER:g})",
    )
    parser.add_argument(
        "--match",
        choices=[m.value for m in MatchMode],
        default=MatchMode.STRICT.value,
        help="how layers pair: strict (same model, default), index, name",
    )
    parser.add_argument(
        "--format", choices=("text", "json", "markdown", "junit"), default="text", help="output format (default: text)"
    )
    parser.add_argument(
        "--base-power",
        metavar="FILE",
        help="the power recording of BASE's run (.jls or CSV): energy per inference and layer compared, "
        "with 95 %% intervals; with --new-power (docs/energy.md)",
    )
    parser.add_argument("--new-power", metavar="FILE", help="the power recording of NEW's run")
    add_budget_file_argument(parser)
    add_calibration_argument(parser)
    parser.add_argument(
        "--supply-voltage", metavar="V", type=float, help="the supply voltage, for recordings of current only"
    )
    parser.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")
    add_cluster_arguments(parser)


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """``--workers N`` and ``--scheduler URL`` (compare and ingest)."""
    parser.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="worker processes of the local Dask cluster (default: the CPUs available)",
    )
    parser.add_argument("--scheduler", metavar="URL", help="an existing Dask cluster's scheduler, e.g. tcp://HOST:8786")


def run(args: argparse.Namespace) -> int:
    """Read both sides, compare, write; the exit code is the verdict."""
    from tracer.cli.analysis_input import load_budget_files, load_calibration
    from tracer.cli.output import open_output
    from tracer.compare.compare import compare
    from tracer.compare.models import MatchMode
    from tracer.compare.planner_error import planner_errors
    from tracer.errors import ExitCode
    from tracer.export.compare_json import comparison_object
    from tracer.export.compare_junit import write_junit
    from tracer.export.compare_text import write_markdown, write_text
    from tracer.export.report_json import write_report_json

    base_inputs, new_inputs = _sides(args)
    # (before reading the captures: a bad file fails at once)
    calibration = load_calibration(args.calibration, bool(args.budget))
    budget = load_budget_files(args.budget or (), args.console)
    if args.dataset:
        base, new = _from_dataset(args.dataset, base_inputs, new_inputs)
    else:
        base, new = _from_files(args, base_inputs, new_inputs)
    comparison = compare(
        base,
        new,
        threshold_pct=args.threshold,
        alpha=args.alpha,
        mode=MatchMode(args.match),
        plan_pct=args.plan,
        power=args.power,
    )
    for note in comparison.notes:
        args.console.warn(note)
    undecided = [c.label for c in comparison.inconclusive]
    if undecided:
        args.console.warn(
            f"inconclusive (the interval straddles the threshold; exit 0 unless something else "
            f"regressed): {', '.join(undecided)}: more runs needed (see the report)"
        )
    obj = comparison_object(comparison)
    passed = comparison.passed
    if budget is not None:
        obj["planner"] = planner_errors(comparison, budget, calibration).to_json()
    if args.base_power or args.new_power:
        obj["energy"] = _energy(args, base_inputs, new_inputs)
        if obj["energy"]["regressions"]:
            passed = False
            obj["passed"] = False
            obj["regressions"] += [f"energy: {r}" for r in obj["energy"]["regressions"]]
    writers = {"json": write_report_json, "markdown": write_markdown, "junit": write_junit, "text": write_text}
    with open_output(args.output) as out:
        writers[args.format](obj, out)
    return ExitCode.OK if passed else ExitCode.CHECK_FAILED


def _energy(args: argparse.Namespace, base: list[str], new: list[str]) -> dict[str, Any]:
    """Each side's recording attributed to its capture, and the energy changes (exit 2 on misuse)."""
    from tracer.errors import UsageError
    from tracer.pipeline.load import load_timeline
    from tracer.power.attribute import attribute_energy
    from tracer.power.compare import energy_comparison
    from tracer.power.reading import open_recording

    if not (args.base_power and args.new_power) or len(base) != 1 or len(new) != 1 or args.dataset:
        raise UsageError("--base-power and --new-power go together, with one capture a side (BASE NEW)")
    sides = []
    for capture, power in ((base[0], args.base_power), (new[0], args.new_power)):
        timeline, _ = load_timeline(capture)
        sides.append((timeline, attribute_energy(timeline, open_recording(power, args.supply_voltage))))
    (base_tl, base_e), (new_tl, new_e) = sides
    return energy_comparison(base_e, new_e, base_tl, new_tl, args.threshold)


def _sides(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    from tracer.errors import UsageError

    if args.inputs and (args.base or args.new):
        raise UsageError("give BASE NEW, or --base and --new, not both")
    if args.inputs:
        if len(args.inputs) != 2:
            raise UsageError(
                f"expected two inputs, BASE and NEW, not {len(args.inputs)} (sets: --base FILE... --new FILE...)"
            )
        if args.dataset:
            raise UsageError("with --dataset, select each side with --base KEY=VALUE... --new KEY=VALUE...")
        return [args.inputs[0]], [args.inputs[1]]
    if not args.base or not args.new:
        raise UsageError("nothing to compare: give BASE NEW, or --base FILE... --new FILE...")
    return list(args.base), list(args.new)


def _from_files(
    args: argparse.Namespace, base: list[str], new: list[str]
) -> tuple[list[CaptureDigest], list[CaptureDigest]]:
    digests = _digest_files(args.console, base + new, args.workers, args.scheduler, "reading")
    return digests[: len(base)], digests[len(base) :]


def _digest_files(
    console: Console, paths: Sequence[str], workers: int | None, scheduler: str | None, label: str
) -> list[CaptureDigest]:
    """The digests of ``paths``, in order, read where :func:`tracer.fleet.cluster.open_runner` says
    (one capture a side: in this process).
    """
    from tracer.fleet.cluster import dask_available, open_runner
    from tracer.pipeline.digest import digest_file

    if scheduler is None and workers is None:
        if len(paths) <= 2:  # one capture a side: no cluster to start
            workers = 1
        elif not dask_available():
            console.info("Dask is not installed (pip install 'tracer[fleet]'): reading the captures in this process")
            workers = 1
    sizes = [file_size(p) for p in paths]
    out: list[Any] = [None] * len(paths)
    done = 0
    with open_runner(scheduler, workers, len(paths)) as runner, console.progress(label, sum(sizes)) as bar:
        for i, result in runner.run(digest_file, [(p,) for p in paths]):
            out[i] = result
            done += sizes[i]
            bar.update(done)
    return out


def file_size(path: str) -> int:
    """The size of a file, 0 if it cannot be read (the error comes when it is read)."""
    try:
        return int(os.path.getsize(path))
    except OSError:
        return 0


def _from_dataset(path: str, base: list[str], new: list[str]) -> tuple[list[CaptureDigest], list[CaptureDigest]]:
    from tracer.fleet import require_extra

    require_extra("compare --dataset", ("pyarrow",))
    from tracer.fleet.dataset import Dataset, parse_selector

    dataset = Dataset.open(path)
    return dataset.digests(parse_selector(base), "base"), dataset.digests(parse_selector(new), "new")


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a probability: {text!r} (expected e.g. 0.01)") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"--alpha must be between 0 and 1, not {text}")
    return value
