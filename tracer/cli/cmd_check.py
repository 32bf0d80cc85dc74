"""``tracer check``: the CI gate. Exit 0 within budget, 1 when a check fails."""

from __future__ import annotations

import argparse
import io
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracer.cli.analysis_input import AnalysisRequest

HELP = "CI gate: fail (exit 1) when a layer is over budget or a finding reaches --fail-on"
DESCRIPTION = """\
Check a recorded capture (or a firmware text log) against its budget and the findings rules, with
no board attached, and exit 1 when a check fails:

  input     the input measured something (inferences, layers, memory or PMU data: nothing
            measured is not a pass) and, for ITM, looks like trace (almost no reserved headers);
            with --budget, at least half of the budget's layers were measured (never none)
  layers    one check per layer the budget predicts: measured p50 cycles against
            predicted x (1 + tolerance); tolerance: --tolerance when given (for every layer;
            a note says which budget tolerances it replaced), else the layer's own in the
            budget, else the budget's, else 10%; with --calibration FILE and
            --against calibrated, the calibrated prediction x (1 + tolerance)
  memory    tensor arena (at least 10% headroom, no allocation failure), every stack
            (high-water at most 75% of its size, canary intact), the compiler's SRAM peak (at
            most 75% of the SRAM on the part)
  findings  one check per finding kind (cpu-fallback, capture-loss, npu-utilization-low, ...)

A check fails when one of its findings is at or above --fail-on (default: error). Without
--budget there are no layer checks: memory and findings are still checked.

formats:
  text    one line per check and the verdict (default)
  json    the report of 'tracer report --format json' plus "checks" (name, passed, measured,
          limit ...) and "passed"
  junit   JUnit XML: a test case per layer budget, per memory check and per finding kind

A budget for another model than the capture's (other layer count, other operators, layers that
match nothing) is refused with what differs (exit 2); --match any pairs the layers anyway.

exit codes: 0 every check passed; 1 a check failed; 2 bad option or budget file, a budget of
another model, or an output that cannot be written; 3 capture unreadable.

examples:
  tracer check captures/demo.trace --budget captures/demo_budget.toml
  tracer check run.trace --budget out/kws_per-layer.csv out/kws_summary_*.csv --tolerance 20
  tracer check run.trace --budget budget.toml --format junit -o tracer-junit.xml
  tracer check uart.log --fail-on warning --format json -o check.json
  tracer check run.trace --budget out/kws_*.csv --calibration board.json \\
      --against calibrated
  tracer check run.trace --budget budget.toml --power run.jls
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer check``."""
    from tracer.cli.analysis_input import add_budget_arguments, add_input_argument, add_power_arguments

    add_input_argument(parser)
    add_budget_arguments(parser)
    add_power_arguments(parser)
    parser.add_argument(
        "--against",
        choices=("planner", "calibrated"),
        default="planner",
        help="make each layer's limit from the planner's prediction (default) or the calibrated one "
        "(needs --calibration; a layer whose operator type is not calibrated keeps the planner's)",
    )
    parser.add_argument(
        "--fail-on",
        choices=("warning", "error"),
        default="error",
        help="the finding severity that fails the check (default: error)",
    )
    parser.add_argument(
        "--format", choices=("text", "json", "junit"), default="text", help="output format (default: text)"
    )
    parser.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")


def run(args: argparse.Namespace) -> int:
    """Load, analyse, check, write; the exit code is the verdict."""
    from tracer.analysis.checks import run_checks
    from tracer.analysis.findings import Severity
    from tracer.cli.analysis_input import analyse_request, analysis_request
    from tracer.cli.output import open_output, terminal_width
    from tracer.errors import ExitCode
    from tracer.export.fit_width import fit_text
    from tracer.export.junit import write_junit
    from tracer.export.report_json import report_object, write_report_json

    rows: dict[str, int] = {}  # of a capture read in windows: counted in each

    def count(timeline: Any) -> None:
        for what, n in _row_counts(timeline).items():
            rows[what] = rows.get(what, 0) + n

    request = analysis_request(args)
    fail_on: str = args.fail_on
    loaded, analysis = analyse_request(request, args.console, on_window=count)
    result = run_checks(analysis, Severity(fail_on))
    result.checks[:0] = input_checks(loaded, rows or None)
    properties: dict[str, Any] = {"budget": " ".join(request.budget_files) or "none", "fail_on": fail_on}
    if request.settings.tolerance_pct is not None:
        properties["tolerance_pct"] = request.settings.tolerance_pct
    if request.calibration_file:
        properties["calibration"] = request.calibration_file
        properties["against"] = request.settings.against
    with open_output(args.output) as out:
        if args.format == "json":
            document = report_object(analysis, streamed=True)
            document["checks"] = [c.to_json() for c in result.checks]
            document["passed"] = result.passed
            document["fail_on"] = fail_on
            write_report_json(document, out)
        elif args.format == "junit":
            write_junit(result, out, str(request.capture), properties)
        elif width := terminal_width(args.output):  # a terminal: fitted to it; piped: as is
            text = io.StringIO()
            _write_text(result, text, request, fail_on)
            out.write(fit_text(text.getvalue(), width))
        else:
            _write_text(result, out, request, fail_on)
    if args.format != "text" or args.output not in (None, "-"):
        args.console.info(_verdict(result, fail_on))
    return ExitCode.OK if result.passed else ExitCode.CHECK_FAILED


def _row_counts(timeline: Any) -> dict[str, int]:
    """What a timeline (or a window of one) holds, row by row."""
    return {
        "inference(s)": len(timeline.inferences),
        "layer execution(s)": len(timeline.spans),
        "arena report(s)": len(timeline.arena),
        "stack report(s)": len(timeline.stacks),
        "NPU job(s)": len(timeline.npu_jobs),
        "interrupt(s)": len(timeline.isrs),
    }


def input_checks(loaded: Any, rows: dict[str, int] | None = None) -> list[Any]:
    """The checks on the input itself: it measured something, and (ITM) it looks like trace.

    Nothing measured is not a pass: an empty file, a capture cut inside its header or bytes that
    are not trace would otherwise pass every other check for want of anything to check.

    Args:
        loaded: The input.
        rows: Its rows counted window by window, when it was read in windows.
    """
    from tracer.analysis.checks import INPUT, Check

    timeline = loaded.timeline
    counts = [(n, what) for what, n in (rows or _row_counts(timeline)).items()] + [
        (len(timeline.pmu_totals) + len(timeline.pmu_stats), "PMU profile(s)"),
        (len(timeline.allocation_failures), "allocation failure(s)"),
    ]
    seen = [f"{n:,} {what.replace('(s)', 's' if n != 1 else '')}" for n, what in counts if n]
    size = getattr(loaded.facts, "bytes", 0)
    measured = Check(
        "measured",
        INPUT,
        bool(seen),
        sum(n for n, _ in counts),
        1,
        "items",
        ", ".join(seen)
        if seen
        else (
            f"nothing measured: no inference, layer, memory or PMU data in {size:,} bytes of input "
            "(an empty or cut capture, the wrong file, or firmware without tracer's records)"
        ),
    )
    checks = [measured]
    if loaded.kind in ("capture", "raw-itm"):
        doubt = loaded.facts.trace_doubt
        checks.append(
            Check(
                "input looks like trace",
                INPUT,
                doubt is None,
                None,
                None,
                "",
                doubt or "the packets decode as ITM/DWT trace does (reserved headers: almost none)",
            )
        )
    return checks


def _verdict(result: Any, fail_on: str) -> str:
    total = len(result.checks)
    if result.passed:
        return f"check passed: {total} check(s), none failed (fail on {fail_on})"
    return f"check FAILED: {len(result.failed)} of {total} check(s) failed (fail on {fail_on})"


def _write_text(result: Any, out: IO[str], request: AnalysisRequest, fail_on: str) -> None:
    from tracer.analysis.checks import FINDINGS, INPUT, LAYERS, MEMORY

    budget = " ".join(request.budget_files) if request.budget_files else "none (memory and findings only)"
    out.write(f"tracer check {request.capture}\nbudget: {budget}\n")
    titles = {
        INPUT: "input",
        LAYERS: "layers (measured p50 against predicted + tolerance)",
        MEMORY: "memory",
        FINDINGS: "findings",
    }
    for group in (INPUT, LAYERS, MEMORY, FINDINGS):
        checks = [c for c in result.checks if c.group == group]
        if not checks:
            continue
        out.write(f"\n{titles[group]}\n")
        for check in checks:
            mark = "PASS" if check.passed else "FAIL"
            out.write(f"  {mark}  {check.name}: {check.message}\n")
            for finding in check.findings:
                out.write(f"        [{finding.severity.value}] {finding.id}: {finding.message}\n")
                if finding.fix and finding.severity.at_least(result.fail_on):
                    out.write(f"        fix: {finding.fix}\n")
    out.write(f"\n{_verdict(result, fail_on)}\n")
