"""``tracer ingest``: captures into a Parquet dataset, each once, on Dask."""

from __future__ import annotations

import argparse

HELP = "add captures to a Parquet dataset (each once, by content), on Dask; exit 3 when some could not be read"
DESCRIPTION = """\
Decode and analyse each capture (or log) and add it to DATASET: a folder of plain Parquet tables,
Hive-partitioned by the day of recording (captures, labels, layers, stacks, findings, inferences,
layer_executions, pmu, errors; docs/fleet.md), which DuckDB, pyarrow or any Parquet engine reads.

Each capture is added once, identified by the SHA-256 of its bytes: ingesting it again changes
nothing. Its labels come from its header (board, ELF build ID, firmware hash, clocks, tool, git
revision and dirty flag of the checkout it was recorded from, the demo's scenario) plus --label
KEY=VALUE. A capture that cannot be read is recorded in the errors table and the others go on;
the exit code says the run was partial. The run is committed atomically: an ingest that fails or
is killed leaves the dataset as it was.

With --budget FILE... (the plan of the captures' model: Vela's CSVs or output folder, any budget
'tracer report' reads), each capture is held against it and the planner's estimate of every
layer a calibration can learn from is kept in the predictions table: 'tracer calibrate --dataset'
learns from it. A capture the budget does not describe is not added (errors table, exit 2 in
it). Ingest the captures of each model with that model's budget, one run per model.

The captures are read on Dask: by default a local cluster of --workers processes (one per CPU);
--scheduler tcp://HOST:8786 uses an existing cluster (its workers need tracer[fleet] and must see
the captures and DATASET: a shared filesystem). Needs the fleet extra: pip install 'tracer[fleet]'.

exit codes: 0 every capture added or already there; 2 bad option, bad budget file, or DATASET not
a dataset (or of a newer schema); 3 some captures could not be read or are not of --budget's model
(the rest were added); 4 the Dask scheduler unreachable.

Energy (--power): each capture's power meter recording, found by a pattern
({stem}: the capture's name without extension, {name}: with it, {dir}: its
folder; relative to the capture's folder). --power alone takes '{stem}.jls'
beside each capture, as 'tracer record --power' writes it. The mean energy per
inference and per layer execution go into the captures and layers tables
(energy_uj, energy_interval_uj); a capture with no recording there gets none,
a recording that does not align with its capture fails it (docs/energy.md).

examples:
  tracer ingest runs/*.trace -o results --label build=42 --label branch=main
  tracer ingest runs/ -o results --power                 # runs/a.trace + runs/a.jls
  tracer ingest runs/*.trace -o results --power 'meter/{stem}.csv' --supply-voltage 3.3
  tracer ingest nightly/ -o results --workers 8
  tracer ingest kws/*.trace -o results --budget out/kws/ --label board=b1
  tracer ingest /nfs/farm/2025-06-01/*.trace -o /nfs/results --scheduler tcp://dask-head:8786
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer ingest``."""
    from tracer.cli.analysis_input import add_budget_file_argument, add_meter_arguments
    from tracer.cli.cmd_compare import add_cluster_arguments
    from tracer.fleet.pairing import BESIDE

    parser.add_argument("captures", nargs="+", metavar="CAPTURE", help="captures or logs (a folder: its files)")
    parser.add_argument("-o", "--output", metavar="DATASET", required=True, help="the dataset folder (made if new)")
    parser.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a label for every capture of this run (repeatable), e.g. build=42",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="the run's summary (default: text)")
    add_budget_file_argument(parser)
    power = parser.add_argument_group("energy (docs/energy.md)")
    power.add_argument(
        "--power",
        nargs="?",
        const=BESIDE,
        metavar="PATTERN",
        help="add each capture's energy from its power recording, found by PATTERN "
        f"(default when given alone: '{BESIDE}' beside the capture)",
    )
    add_meter_arguments(power)
    add_cluster_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Find the captures, ingest them, print the summary; the exit code says whether any failed."""
    import json
    import sys

    from tracer.cli.cmd_compare import file_size
    from tracer.fleet import require_extra

    require_extra("tracer ingest", ("pyarrow",))
    from tracer.cli.analysis_input import load_budget_files
    from tracer.fleet.cluster import open_runner
    from tracer.fleet.dataset import Dataset, parse_selector
    from tracer.fleet.ingest import FAILED, CaptureOutcome, ingest
    from tracer.fleet.pairing import PowerPairing

    console = args.console
    budget = load_budget_files(args.budget or (), console)  # before anything is read: a bad file fails at once
    labels = parse_selector(args.label)
    power = PowerPairing(args.power, args.supply_voltage, args.sync_input) if args.power else None
    paths = _expand(args.captures)
    sizes = {p: file_size(p) for p in paths}
    done = {"bytes": 0}
    with (
        open_runner(args.scheduler, args.workers, len(paths)) as runner,
        console.progress(f"ingesting {len(paths)} captures", sum(sizes.values())) as bar,
    ):
        dataset = Dataset.create_or_open(args.output)  # after the scheduler answered: nothing made in vain

        def progress(outcome: CaptureOutcome) -> None:
            done["bytes"] += sizes.get(outcome.path, 0)
            bar.update(done["bytes"])
            if outcome.status == FAILED:
                console.warn(f"not ingested: {outcome.error}")

        result = ingest(paths, dataset, runner, labels, on_done=progress, budget=budget, power=power)
    summary = result.to_json()
    if args.format == "json":
        json.dump(summary, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        rate = result.bytes / 1e6 / max(result.seconds, 1e-9)
        print(
            f"{args.output}: {summary['ingested']} captures added ({summary['executions']:,} layer executions, "
            f"{result.bytes / 1e6:.1f} MB at {rate:.1f} MB/s on {result.workers} worker(s)), "
            f"{summary['skipped']} already there, {summary['failed']} failed (errors table)"
        )
        if power is not None:
            print(
                f"energy: {summary['with_energy']} of the {summary['ingested']} captures added had a power "
                f"recording ({power.pattern}); the others have none in the dataset"
            )
    return result.exit_code


def _expand(items: list[str]) -> list[str]:
    """Files as given; a folder stands for the files in it (sorted, not recursive, dot-files and
    Joulescope recordings, which are never captures, left out).
    """
    import os

    out = []
    for item in items:
        if os.path.isdir(item):
            out += sorted(
                os.path.join(item, n)
                for n in os.listdir(item)
                if not n.startswith(".") and not n.endswith(".jls") and os.path.isfile(os.path.join(item, n))
            )
        else:
            out.append(item)
    return out
