"""``tracer trend``: per-layer series across builds from a dataset, with their change points."""

from __future__ import annotations

import argparse

HELP = "per-layer series across builds from a dataset, change points and where they began; exit 1 if the newest build regresses"
DESCRIPTION = """\
Follow every layer (and the inference latency) of a dataset ('tracer ingest') across builds: the
builds are the values of the label --by (build number, commit date ...), in order (as numbers
when every value is one); a build's value is the median over its captures of each capture's
median cycles. In each series, tracer finds the change points: where a new level begins, how
big it is (cycles and percent of the level before) and how sure (p-value); a build that stands
out alone and comes back is an outlier, not a change (docs/trend.md says how, and why this way).

The newest build is also compared with the build before it exactly as
'tracer compare --dataset' compares them (over captures when the two builds
have three or more): the same captures, the same verdict.

Exit 1 when the newest build starts a higher level in some series, or is
slower than the build before it as compare judges it (a regression beyond
--threshold); exit 0 otherwise.

formats:
  text      a table with a sparkline per series (default)
  json      the series, builds, change points (docs/trend.md)
  markdown  for a pull-request comment

--energy follows energy instead of cycles: each layer's energy per execution
and the inference's (uJ), from the captures ingested with a power recording
('tracer ingest --power'; docs/energy.md); more energy is the regression.

exit codes: 0 the newest build starts no regression; 1 it does; 2 bad option, not a dataset, or
no capture with the label; 3 no capture at all (--energy: none with energy).

examples:
  tracer trend results --by build
  tracer trend results --by build --where board=corstone-300 --threshold 2
  tracer trend results --by commit_date --format markdown -o trend.md
  tracer trend results --by build --energy      # uJ per layer and inference
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer trend``."""
    from tracer.cli.analysis_input import _percent as percent
    from tracer.compare.compare import DEFAULT_THRESHOLD_PCT

    parser.add_argument("dataset", metavar="DATASET", help="a dataset folder written by 'tracer ingest'")
    parser.add_argument("--by", required=True, metavar="LABEL", help="the label whose values are the builds, in order")
    parser.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only captures with this label value (repeatable; all must hold)",
    )
    parser.add_argument(
        "--threshold",
        type=percent,
        default=DEFAULT_THRESHOLD_PCT,
        metavar="PCT",
        help=f"smallest change of level reported, in percent (default: {DEFAULT_THRESHOLD_PCT:g})",
    )
    parser.add_argument(
        "--format", choices=("text", "json", "markdown"), default="text", help="output format (default: text)"
    )
    parser.add_argument(
        "--energy",
        action="store_true",
        help="series of energy (uJ per execution and per inference) instead of cycles",
    )
    parser.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")


def run(args: argparse.Namespace) -> int:
    """Read the dataset, find the changes, write; exit 1 when the newest build regresses."""
    from tracer.cli.output import open_output
    from tracer.errors import ExitCode
    from tracer.export.report_json import write_report_json
    from tracer.fleet import require_extra

    require_extra("tracer trend", ("pyarrow", "ruptures", "scipy"))
    from tracer.export.trend_text import write_markdown, write_text
    from tracer.fleet.dataset import Dataset, parse_selector
    from tracer.fleet.trend import trend, trend_object

    dataset = Dataset.open(args.dataset)
    result = trend(dataset, args.by, parse_selector(args.where), args.threshold, energy=args.energy)
    obj = trend_object(result, str(dataset))
    writers = {"json": write_report_json, "markdown": write_markdown, "text": write_text}
    with open_output(args.output) as out:
        writers[args.format](obj, out)
    return ExitCode.CHECK_FAILED if obj["newest_regressions"] else ExitCode.OK
