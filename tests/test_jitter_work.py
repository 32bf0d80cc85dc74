"""Work-aware jitter on synthetic streams (our encoder): more work told from contention by the
firmware's work count, INST_RETIRED and NPU beats; preemption by an RTOS task beside the
interrupt cause; small and data-dependent layers as information; the thresholds from the command
line, the budget and the defaults, in that order; the report's tasks section."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from analysis_helpers import analyse
from jitter_streams import (
    INFERENCE_TASK,
    SENSOR_TASK,
    build,
    inst_retired,
    stream,
    task_in_layer,
    timer_in_layer,
    two_tasks,
    work_in_layer,
)
from telemetry_encoder import TelemetryEncoder

from tracer.analysis.findings import Finding
from tracer.analysis.findings.jitter import KINDS
from tracer.analysis.findings.rules import declared_kinds
from tracer.analysis.jitter import MORE_WORK, TASK_PREEMPTION
from tracer.analysis.settings import AnalysisSettings
from tracer.base.timeline import InferenceTimeline
from tracer.budget.loader import load_budget_texts
from tracer.budget.model import Budget, ModelBudget
from tracer.budget.text import BudgetText
from tracer.errors import UsageError
from tracer.export.report_json import report_object
from tracer.export.report_text import render_report
from tracer.telemetry.wire import COUNTERS_DWT, TimeSource

LENGTHS = [5000, 3000, 4000]  # layer 1 takes about a third of the inference


def jitter_findings(timeline: InferenceTimeline, budget: Budget | None = None, **settings: Any) -> list[Finding]:
    return [f for f in analyse(timeline, budget, **settings).findings if f.id.startswith("jitter-")]


def slow_once(layer: int, inference: int, cycles: int) -> Any:
    """``layer`` takes ``cycles`` more in ``inference``, with nothing inside to say why."""

    def extra(n: int, index: int, enc: TelemetryEncoder, t: int) -> int:
        return cycles if (n, index) == (inference, layer) else 0

    return extra


def toml_budget(text: str) -> Budget:
    return load_budget_texts([BudgetText.from_bytes(text.encode(), "budget.toml")])


# -- more work, same work -------------------------------------------------------------------------
def test_more_work_by_the_work_count_is_information_never_contention() -> None:
    """The post-process reports 12 candidates instead of 4 on two frames and takes longer in
    proportion: more work (info), with the count in the message and the evidence."""
    tl = build(20, [5000, 300, 4000], work_in_layer(1, lambda n: 12 if n in (3, 11) else 4, 40))
    layer = analyse(tl).jitter.layer(1)
    assert layer is not None and layer.causes == {MORE_WORK: 2} and layer.work_measures == ("work_count",)
    (finding,) = jitter_findings(tl)
    assert finding.id == "jitter-more-work" and finding.severity.value == "info" and finding.layer == 1
    assert finding.inferences == (3, 11)
    assert finding.message == (
        "layer 1 (l1) took up to 1.7x its median (460 cycles) in 2 of 20 inferences (3, 11), doing more work "
        "(data-dependent): at its slowest, its work count (trc_layer_work) 12 instead of 4 (3.0x), its own time 1.7x"
    )
    listed = finding.evidence["listed"][0]
    assert listed["work"] == {"work_count": 12} and listed["work_median"] == {"work_count": 4}
    assert listed["explained_by"] == "work_count" and listed["work_ratio"] == 3.0


def test_work_where_there_usually_is_none_is_more_work() -> None:
    """Usually no candidate at all, five on one frame: more work (the ratio is infinite, so the
    evidence gives none and the report stays valid JSON)."""
    tl = build(12, [5000, 300, 4000], work_in_layer(1, lambda n: 5 if n == 8 else 0, 60))
    (finding,) = jitter_findings(tl)
    assert finding.id == "jitter-more-work" and finding.inferences == (8,)
    assert "its work count (trc_layer_work) 5 instead of 0, its own time 2.0x" in finding.message
    assert finding.evidence["listed"][0]["work_ratio"] is None
    json.dumps(report_object(analyse(tl)), allow_nan=False)


def test_more_instructions_explain_a_slow_run_without_a_work_count() -> None:
    """No work count, but INST_RETIRED doubled with the time: more work."""

    def extra(n: int, index: int, enc: TelemetryEncoder, t: int) -> int:
        if index != 1:
            return 0
        big = n == 7
        enc.cpu_counters(t + 6, 1, 1, [60_000 if big else 30_000])
        return 3000 if big else 0

    tl = build(12, LENGTHS, extra, setup=inst_retired)
    (finding,) = jitter_findings(tl)
    assert finding.id == "jitter-more-work" and finding.inferences == (7,)
    assert "its instructions (INST_RETIRED) 60,000 instead of 30,000 (2.0x), its own time 2.0x" in finding.message


def test_same_work_in_more_cycles_is_contention() -> None:
    """The same work count and the same instructions, 60 % more cycles, no interrupt or task
    inside: contention (warning), and the message says the work was the same."""
    slow = slow_once(1, 5, 1800)

    def extra(n: int, index: int, enc: TelemetryEncoder, t: int) -> int:
        if index == 1:
            enc.work(t + 5, 1, 8)
            enc.cpu_counters(t + 6, 1, 1, [30_000])
        return slow(n, index, enc, t)

    tl = build(12, LENGTHS, extra, setup=inst_retired)
    (finding,) = jitter_findings(tl)
    assert finding.id == "jitter-contention" and finding.severity.value == "warning" and finding.inferences == (5,)
    assert "with no interrupt or task inside (its work count (trc_layer_work) 8 instead of 8" in finding.message
    assert "it did the same work (its work measures within 5% of usual) in more cycles" in finding.message
    assert finding.evidence["listed"][0]["work"] == {"work_count": 8, "INST_RETIRED": 30_000}


def test_a_little_more_work_does_not_explain_much_more_time() -> None:
    """Work up 25 %, own time up 100 %: not more work, contention."""

    def extra(n: int, index: int, enc: TelemetryEncoder, t: int) -> int:
        if index != 1:
            return 0
        enc.work(t + 5, 1, 5 if n == 4 else 4)
        return 3000 if n == 4 else 0

    tl = build(12, LENGTHS, extra)
    (finding,) = jitter_findings(tl)
    assert finding.id == "jitter-contention" and finding.inferences == (4,)
    assert "its own time grew far more than its work" in finding.message
    assert finding.evidence["listed"][0]["work_ratio"] == 1.25


def test_no_work_measure_stays_contention_and_says_how_to_tell() -> None:
    """A CPU layer slower with no work measure at all: contention; the fix names trc_layer_work()
    and the budget's data_dependent."""
    tl = build(12, LENGTHS, slow_once(1, 5, 1800))
    (finding,) = jitter_findings(tl)
    assert (
        finding.id == "jitter-contention" and "no work count or instruction count tells them apart" in finding.message
    )
    assert "report it with trc_layer_work() or mark the layer data_dependent in the budget" in (finding.fix or "")


def test_npu_beats_up_less_than_the_cycles_is_not_more_work() -> None:
    """NPU read beats up 10 %, NPU cycles and idle time up 2x: the NPU waited (contention)."""

    def pmu(n: int, index: int, length: int) -> list[int]:
        slow = n == 6
        return [9000 if slow else 4200, 4000, 563 if slow else 512, 256, 40]

    tl = build(12, [2000, 4500], slow_once(1, 6, 4800), npu=(1,), pmu=pmu)
    (finding,) = jitter_findings(tl)
    assert finding.id == "jitter-contention" and finding.inferences == (6,)
    assert "its NPU PMU counter AXI0_RD_DATA_BEAT_RECEIVED 563 instead of 512 (1.1x)" in finding.message
    assert "with the same work" not in finding.message
    listed = finding.evidence["listed"][0]
    assert listed["work_ratio"] == pytest.approx(563 / 512, abs=1e-3) and "explained_by" not in listed
    assert listed["idle_cycles"] == 5000


# -- preemption by a task, by an interrupt ------------------------------------------------------------
def test_task_preemption_names_the_task_and_the_layer() -> None:
    """The sensor task takes 6,000 cycles from layer 1 in inferences 2 and 6, woken by TIMER0:
    jitter-task-preemption (warning) naming the task; the layer's own time leaves both out."""
    tl = build(20, [5000, 8000, 4000], task_in_layer(1, (2, 6), 6000, isr=50), setup=two_tasks)
    analysis = analyse(tl)
    layer = analysis.jitter.layer(1)
    assert layer is not None and layer.causes == {TASK_PREEMPTION: 2}
    assert layer.own_p50 == 8000 and layer.own_cv == 0.0
    (finding,) = jitter_findings(tl)
    assert finding.id == "jitter-task-preemption" and finding.severity.value == "warning" and finding.layer == 1
    assert finding.message == (
        "layer 1 (l1) took up to 1.8x its median (8,000 cycles) in 2 of 20 inferences (2, 6); in each, it was "
        "preempted by task sensor for 6,000 cycles; in each, the TIMER0 interrupt (exception 24) also ran inside it "
        "for 50 cycles"
    )
    listed = finding.evidence["listed"][0]
    assert listed["tasks"] == [{"task": SENSOR_TASK, "name": "sensor", "cycles": 6000}]
    assert listed["task_cycles"] == 6000 and listed["isr_cycles"] == 50 and listed["own_cycles"] == 8000
    assert "priority" in finding.fix


def test_the_larger_of_interrupt_and_task_time_is_the_cause() -> None:
    """A handler of 5,000 cycles and a task slice of 1,000 in the same run: interrupt preemption,
    the task named too."""
    tl = build(12, [5000, 8000, 4000], task_in_layer(1, (3,), 1000, isr=5000), setup=two_tasks)
    (finding,) = jitter_findings(tl)
    assert finding.id == "jitter-preemption" and finding.inferences == (3,)
    assert finding.message.endswith(
        "the TIMER0 interrupt (exception 24) ran inside it for 5,000 cycles; it was also "
        "preempted by task sensor for 1,000 cycles"
    )


def test_interrupt_preemption_is_unchanged_without_tasks() -> None:
    """No task lane: the interrupt cause as before, task time 0."""
    tl = build(12, LENGTHS, timer_in_layer(1, 4, 1, 2500))
    (finding,) = jitter_findings(tl)
    assert finding.id == "jitter-preemption" and finding.evidence["listed"][0]["task_cycles"] == 0
    assert analyse(tl).tasks is None


# -- small and data-dependent layers ---------------------------------------------------------------------
def test_a_tiny_layer_s_jitter_is_information() -> None:
    """A CPU layer of 200 cycles in an inference of 80,450 runs 2.5x slower once: under 1 % of the
    inference at its slowest, so information; with the minimum share at 0 it is a warning again."""
    tl = build(12, [40_000, 200, 40_000], slow_once(1, 5, 300))
    (finding,) = jitter_findings(tl)
    assert finding.id == "jitter-contention" and finding.severity.value == "info"
    assert finding.message.endswith(
        "(information, not a warning: at its slowest it takes 0.62% of the inference, under the minimum share of 1.00%)"
    )
    assert finding.evidence["share"] == pytest.approx(500 / 80_450, abs=1e-6)
    (warning,) = jitter_findings(tl, jitter_min_share_pct=0)
    assert warning.severity.value == "warning" and "information" not in warning.message


def test_a_tiny_layer_hit_by_a_long_interrupt_is_still_a_warning() -> None:
    """The share counts the slowest run: a long handler makes the layer anything but small."""
    tl = build(12, [40_000, 400, 40_000], timer_in_layer(1, 6, 2, 9000))
    (finding,) = jitter_findings(tl)
    assert finding.id == "jitter-preemption" and finding.severity.value == "warning"


DATA_DEPENDENT_BUDGET = """\
[[layer]]
index = 0
cycles = 5000

[[layer]]
index = 1
cycles = 3000
data_dependent = true

[[layer]]
index = 2
cycles = 4000
"""


def test_a_layer_the_budget_marks_data_dependent_has_expected_spread() -> None:
    """Without a work count, the marked layer's slow run is information (its spread is
    expected); an interrupt inside it is still a warning; unmarked layers are unchanged."""
    budget = toml_budget(DATA_DEPENDENT_BUDGET)
    assert [la.data_dependent for la in budget.layers] == [False, True, False]
    (finding,) = jitter_findings(build(12, LENGTHS, slow_once(1, 5, 1800)), budget)
    assert finding.id == "jitter-contention" and finding.severity.value == "info"
    assert "the budget marks the layer data-dependent: its spread is expected" in finding.message
    assert finding.evidence["data_dependent"] is True
    (isr,) = jitter_findings(build(12, LENGTHS, timer_in_layer(1, 4, 1, 2500)), budget)
    assert isr.id == "jitter-preemption" and isr.severity.value == "warning"
    (other,) = jitter_findings(build(12, LENGTHS, slow_once(2, 5, 2400)), budget)
    assert other.layer == 2 and other.severity.value == "warning"
    report = report_object(analyse(build(12, LENGTHS, slow_once(1, 5, 1800)), budget))
    assert report["layers"][1]["budget"]["data_dependent"] is True and report["jitter"]["layers"][1]["data_dependent"]


# -- DWT counters: only where exact ------------------------------------------------------------------------
def _dwt_stream(length: int, time_source: TimeSource) -> InferenceTimeline:
    def setup(enc: TelemetryEncoder, t: int) -> None:
        enc.cpu_counter_config(t, COUNTERS_DWT, [1, 4])  # CPI, LSU

    def extra(n: int, index: int, enc: TelemetryEncoder, t: int) -> int:
        if index != 1:
            return 0
        slow = n == 5
        cpi, lsu = (90, 40) if slow else (10, 5)
        enc.cpu_counters(t + 6, 1, COUNTERS_DWT, [250 | ((250 + cpi) & 0xFF) << 8, 3 | ((3 + lsu) & 0xFF) << 8])
        return length if slow else 0

    return build(12, [5000, length, 4000], extra, setup=setup, time_source=time_source)


def test_dwt_counters_are_shown_only_where_they_cannot_have_wrapped() -> None:
    """A layer of 120 CPU cycles (DWT time base): its CPI and LSU changes are exact and shown
    with their medians; a layer of 3,000 cycles, or a time base that is not the CPU's, gives
    only the reason they are left out."""
    (short,) = jitter_findings(_dwt_stream(120, TimeSource.DWT), jitter_min_share_pct=0)
    listed = short.evidence["listed"][0]
    assert listed["dwt"] == {"DWT_CPI_MOD256": 90, "DWT_LSU_MOD256": 40}
    assert listed["dwt_median"] == {"DWT_CPI_MOD256": 10, "DWT_LSU_MOD256": 5}
    for timeline in (_dwt_stream(3000, TimeSource.DWT), _dwt_stream(120, TimeSource.SYSTICK)):
        (finding,) = jitter_findings(timeline, jitter_min_share_pct=0)
        listed = finding.evidence["listed"][0]
        assert "dwt" not in listed and "modulo 256 only" in listed["dwt_not_used"]


# -- thresholds: command line over budget over default ---------------------------------------------------
def test_jitter_settings_precedence() -> None:
    """The command line's value wins, then the budget's model keys, then 20 % and 1 %."""
    model = ModelBudget(jitter_threshold_pct=35, jitter_min_share_pct=4)
    assert AnalysisSettings().jitter() == AnalysisSettings().jitter(ModelBudget())
    default = AnalysisSettings().jitter()
    assert (default.threshold_pct, default.threshold_from, default.min_share_pct, default.min_share_from) == (
        20.0,
        "default",
        1.0,
        "default",
    )
    budget = AnalysisSettings().jitter(model)
    assert (budget.threshold_pct, budget.threshold_from, budget.min_share_pct, budget.min_share_from) == (
        35.0,
        "budget",
        4.0,
        "budget",
    )
    both = AnalysisSettings(jitter_threshold_pct=50, jitter_min_share_pct=0).jitter(model)
    assert (both.threshold_pct, both.threshold_from, both.min_share_pct, both.min_share_from) == (
        50.0,
        "option",
        0.0,
        "option",
    )


def test_thresholds_from_the_cli_and_the_budget_file(tmp_path: Path, run_cli: Any) -> None:
    """`tracer check` on a raw ITM file: layer 1 runs 60 % slower once (contention, warning).
    The budget's jitter_threshold_pct = 80 makes it no outlier (exit 0); --jitter-threshold 30
    beats the budget (exit 1). The budget's jitter_min_share_pct = 50 makes it information;
    --jitter-min-share 0 beats that."""
    capture = tmp_path / "jitter.itm"
    capture.write_bytes(stream(12, LENGTHS, slow_once(1, 5, 1800)))
    budget = tmp_path / "b.toml"

    def check(*options: str) -> tuple[int, dict[str, Any]]:
        done = run_cli("check", capture, "--fail-on", "warning", "--format", "json", *options)
        assert done.code in (0, 1), done.err
        report = json.loads(done.out)
        return done.code, report

    code, report = check()
    assert code == 1 and report["jitter"]["settings"]["threshold_from"] == "default"
    budget.write_text("[model]\njitter_threshold_pct = 80\n")
    code, report = check("--budget", str(budget))
    assert code == 0 and report["jitter"]["settings"] == {
        "threshold_pct": 80.0,
        "min_share_pct": 1.0,
        "threshold_from": "budget",
        "min_share_from": "default",
    }
    code, report = check("--budget", str(budget), "--jitter-threshold", "30")
    assert code == 1 and report["jitter"]["threshold_pct"] == 30.0
    assert report["jitter"]["settings"]["threshold_from"] == "option"
    budget.write_text("[model]\njitter_min_share_pct = 50\n")
    code, report = check("--budget", str(budget))
    assert code == 0 and [f["severity"] for f in report["findings"] if f["id"] == "jitter-contention"] == ["info"]
    code, report = check("--budget", str(budget), "--jitter-min-share", "0")
    assert code == 1
    text = run_cli("report", capture, "--budget", str(budget), "--jitter-threshold", "30")
    assert "more than 30% (command line) above the median; layers under 50% (budget) of the inference" in text.out


def test_bad_threshold_options_exit_2(tmp_path: Path, run_cli: Any) -> None:
    capture = tmp_path / "jitter.itm"
    capture.write_bytes(stream(4, LENGTHS))
    for option, value in (("--jitter-threshold", "x"), ("--jitter-min-share", "150")):
        done = run_cli("check", capture, option, value)
        assert done.code == 2 and option in done.err


# -- the budget file ---------------------------------------------------------------------------------------
def test_budget_keys_are_read_checked_and_written_back() -> None:
    """data_dependent (true/false) on a layer, the jitter thresholds on the model; a wrong type
    names the line; the JSON `tracer budget` writes reads back the same."""
    text = "[model]\njitter_threshold_pct = 25\njitter_min_share_pct = 0.5\n\n" + DATA_DEPENDENT_BUDGET
    budget = toml_budget(text)
    assert (budget.model.jitter_threshold_pct, budget.model.jitter_min_share_pct) == (25.0, 0.5)
    again = load_budget_texts([BudgetText.from_bytes(json.dumps(budget.to_json()).encode(), "b.json")])
    assert [la.data_dependent for la in again.layers] == [False, True, False]
    assert again.model.jitter_threshold_pct == 25.0 and again.model.jitter_min_share_pct == 0.5
    with pytest.raises(UsageError, match=r"budget\.toml:8: 'data_dependent': expected true or false, got 'yes'"):
        toml_budget(DATA_DEPENDENT_BUDGET.replace("data_dependent = true", 'data_dependent = "yes"'))
    with pytest.raises(
        UsageError, match=r"budget\.toml:2: 'jitter_threshold_pct': expected a percentage from 0 to 10000"
    ):
        toml_budget('[model]\njitter_threshold_pct = "high"\n')


def test_an_overlay_marks_a_layer_of_another_file_data_dependent() -> None:
    """A layers-without-cycles file sets data_dependent on the layers another file predicts."""
    base = BudgetText.from_bytes(DATA_DEPENDENT_BUDGET.replace("data_dependent = true\n", "").encode(), "plan.toml")
    overlay = BudgetText.from_bytes(b"[[layer]]\nindex = 2\ndata_dependent = true\n", "overlay.toml")
    budget = load_budget_texts([base, overlay])
    assert [la.data_dependent for la in budget.layers] == [False, False, True]


# -- the tasks section and the gate's kinds ----------------------------------------------------------------
def test_report_tasks_section_and_its_text() -> None:
    """Per-task CPU share over the complete slices, the slices' loss, the time taken from each
    layer; the text carries the same; the jitter outliers name the task."""
    tl = build(8, [5000, 8000, 4000], task_in_layer(1, (2, 6), 6000), setup=two_tasks)
    report = report_object(analyse(tl))
    json.dumps(report)
    tasks = report["tasks"]
    total = tl.tasks[-1].end - tl.tasks[0].start
    assert tasks["slices"] == 5 and tasks["complete"] == 5 and tasks["incomplete"] == 0
    assert [(t["name"], t["slices"], t["cycles"]) for t in tasks["by_task"]] == [
        ("inference", 3, total - 12_000),
        ("sensor", 2, 12_000),
    ]
    assert tasks["by_task"][1]["share"] == pytest.approx(12_000 / total, abs=1e-6)
    assert tasks["by_layer"] == [
        {
            "layer": 1,
            "task": SENSOR_TASK,
            "name": "sensor",
            "hits": 2,
            "spans": 8,
            "inferences": [2, 6],
            "cycles_total": 12_000,
            "cycles_max": 6000,
        }
    ]
    assert report["jitter"]["layers"][1]["causes"] == {"task preemption": 2}
    text = render_report(report)
    assert "tasks       5 task slice(s)" in text and "  sensor: " in text
    assert "in layer 1 (l1): task sensor took 12,000 cycles from 2 of its 8 runs (max 6,000)" in text
    assert "inference 2: 14,000 cycles (1.75x), task preemption (task sensor 6,000 cycles)" in text
    assert tl.task_names == {INFERENCE_TASK: "inference", SENSOR_TASK: "sensor"}


def test_the_gate_lists_every_jitter_kind() -> None:
    """The rule module declares its kinds, the new one included, so `tracer check` lists them."""
    assert "jitter-task-preemption" in KINDS and set(KINDS) <= set(declared_kinds())
    assert {
        "jitter-preemption",
        "jitter-contention",
        "jitter-more-work",
        "jitter-warm-up",
        "jitter-unexplained",
    } <= set(KINDS)


def test_tracer_budget_shows_the_jitter_settings(tmp_path: Path, run_cli: Any) -> None:
    """`tracer budget` prints the model's jitter thresholds and the data-dependent layers."""
    path = tmp_path / "b.toml"
    path.write_text(
        "[model]\njitter_threshold_pct = 25\n\n"
        + DATA_DEPENDENT_BUDGET.replace("index = 1\n", 'index = 1\nname = "detect"\n')
    )
    done = run_cli("budget", path)
    assert done.code == 0 and "jitter: threshold 25%\n" in done.out
    assert "data-dependent (their jitter is information): detect\n" in done.out


def test_report_tasks_section_of_a_freertos_itm_trace(run_cli: Any) -> None:
    """A recorded FreeRTOS trace of another firmware (the Novakov corpus): the report's tasks
    section gives every task's share, which add up to 1, in the trace's own time unit, with the
    slice count of the lane; the text says the unit."""
    from tracer.pipeline.capture import decode_capture

    path = Path(__file__).resolve().parent / "data" / "corpus" / "novakov_rtos_trace" / "mutex_demo.trace"
    tl = decode_capture(path).timeline
    report = json.loads(run_cli("report", path, "--format", "json").out)
    tasks = report["tasks"]
    assert tasks["slices"] == len(tl.tasks) and tasks["incomplete"] == 0 and tasks["by_layer"] == []
    assert tasks["time"] == tl.labels["tasks"] and "local-timestamp ticks" in tasks["time"]
    assert {t["name"] for t in tasks["by_task"]} == set(tl.task_names.values())
    assert sum(t["share"] for t in tasks["by_task"]) == pytest.approx(1.0, abs=1e-5)
    assert sum(t["slices"] for t in tasks["by_task"]) == len(tl.tasks)
    assert tasks["by_task"][0]["name"] == "IDLE"
    text = run_cli("report", path).out
    assert f"tasks       {len(tl.tasks)} task slice(s); task times are ITM local-timestamp ticks" in text
    assert "ticks in" in text
