"""``tracer budget``: show what tracer understood of a planner's or compiler's prediction."""

from __future__ import annotations

import argparse
import json
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from tracer.budget import Budget

HELP = "show the normalized budget read from Vela, Glow or TOML/JSON files"
DESCRIPTION = """\
Read budget files and print the one budget tracer makes of them: the model (name, clock, cycles
per inference, memory sizes in bytes) and, per layer, the predicted cycles and SRAM. Use it to
check a budget before giving it to 'tracer report' or 'tracer check' with --budget.

Files are recognised by their content, and files of one model combine:
  Vela  <model>_per-layer.csv (--verbose-performance; default or legacy core), <model>_summary_
        <system-config>.csv (clock, totals, memory in KiB -> bytes), <model>_debug.xml
        (--enable-debug-db: exact operator grouping and model indices)
  Glow  bundle header (<NAME>_CONSTANT_MEM_SIZE, _MUTABLE_MEM_SIZE, _ACTIVATIONS_MEM_SIZE, ...)
  own   TOML ([model] + [[layer]] tables, see docs/budgets.md) or the JSON this command prints

Vela splits one model operator into several NPU operations: they are grouped into one layer whose
predicted cycles are their sum (--parts lists them). Vela's cycles count the NPU clock of the
summary's system configuration.

Planner drift: two plans of one model (two Vela versions or configurations),
given as two Vela output folders or with --old FILE... --new FILE...: which
layers' estimates moved, by how much; with --capture, whether the measured
cycles agree with the old plan or the new one.

examples:
  tracer budget out/kws_per-layer.csv out/kws_summary_Ethos_U55_High_End_Embedded.csv
  tracer budget out/kws_per-layer.csv out/kws_summary_*.csv out/kws_debug.xml --format json
  tracer budget bundle/mobilenet_v1.h
  tracer budget model_budget.toml --format json -o budget.json
  tracer budget out/kws_*.csv tolerances.toml          # add per-layer tolerances to Vela's layers
  tracer budget out_vela_5.0/ out_vela_5.1/ --capture kws.trace
  tracer budget --old a/kws_per-layer.csv a/kws_summary_U55.csv \\
      --new b/kws_per-layer.csv b/kws_summary_U55.csv --threshold 5
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer budget``."""
    parser.add_argument(
        "files", metavar="FILE", nargs="*", help="budget files (Vela CSV/XML or their folder, Glow .h, TOML, JSON)"
    )
    parser.add_argument("--old", metavar="FILE", nargs="+", default=[], help="planner drift: the old plan's files")
    parser.add_argument("--new", metavar="FILE", nargs="+", default=[], help="planner drift: the new plan's files")
    parser.add_argument(
        "--capture",
        metavar="CAPTURE",
        help="planner drift: a capture of the model, to say which plan the measured cycles agree with",
    )
    parser.add_argument(
        "--threshold",
        metavar="PCT",
        type=float,
        default=None,
        help="planner drift: a layer moved when its estimate changed by more than PCT percent (default: 10)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.add_argument("--parts", action="store_true", help="also list the compiler's operations of every layer")
    parser.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")


def run(args: argparse.Namespace) -> int:
    """Load and print."""
    from pathlib import Path

    from tracer.budget import load_budget
    from tracer.cli.output import open_output
    from tracer.errors import UsageError

    drift_wanted = bool(args.old or args.new) or (len(args.files) == 2 and all(Path(f).is_dir() for f in args.files))
    if drift_wanted:
        from tracer.cli.budget_drift import run_drift

        return run_drift(args)
    if args.capture or args.threshold is not None:
        raise UsageError("--capture and --threshold compare two plans: give two Vela folders or --old ... --new ...")
    if not args.files:
        raise UsageError("no budget file given (see tracer budget --help)")
    budget = load_budget(args.files)
    for note in budget.notes:
        args.console.info(f"note: {note}")
    with open_output(args.output) as out:
        if args.format == "json":
            out.write(json.dumps(budget.to_json(parts=args.parts), indent=2) + "\n")
        else:
            write_text(budget, out, parts=args.parts)
    return 0


def write_text(budget: Budget, out: IO[str], parts: bool = False) -> None:
    """The human-readable rendering."""
    m = budget.model
    compiler = ""
    if m.compiler is not None:
        bits = [m.compiler.name + (f" {m.compiler.version}" if m.compiler.version else "")]
        config_keys = ("core", "accelerator_configuration", "system_config", "memory_mode", "bundle")
        bits += [v for k, v in m.compiler.config.items() if k in config_keys]
        compiler = f" ({', '.join(bits)})"
    out.write(f"model: {m.name or '(unnamed)'}{compiler}\n")
    clock = f"{m.clock_hz / 1e6:g} MHz" if m.clock_hz else "the capture's clock"
    total = "unknown" if m.cycles_total is None else f"{_num(m.cycles_total)}"
    if m.cycles_total is not None and m.clock_hz:
        total += f" ({m.cycles_total / m.clock_hz * 1e6:.1f} us)"
    out.write(f"cycles per inference: {total} at {clock}\n")
    sizes = [
        (label, getattr(m, attr))
        for label, attr in (
            ("SRAM", "sram_bytes"),
            ("arena", "arena_bytes"),
            ("flash", "flash_bytes"),
            ("DRAM", "dram_bytes"),
            ("SRAM available", "sram_available_bytes"),
        )
    ]
    shown = [f"{label} {value} B" for label, value in sizes if value is not None]
    out.write(f"memory: {', '.join(shown) if shown else 'no sizes given'}\n")
    if m.tolerance_pct is not None:
        out.write(f"tolerance: {_num(m.tolerance_pct)}%\n")
    jitter = [
        f"{label} {_num(value)}%"
        for label, value in (("threshold", m.jitter_threshold_pct), ("minimum share", m.jitter_min_share_pct))
        if value is not None
    ]
    if jitter:
        out.write(f"jitter: {', '.join(jitter)}\n")
    if m.memory:
        out.write(f"sizes from the files (bytes): {', '.join(f'{k} {v}' for k, v in m.memory.items())}\n")
    out.write(f"files: {', '.join(budget.sources)}\n")
    if not budget.layers:
        out.write("layers: none (the files give no per-layer prediction)\n")
        return
    out.write("\n")
    rows = [("pos", "index", "name", "op", "engine", "cycles", "sram_bytes", "tol%", "parts")]
    for la in budget.layers:
        rows.append(
            (
                str(la.position),
                "-" if la.index is None else str(la.index),
                la.name or "-",
                la.op or "-",
                la.engine.value if la.engine else "-",
                "-" if la.predicted_cycles is None else _num(la.predicted_cycles),
                "-" if la.sram_bytes is None else str(la.sram_bytes),
                "-" if la.tolerance_pct is None else _num(la.tolerance_pct),
                str(len(la.parts)) if la.parts else "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {0, 1, 5, 6, 7, 8}
    for k, row in enumerate(rows):
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        out.write("  ".join(cells).rstrip() + "\n")
        if parts and k > 0:
            for p in budget.layers[k - 1].parts:
                out.write(
                    f"{'':>{widths[0]}}    - {p.op} {p.name!r} {p.engine.value} {_num(p.cycles)} cycles  ({p.origin})\n"
                )
    expected = [la.name or la.label for la in budget.layers if la.data_dependent]
    if expected:
        out.write(f"\ndata-dependent (their jitter is information): {', '.join(expected)}\n")
    layer_total = budget.layer_cycles_total
    if layer_total is not None:
        same = ""
        if m.cycles_total is not None:
            equal = abs(layer_total - m.cycles_total) <= 0.5
            same = " (= the model total)" if equal else f" (model total {_num(m.cycles_total)})"
        out.write(f"\nsum of layer predictions: {_num(layer_total)} cycles{same}\n")


def _num(value: float) -> str:
    from tracer.budget.model import json_number

    v = json_number(round(value, 3))
    return f"{v}" if isinstance(v, int) else f"{v:g}"
