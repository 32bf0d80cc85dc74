"""The report contract (``docs/report.md``, ``docs/report.schema.json``) holds for every kind of input.

Every report ``tracer report`` and ``tracer check`` write here, from the shipped captures, the text
logs and ETDump of other projects, the real corpus captures and generated streams that exercise
interrupts, tasks and jitter, is validated against the JSON Schema shipped in ``docs/``. The
schema itself is shown to reject what the contract forbids, and the prose to name every section.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from check_streams import write_capture
from jitter_streams import SENSOR_TASK, stream, task_in_layer, timer_in_layer, two_tasks

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())
DOC = (ROOT / "docs" / "report.md").read_text()
DATA = ROOT / "tests" / "data"
DEMO, SAMPLING = ROOT / "captures" / "demo.trace", ROOT / "captures" / "demo_sampling.trace"
BUDGET = ROOT / "captures" / "demo_budget.toml"

INPUTS = {
    "demo": [DEMO],
    "demo with budget, per inference": [DEMO, "--budget", BUDGET, "--per-inference"],
    "demo sampling, per inference": [SAMPLING, "--per-inference"],
    **{f"log {p.name}": [p] for p in sorted((DATA / "logs").glob("*.log"))},
    **{f"etdump {p.name}": [p] for p in sorted((DATA / "etdump").glob("*.etdp"))},
    **{f"corpus {p.name}": [p] for p in sorted((DATA / "corpus").rglob("*.trace"))},
    **{f"corpus {p.name}": [p] for p in sorted((DATA / "corpus").rglob("*.bin"))},
}


def _validator() -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(SCHEMA)
    cls.check_schema(SCHEMA)
    return cls(SCHEMA)


def _errors(report: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in _validator().iter_errors(report)]


@pytest.mark.parametrize("args", INPUTS.values(), ids=INPUTS.keys())
def test_report_of_every_input_kind_follows_the_schema(args: list[Any], run_cli) -> None:
    """The JSON report of each input validates; its sections are the ones the contract names."""
    done = run_cli("report", *args, "--format", "json")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert _errors(report) == []
    assert set(report) <= set(SCHEMA["properties"]), "a section the schema does not describe"


def test_reports_with_interrupts_tasks_and_jitter_follow_the_schema(tmp_path: Path, run_cli) -> None:
    """Generated streams where a timer interrupt and another task lengthen layers: the optional
    sections ``interrupts``, ``tasks`` and ``jitter`` (with listed outliers) are present and valid."""
    timer = timer_in_layer(1, every=4, first=2, cycles=9_000)
    task = task_in_layer(2, inferences=(3, 7), cycles=12_000)

    def both(n: int, layer: int, enc: Any, t: int) -> int:
        return timer(n, layer, enc, t) + task(n, layer, enc, t)

    capture = write_capture(tmp_path / "busy.trace", stream(12, [20_000, 30_000, 40_000], both, setup=two_tasks))
    report = json.loads(run_cli("report", capture, "--format", "json").out)
    assert {"interrupts", "tasks", "jitter"} <= set(report)
    assert any(t["task"] == SENSOR_TASK for t in report["tasks"]["by_task"])
    assert any(layer["listed"] for layer in report["jitter"]["layers"])
    assert _errors(report) == []


def test_check_json_follows_the_schema(tmp_path: Path, run_cli) -> None:
    """``tracer check --format json`` is the report plus checks, passed and fail_on."""
    done = run_cli("check", DEMO, "--budget", BUDGET, "--format", "json")
    report = json.loads(done.out)
    assert done.code == 0 and report["passed"] is True
    assert {"checks", "passed", "fail_on"} <= set(report)
    assert _errors(report) == []


@pytest.mark.parametrize(
    ("breakage", "where"),
    [
        (lambda r: r.pop("layers"), "(top)"),
        (
            lambda r: r["findings"].append(
                {"id": "x", "severity": "fatal", "layer": None, "message": "m", "evidence": {}}
            ),
            "findings/0/severity",
        ),
        (lambda r: r["layers"][0].update(engine="gpu"), "layers/0/engine"),
        (lambda r: r["layers"][0]["cycles"].pop("p99"), "layers/0/cycles"),
        (lambda r: r["capture"]["loss"].update(gaps=-1), "capture/loss/gaps"),
        (lambda r: r.update(schema_version=2), "schema_version"),
    ],
    ids=["no layers", "unknown severity", "unknown engine", "summary without p99", "negative loss", "newer version"],
)
def test_the_schema_rejects_what_the_contract_forbids(breakage, where: str, run_cli) -> None:
    """A report broken in one place fails validation at that place (the schema can fail)."""
    report = json.loads(run_cli("report", DEMO, "--format", "json").out)
    broken = copy.deepcopy(report)
    breakage(broken)
    errors = _errors(broken)
    assert errors and any(e.startswith(where) for e in errors), errors


def test_the_prose_names_every_section_and_field_group() -> None:
    """docs/report.md explains each top-level section and each capture field the schema lists."""
    for key in SCHEMA["properties"]:
        assert f"`{key}`" in DOC, f"docs/report.md does not explain `{key}`"
    for key in SCHEMA["properties"]["capture"]["properties"]:
        assert f"`{key}`" in DOC, f"docs/report.md does not explain capture `{key}`"
