"""The demo's fault scenarios on QEMU mps3-an547: each one recorded (a few inferences), then
``tracer check --fail-on warning`` names its fault with the right layer and its evidence and exits
1; the clean scenario exits 0, and so does the data-dependent one (its slow runs did more work).
The firmware is built once per session (``qemu_build``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from demo_runs import record_demo

from tracer.pipeline.capture import decode_capture
from tracer.sources.qemu import SAMPLING_SCENARIO, SCENARIOS

pytestmark = pytest.mark.qemu

INFERENCES = 6
RUNS = {"task-preemption": 8, "data-dependent": 20}  # inferences where 6 show too little
FRAME0_OUTPUT_CRC = 0x785B7D52  # the network's correct output for input frame 0 (clean scenario)


@pytest.fixture(scope="module")
def captures(qemu_build: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every fault scenario recorded once (about a second each; the NPU sampling one has its own tests)."""
    out = {}
    tmp = tmp_path_factory.mktemp("scenarios")
    for scenario in (s for s in SCENARIOS if s != SAMPLING_SCENARIO):
        path = tmp / f"{scenario}.trace"
        runs = RUNS.get(scenario, INFERENCES)
        assert record_demo(qemu_build / "demo" / "tracer_demo.elf", runs, scenario, path) == 0, scenario
        out[scenario] = path
    return out


def check(run_cli: Any, capture: Path) -> tuple[int, list[dict[str, Any]]]:
    """``tracer check CAPTURE --fail-on warning --format json``: exit code and the findings."""
    done = run_cli("check", capture, "--fail-on", "warning", "--format", "json")
    assert done.code in (0, 1), done.err
    return done.code, json.loads(done.out)["findings"]


def at_least_warning(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in findings if f["severity"] in ("warning", "error")]


def test_clean_scenario_passes(captures: dict[str, Path], run_cli: Any) -> None:
    """No finding at warning or above; the outputs are the network's, and stable."""
    code, findings = check(run_cli, captures["clean"])
    assert code == 0 and at_least_warning(findings) == []
    tl = decode_capture(captures["clean"]).timeline
    assert tl.inferences.output_crc[0] == FRAME0_OUTPUT_CRC and len(tl.isrs) == 0


def test_isr_jitter_names_the_timer_in_layer_4(captures: dict[str, Path], run_cli: Any) -> None:
    """The S32K timer preempts layer 4 (pw4) in inferences 1 and 5: jitter-preemption, with it."""
    code, findings = check(run_cli, captures["isr-jitter"])
    assert code == 1
    (jitter,) = at_least_warning(findings)
    assert jitter["id"] == "jitter-preemption" and jitter["layer"] == 4
    assert "layer 4 (pw4)" in jitter["message"] and "in 2 of 6 inferences (1, 5)" in jitter["message"]
    assert "the S32K_TIMER interrupt (exception 18) ran inside it" in jitter["message"]
    assert jitter["inferences"] == [1, 5]
    hits = [f for f in findings if f["id"] == "isr-in-layer"]
    assert [(f["layer"], f["evidence"]["name"], f["evidence"]["hits"]) for f in hits] == [(4, "S32K_TIMER", 2)]
    tl = decode_capture(captures["isr-jitter"]).timeline
    assert [(s.exception, s.name) for s in tl.isrs] == [(18, "S32K_TIMER")] * 2
    pw4 = tl.spans.where(tl.spans.layer == 4)
    assert (pw4.cycles - pw4.isr_cycles).max() - (pw4.cycles - pw4.isr_cycles).min() < 50  # own time steady


def test_missing_clean_names_layer_0_and_the_stale_outputs(captures: dict[str, Path], run_cli: Any) -> None:
    """No clean before conv0's NPU job: the error at layer 0 with the buffer and the write; the
    same input frame gives different outputs (nondeterminism), none of them the correct one."""
    code, findings = check(run_cli, captures["missing-clean"])
    assert code == 1
    by_id = {f["id"]: f for f in at_least_warning(findings)}
    assert set(by_id) == {"coherency-missing-clean", "coherency-nondeterministic-output"}
    clean = by_id["coherency-missing-clean"]
    assert clean["severity"] == "error" and clean["layer"] == 0
    assert "layer 0 (conv0) read input buffer 0x31000000+3072, but no cache clean covered it" in clean["message"]
    assert f"in {INFERENCES} of {INFERENCES} inferences" in clean["message"]
    assert "SCB_CleanDCache_by_Addr((void *)0x31000000, 3072)" in clean["fix"]
    nondet = by_id["coherency-nondeterministic-output"]
    assert nondet["layer"] == 0 and nondet["evidence"]["inferences"] == INFERENCES
    tl = decode_capture(captures["missing-clean"]).timeline
    assert len(set(tl.inferences.input_crc.tolist())) == 1
    assert FRAME0_OUTPUT_CRC not in tl.inferences.output_crc.tolist()


def test_stack_overflow_overwrites_the_canary_inside_layer_6(captures: dict[str, Path], run_cli: Any) -> None:
    """The canary of the main stack broken in inference 2, reported inside layer 6 (pool6)."""
    code, findings = check(run_cli, captures["stack-overflow"])
    assert code == 1
    canary = [f for f in findings if f["id"] == "stack-canary"]
    assert len(canary) == 1 and canary[0]["severity"] == "error" and "'main'" in canary[0]["message"]
    tl = decode_capture(captures["stack-overflow"]).timeline
    broken = [s for s in tl.stacks if not s.canary_ok]
    first = broken[0].cycle
    spans = tl.spans
    inside = (spans.start <= first) & (first < spans.end)
    assert spans.layer[inside].tolist() == [6] and spans.inference[inside].tolist() == [2]
    # pool6 did the extra work in that run: it is also the layer the jitter rules point at.
    jitter = [f for f in at_least_warning(findings) if f["id"].startswith("jitter-")]
    assert [(f["layer"], f["inferences"]) for f in jitter] == [(6, [2])]


def test_arena_too_small_reports_what_tflite_micro_says(captures: dict[str, Path], run_cli: Any) -> None:
    """The TFLM message on the console becomes the arena-too-small error with the sizes."""
    code, findings = check(run_cli, captures["arena-too-small"])
    assert code == 1
    (arena,) = [f for f in findings if f["id"] == "arena-too-small"]
    assert arena["severity"] == "error" and "1,024 bytes short" in arena["message"]
    tl = decode_capture(captures["arena-too-small"]).timeline
    assert "Failed to resize buffer. Requested: 13312, available 12288, missing: 1024" in [c.text for c in tl.console]
    assert len(tl.inferences) == 0


def test_task_preemption_names_the_sensor_task_in_layer_2(captures: dict[str, Path], run_cli: Any) -> None:
    """The sensor task preempts layer 2 (pw2) in inferences 2 and 6: jitter-task-preemption
    (warning) naming the task, the layer and its cycles; the timer that woke it is named as well;
    the report's tasks section gives both tasks' CPU shares and the time taken from pw2."""
    code, findings = check(run_cli, captures["task-preemption"])
    assert code == 1
    (jitter,) = at_least_warning(findings)
    assert jitter["id"] == "jitter-task-preemption" and jitter["layer"] == 2 and jitter["inferences"] == [2, 6]
    assert "layer 2 (pw2)" in jitter["message"] and "in 2 of 8 inferences (2, 6)" in jitter["message"]
    tl = decode_capture(captures["task-preemption"]).timeline
    sensor = [s for s in tl.tasks if s.name == "sensor"]
    assert len(sensor) == 2 and sensor[0].cycles == sensor[1].cycles
    assert f"in each, it was preempted by task sensor for {sensor[0].cycles:,} cycles" in jitter["message"]
    assert "the S32K_TIMER interrupt (exception 18) also ran inside it" in jitter["message"]
    listed = jitter["evidence"]["listed"]
    assert [o["tasks"][0]["name"] for o in listed] == ["sensor", "sensor"]
    report = json.loads(run_cli("report", captures["task-preemption"], "--format", "json").out)
    shares = {t["name"]: t for t in report["tasks"]["by_task"]}
    assert set(shares) == {"inference", "sensor"} and shares["sensor"]["cycles"] == sensor[0].cycles * 2
    assert abs(sum(t["share"] for t in shares.values()) - 1) < 1e-5 and report["tasks"]["incomplete"] == 0
    assert [(h["layer"], h["name"], h["hits"]) for h in report["tasks"]["by_layer"]] == [(2, "sensor", 2)]
    layer2 = report["jitter"]["layers"][2]
    assert layer2["causes"] == {"task preemption": 2}
    # Own time leaves the task and the handler out: the preempted runs' is the others' (PendSV and
    # the switch records: a few dozen cycles).
    assert [abs(o["own_cycles"] - layer2["p50"]) <= 20 for o in layer2["listed"]] == [True, True]


def test_data_dependent_post_process_passes_the_gate_as_more_work(captures: dict[str, Path], run_cli: Any) -> None:
    """The post-process (layer 10, detect10) is slower on frames with an object: it reported
    more candidates (trc_layer_work), so `tracer check --fail-on warning` passes and the report
    says the layer did more work, with the counts."""
    code, findings = check(run_cli, captures["data-dependent"])
    assert code == 0 and at_least_warning(findings) == []
    (more,) = [f for f in findings if f["id"].startswith("jitter-")]
    assert more["id"] == "jitter-more-work" and more["severity"] == "info" and more["layer"] == 10
    assert "layer 10 (detect10)" in more["message"] and "doing more work" in more["message"]
    tl = decode_capture(captures["data-dependent"]).timeline
    spans = tl.spans.where(tl.spans.layer == 10)
    work = tl.span_facts.work[tl.span_facts.rows_for(spans)]
    worst = int(spans.cycles.argmax())
    assert f"its work count (trc_layer_work) {work[worst]:,} instead of" in more["message"]
    for o in more["evidence"]["listed"]:
        assert o["explained_by"] == "work_count" and o["work"]["work_count"] > o["work_median"]["work_count"]
    assert set(more["inferences"]) <= {n for n in range(20) if n % 3 == 2}  # frames with an object
    text = run_cli("report", captures["data-dependent"]).out
    assert "more work (work_count" in text


def test_every_path_says_what_the_report_says_of_each_scenario(
    captures: dict[str, Path], run_cli, tmp_path: Path
) -> None:
    """The differential oracle of tests/test_one_answer.py on every scenario the demo records:
    report whole and in small windows, the compare digest, the ingest rows and the session (at
    max speed, and paced while the speed changes) give the same numbers."""
    from one_answer import assert_one_answer

    for scenario, path in captures.items():
        staging = tmp_path / scenario
        staging.mkdir()
        assert_one_answer(run_cli, path, staging)
