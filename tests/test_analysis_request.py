"""``report``, ``check`` and ``export`` read their command line once, into a typed
:class:`~tracer.cli.analysis_input.AnalysisRequest`, at the command's edge; nothing below sees
the ``argparse.Namespace``."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import io
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tracer.cli import analysis_input, cmd_check, cmd_export, cmd_report
from tracer.cli.analysis_input import AnalysisRequest, analyse_request, analysis_request
from tracer.cli.main import build_parser
from tracer.cli.output import Console
from tracer.errors import UsageError
from tracer.export.report_json import report_object, write_report_json

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "captures" / "demo.trace"
BUDGET = ROOT / "captures" / "demo_budget.toml"


def _args(*words: str | Path) -> argparse.Namespace:
    args = build_parser(only=str(words[0])).parse_args([str(w) for w in words])
    args.console = Console()
    return args


def test_the_request_holds_the_options_typed_and_the_budget_opened() -> None:
    args = _args(
        "report", DEMO, "--budget", BUDGET, "--tolerance", "5%", "--clock", "400M", "--match", "any",
        "--jitter-threshold", "30", "--per-inference",
    )  # fmt: skip
    request = analysis_request(args, whole=True)
    assert request.capture == str(DEMO)
    assert request.budget_files == (str(BUDGET),)
    assert request.budget is not None and len(request.budget.layers) > 0
    assert request.settings.tolerance_pct == 5.0
    assert request.settings.jitter_threshold_pct == 30.0
    assert request.settings.jitter_min_share_pct is None
    assert request.settings.against == "planner"
    assert (request.clock_hz, request.match, request.whole) == (400_000_000, "any", True)
    assert (request.locator, request.power, request.calibration_file) == (None, None, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.capture = "other.trace"  # type: ignore[misc]


def test_a_command_without_an_option_gets_its_default() -> None:
    """``check`` has no ``--elf``; ``report`` has no ``--against``."""
    check = analysis_request(_args("check", DEMO))
    assert check.locator is None and check.budget is None and check.budget_files == ()
    assert check.settings.against == "planner" and check.match == "model"
    with pytest.raises(UsageError, match="--against calibrated needs --calibration"):
        analysis_request(_args("check", DEMO, "--against", "calibrated"))
    with pytest.raises(UsageError, match="give the budget too"):
        analysis_request(_args("report", DEMO, "--calibration", BUDGET))


def test_a_request_made_in_code_is_analysed_as_the_command_line_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The analysis reads the request only: one built field by field gives the same analysis."""
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    from_line = analysis_request(_args("report", DEMO, "--budget", BUDGET, "--tolerance", "5"))
    by_hand = AnalysisRequest(
        capture=str(DEMO),
        budget_files=from_line.budget_files,
        budget=from_line.budget,
        settings=dataclasses.replace(from_line.settings),
    )
    _, one = analyse_request(from_line, Console())
    _, other = analyse_request(by_hand, Console())
    first, second = io.StringIO(), io.StringIO()
    write_report_json(report_object(one), first)
    write_report_json(report_object(other), second)
    assert json.loads(first.getvalue())["budget"]["tolerance_pct"] == 5.0
    assert first.getvalue() == second.getvalue()


def _taking_namespace(module: ModuleType) -> set[str]:
    """The module's own functions with a parameter annotated ``argparse.Namespace``."""
    names = set()
    for name, function in inspect.getmembers(module, inspect.isfunction):
        if function.__module__ != module.__name__:
            continue
        if any("Namespace" in str(p.annotation) for p in inspect.signature(function).parameters.values()):
            names.add(name)
    return names


@pytest.mark.parametrize(
    ("module", "edge"),
    [
        (cmd_report, {"run"}),
        (cmd_check, {"run"}),
        (cmd_export, {"run"}),
        (analysis_input, {"analysis_request", "analyse_input"}),
    ],
)
def test_only_the_edge_sees_the_command_line(module: ModuleType, edge: set[str]) -> None:
    assert _taking_namespace(module) == edge


@pytest.mark.parametrize("verb", ["report", "check", "replay"])
def test_every_front_end_refuses_a_calibration_without_a_budget(run_cli, verb: str) -> None:
    """One loader of ``--calibration`` for the reports and the screen (before any screen opens)."""
    result = run_cli(verb, DEMO, "--calibration", BUDGET)
    assert result.code == 2
    assert "--calibration corrects a planner's predictions: give the budget too" in result.err
