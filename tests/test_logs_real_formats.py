"""Real published logs that the first version read wrong (issue 16): each defect has a test here
that fails on the old reader, on the public files in tests/data/logs (sources in its README)."""

from __future__ import annotations

from pathlib import Path

import pytest
from timeline_views import inference_view

from tracer.base.timeline import Engine
from tracer.telemetry.logs import read_log
from tracer.telemetry.logs.reader import LogReader

LOGS = Path(__file__).parent / "data" / "logs"
MOBILENET = LOGS / "ethosu_core_platform_mobilenet_v2_fvp.log"
NOISE = LOGS / "mlek_noise_reduction_fvp.log"
KWS_ASR = LOGS / "mlek_kws_asr_fvp.log"
JOBS = ["Summer_Bicycle", "POV_cat", "JP_Kyoto_kimono", "Dog_Breeds", "Bonnie_and_Clyde_Movie_Car"]


def _read_text(text: str, name: str = "cut.log"):
    reader = LogReader(name)
    reader.feed_text(text)
    return reader.finish()


def test_core_software_jobs_are_inferences() -> None:
    """5 'Running inference job / Finished running job' pairs are 5 complete inferences (was 0)."""
    timeline = read_log(MOBILENET)
    assert len(timeline.inferences) == 5 and timeline.inferences.complete.all()
    per = timeline.log["per_inference"]
    assert [per[i]["job"] for i in range(5)] == JOBS
    assert [per[i]["arena_used_bytes"] for i in range(5)] == [482348] * 5
    assert [s.used for s in timeline.arena] == [482348] * 5
    assert timeline.log["exit_code"] == 0


def test_core_software_info_prefix_is_taken_off() -> None:
    """ethosu_log.h's LOG_INFO writes 'I: Running inference job: X' (and 'E: ...' for errors)."""
    timeline = _read_text(
        "I: Running inference job: kws\nInference runtime: 1234 cycles\nI: Finished running job: kws\n"
        "I: Running inference job: kws\nE: Invoke failed for inference: job=kws (inference_process.cpp:280)\n"
    )
    assert len(timeline.inferences) == 2
    first, second = inference_view(timeline, 0), inference_view(timeline, 1)
    assert first.complete and first.latency_cycles == 1234
    assert not second.complete and "the log ends inside job 'kws'" in second.problems[0]
    assert timeline.log["errors"][0]["line"] == 5


def test_fvp_stat_rows_with_instance_paths() -> None:
    """'FVP_MPS3_Corstone_SSE_300.cpu0 : 0.03 MIPS ( 5735052 Inst)' is kept (was dropped)."""
    fvp = read_log(MOBILENET).log["fvp"]
    assert fvp["fvp_mps3_corstone_sse_300.cpu0"] == {"mips": 0.03, "instructions": 5735052}
    assert fvp["simulated_time"] == 0.512973 and fvp["statistics_complete"] is True


def test_mlek_inference_k_of_n() -> None:
    """MLEK's 'Inference k/136' lines: 136 inferences (was 1); the 133 the document's '...' left out
    are counted as lost and marked incomplete; the profile after the run is MLEK's mean over it."""
    timeline = read_log(NOISE)
    assert len(timeline.inferences) == 136
    complete = [i for i in range(136) if timeline.inferences.complete[i]]
    assert complete == [0, 1, 135]
    assert timeline.loss.lost_records == 133
    assert inference_view(timeline, 2).problems == ("its 'Inference 3/136' line is not in the log",)
    assert timeline.pmu_totals == {}  # a mean over 136 inferences is no inference's counters
    stats = timeline.pmu_stats
    assert {k: (v.samples, v.mean, v.total) for k, v in stats.items() if k in ("NPU_ACTIVE", "CYCLE")} == {
        "NPU_ACTIVE": (136, 103870.0, None),
        "CYCLE": (136, 104514.0, None),
    }
    assert stats["AXI0_WR_DATA_BEAT_WRITTEN"].mean == 376.0 and stats["AXI1_RD_DATA_BEAT_RECEIVED"].mean == 13911.0


def test_two_models_are_never_mixed() -> None:
    """The KWS block (1 inference) and the ASR block (mean over 2) of MLEK's kws_asr use case stay
    apart: every counter carries its model (was: one counter averaged over both models)."""
    timeline = read_log(KWS_ASR)
    assert len(timeline.inferences) == 3 and timeline.inferences.complete.all()
    assert timeline.log["models"] == {"KWS": [0], "unnamed": [1, 2]}
    assert timeline.pmu_totals == {
        0: {
            "KWS/AXI0_RD_DATA_BEAT_RECEIVED": 132130,
            "KWS/AXI0_WR_DATA_BEAT_WRITTEN": 48252,
            "KWS/AXI1_RD_DATA_BEAT_RECEIVED": 17544,
            "KWS/NPU_ACTIVE": 413814,
            "KWS/NPU_IDLE": 358,
            "KWS/CYCLE": 414172,
        }
    }
    asr = {k: (v.samples, v.mean) for k, v in timeline.pmu_stats.items()}
    assert asr["unnamed/NPU_ACTIVE"] == (2, 30164330.0) and asr["unnamed/CYCLE"] == (2, 30164672.0)
    assert asr["unnamed/AXI0_RD_DATA_BEAT_RECEIVED"] == (2, 8895431.0)
    assert not any(name in ("NPU_ACTIVE", "CYCLE") for name in [*timeline.pmu_units, *timeline.pmu_stats])
    per = timeline.log["per_inference"]
    assert [per[i]["model"] for i in range(3)] == ["KWS", "unnamed", "unnamed"]


def test_one_model_keeps_plain_counter_names() -> None:
    timeline = read_log(LOGS / "mlek_inference_runner_fvp_profile.log")
    assert "models" not in timeline.log and "NPU_ACTIVE" in timeline.pmu_totals[0]


def test_cpu_banner_sets_the_clock() -> None:
    """A 'CPU: <name> @ 50MHz' boot banner sets the clock (was ignored). No public log with this
    banner was found for tests/data; the line shape is the one the trial reported."""
    timeline = _read_text("CPU: Cortex-M55 @ 50MHz\nCONV_2D took 100 ticks (0 ms).\n")
    assert timeline.clock_hz == 50_000_000 and timeline.clock_source == "log"
    assert timeline.log["cpu"]["name"] == "Cortex-M55"
    assert _read_text("CPU: Cortex-M85 @ 480 MHz\n").clock_hz == 480_000_000


def _cut(path: Path, after: str) -> str:
    text = path.read_text()
    return text[: text.index(after) + len(after)]


def test_log_cut_inside_a_job_is_incomplete() -> None:
    """The real log cut after the third job's 'arena_used_bytes' line: job 3 is incomplete, with why."""
    text = _cut(MOBILENET, "Running inference job: JP_Kyoto_kimono")
    text += text[text.index("\nethosu_find_and_reserve_driver") : text.index("arena_used_bytes : 482348") + 26]
    timeline = _read_text(text)
    assert len(timeline.inferences) == 3
    assert timeline.inferences.complete.tolist() == [True, True, False]
    assert inference_view(timeline, 2).problems == (
        "the log ends inside job 'JP_Kyoto_kimono' (no 'Finished running job' line)",
    )


def test_log_cut_inside_a_profile_block_is_incomplete() -> None:
    """The real KWS log cut after 'NPU ACTIVE cycles': the block has no NPU TOTAL, the inference is
    incomplete (was: complete with 4 of 6 counters)."""
    timeline = _read_text(_cut(KWS_ASR, "NPU ACTIVE cycles: 413814\n"))
    assert len(timeline.inferences) == 1 and not timeline.inferences.complete[0]
    assert inference_view(timeline, 0).problems == ("the log ends inside a PMU profile block (no CYCLE)",)


def test_log_cut_during_a_run_is_incomplete() -> None:
    timeline = _read_text(_cut(NOISE, "INFO - Copied 960 bytes to 0x800003d4\n"))
    assert len(timeline.inferences) == 2
    assert timeline.inferences.complete.tolist() == [True, False]
    assert inference_view(timeline, 1).problems == (
        "the log ends during inference 2 of 136 (no results or profile after it)",
    )


def test_cut_second_profile_block_is_compared_with_the_first() -> None:
    timeline = _read_text(_cut(KWS_ASR, "INFO - NPU AXI1_RD_DATA_BEAT_RECEIVED beats: 1740069\n"))
    assert "unnamed/NPU_ACTIVE" not in timeline.pmu_stats  # a cut mean block is not reported as numbers
    assert any("ends inside a PMU profile block" in w["text"] for w in timeline.log["warnings"])


@pytest.mark.parametrize("path", [MOBILENET, NOISE, KWS_ASR], ids=lambda p: p.name)
def test_whole_logs_are_not_cut(path: Path) -> None:
    text = path.read_text()
    assert not any("the log ends" in p for row in _read_text(text).inferences.problems for p in row)


def test_tflm_per_tag_totals_become_layers() -> None:
    """A log holding only LogTicksPerTagCsv() output (the TFLM benchmark's own block): one layer per
    operator type with its total ticks (was: no layer at all, though docs/budgets.md says so)."""
    lines = (LOGS / "tflm_generic_benchmark_corstone300_fvp.log").read_text().splitlines()
    start = max(i for i, ln in enumerate(lines) if ln.startswith('"Unique Tag"'))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith('"total number of ticks"'))
    timeline = _read_text("\n".join(lines[start : end + 1]) + "\n")
    assert len(timeline.inferences) == 1
    inference = inference_view(timeline, 0)
    assert [(timeline.layers[s.layer].op, s.cycles) for s in inference.layers] == [
        ("DEPTHWISE_CONV_2D", 1009435),
        ("CONV_2D", 1817013),
        ("AVERAGE_POOL_2D", 2269),
        ("RESHAPE", 87),
        ("SOFTMAX", 363694),
    ]
    # As printed: these tags add up to 3192498, not the block's "total number of ticks" 2820774 (the
    # SOFTMAX tag is 363531 above its Log() line, the size of the setup block's AllocateTensors tag).
    assert timeline.log["tflm_ticks_per_tag"][0]["total"] == 2820774
    assert all(la.engine is Engine.CPU for la in timeline.layers.values())
    assert "LogTicksPerTagCsv" in timeline.labels["layers"]


def test_per_tag_totals_after_operator_lines_stay_a_summary() -> None:
    timeline = read_log(LOGS / "tflm_generic_benchmark_corstone300_fvp.log")
    assert len(timeline.inferences) == 1 and len(timeline.spans) == 31 and "layers" not in timeline.labels
