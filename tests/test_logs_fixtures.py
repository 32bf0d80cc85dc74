"""Every fixture log (tests/data/logs, real published output) yields its numbers."""

from __future__ import annotations

from pathlib import Path

import pytest
from timeline_views import inference_view

from tracer.base.timeline import AllocationFailure, Engine
from tracer.telemetry.logs import is_text_log, read_log

LOGS = Path(__file__).parent / "data" / "logs"
LOG_FILES = sorted(p for p in LOGS.rglob("*") if p.suffix in (".log", ".txt"))


def test_every_fixture_is_covered() -> None:
    """Each log file in the folder has its own test below (guards against a file left untested)."""
    covered = {
        "executorch_arm_fvp_corstone320_u85.log",
        "fvp_telnet_banner.log",
        "mlek_fpga_cpu_profile.log",
        "mlek_img_class_fvp_profile.log",
        "mlek_img_class_model_info.log",
        "mlek_inference_runner_fvp_profile.log",
        "mlek_npu_config_mismatch.log",
        "mlek_startup_ethosu_version.log",
        "mlia_generic_inference_runner_metrics_line.txt",
        "tflm_arena_too_small_cfu_playground.log",
        "tflm_generic_benchmark_corstone300_fvp.log",
        "tflm_recording_allocator_print_allocations.log",
        "arena_50000_too_small.txt",
        "arena_default_too_small.txt",
        "ok_arena_128k.txt",
        "vela_model_no_ethosu_kernel.txt",
        # tests/test_logs_real_formats.py:
        "ethosu_core_platform_mobilenet_v2_fvp.log",
        "mlek_noise_reduction_fvp.log",
        "mlek_kws_asr_fvp.log",
    }
    assert {p.name for p in LOG_FILES} == covered


@pytest.mark.parametrize("path", LOG_FILES, ids=lambda p: p.name)
def test_fixtures_are_text_and_read_without_damage(path: Path) -> None:
    assert is_text_log(path.read_bytes()[:65536])
    timeline = read_log(path)
    assert timeline.loss.damaged_records == 0
    assert len(timeline.console) == timeline.log["lines"] == len(path.read_text().splitlines())
    assert timeline.source == str(path)


MLEK_PROFILES = {
    # file: AXI0 RD, AXI0 WR, AXI1 RD, ACTIVE, IDLE, TOTAL
    "mlek_inference_runner_fvp_profile.log": (9332, 3248, 2219, 33145, 1033, 34178),
    "mlek_img_class_fvp_profile.log": (2468259, 1151319, 432351, 7345741, 431, 7346172),
    "mlek_fpga_cpu_profile.log": (628122, 135087, 62870, 1081007, 626, 1081634),
}


@pytest.mark.parametrize("name", sorted(MLEK_PROFILES))
def test_mlek_pmu_profile(name: str) -> None:
    timeline = read_log(LOGS / name)
    rd0, wr0, rd1, active, idle, total = MLEK_PROFILES[name]
    assert len(timeline.inferences) == 1
    pmu = timeline.pmu_totals[0]
    assert pmu["AXI0_RD_DATA_BEAT_RECEIVED"] == rd0 and pmu["AXI0_WR_DATA_BEAT_WRITTEN"] == wr0
    assert pmu["AXI1_RD_DATA_BEAT_RECEIVED"] == rd1
    assert (pmu["NPU_ACTIVE"], pmu["NPU_IDLE"], pmu["CYCLE"]) == (active, idle, total)
    # TOTAL = ACTIVE + IDLE on the FVP; the FPGA run's numbers are one cycle apart (as printed).
    assert pmu["CYCLE"] - pmu["NPU_ACTIVE"] - pmu["NPU_IDLE"] == (1 if "fpga" in name else 0)
    assert timeline.pmu_units["AXI0_RD_DATA_BEAT_RECEIVED"] == "beats" and timeline.pmu_units["NPU_ACTIVE"] == "cycles"
    assert inference_view(timeline, 0).pmu == pmu
    assert len(timeline.spans) == 0  # a PMU block alone gives no layers


def test_mlek_fpga_cpu_profile_extras() -> None:
    timeline = read_log(LOGS / "mlek_fpga_cpu_profile.log")
    assert timeline.pmu_totals[0]["CPU_ACTIVE"] == 993553 and timeline.pmu_units["CPU_ACTIVE"] == "cycles (approx)"
    assert timeline.pmu_totals[0]["TIME_MS"] == 210 and timeline.pmu_units["TIME_MS"] == "ms"
    assert "CPU_ACTIVE" not in timeline.pmu_events and "NPU_ACTIVE" in timeline.pmu_events


def test_mlek_img_class_reports_one_inference() -> None:
    timeline = read_log(LOGS / "mlek_img_class_fvp_profile.log")
    assert timeline.log["inferences_reported"] == 1 and len(timeline.inferences) == 1


def test_mlek_model_info() -> None:
    timeline = read_log(LOGS / "mlek_img_class_model_info.log")
    assert [(s.used, s.size) for s in timeline.arena] == [(1510004, None)]
    model = timeline.log["model"]
    assert model["input_tensor_bytes"] == [150528] and model["output_tensor_bytes"] == [1001]
    assert model["operator_count"] == 1 and model["operators"] == ["ethos-u"]
    assert timeline.layers[0].op == "ethos-u" and timeline.layers[0].engine is Engine.NPU


def test_mlek_startup_banner() -> None:
    timeline = read_log(LOGS / "mlek_startup_ethosu_version.log")
    assert timeline.clock_hz == 32_000_000 and timeline.clock_source == "log"
    assert timeline.log["cpu"] == {"clock_hz": 32000000, "id": "0x410fd220", "name": "Cortex-M55 r0p0"}
    assert timeline.log["npu"] == {
        "initialised": True,
        "arch": "v1.0.6",
        "driver": "v0.16.0",
        "macs_per_cc": 128,
        "cmd_stream": "v0",
    }
    assert timeline.log["target"] == "Arm Corstone-300 - AN552"


def test_mlek_npu_config_mismatch() -> None:
    timeline = read_log(LOGS / "mlek_npu_config_mismatch.log")
    assert timeline.log["npu_config_mismatch"] == [
        {"field": "macs_per_cc", "npu": 8, "optimizer": 7, "line": 1},
        {"field": "shram_size", "npu": 48, "optimizer": 24, "line": 2},
    ]
    assert [e["text"] for e in timeline.log["errors"]][2:] == ["Invoke failed.", "Inference failed."]
    facts = timeline.log_facts  # the same facts, typed, as the findings read them
    assert [m.field for m in facts.npu_config_mismatches] == ["macs_per_cc", "shram_size"]
    assert [m.to_json() for m in facts.npu_config_mismatches] == timeline.log["npu_config_mismatch"]
    assert [e.to_json() for e in facts.errors] == timeline.log["errors"] and facts.lines == timeline.log["lines"]


def test_mlia_metrics_line() -> None:
    timeline = read_log(LOGS / "mlia_generic_inference_runner_metrics_line.txt")
    assert timeline.pmu_totals == {
        0: {
            "NPU_IDLE": 2,
            "AXI0_RD_DATA_BEAT_RECEIVED": 4,
            "AXI0_WR_DATA_BEAT_WRITTEN": 5,
            "AXI1_RD_DATA_BEAT_RECEIVED": 6,
            "NPU_ACTIVE": 1,
            "CYCLE": 3,
        }
    }


def test_executorch_pmu_report() -> None:
    timeline = read_log(LOGS / "executorch_arm_fvp_corstone320_u85.log")
    assert len(timeline.inferences) == 1
    inference = inference_view(timeline, 0)
    assert (inference.start, inference.end, inference.latency_cycles) == (0, 6925114, 6925114)
    assert [(s.layer, s.cycles) for s in inference.layers] == [(0, 1498202)]
    assert timeline.layers[0].op == "ethos-u" and timeline.layers[0].engine is Engine.NPU
    # The counters are printed before the line naming their events; they get the names.
    assert inference.pmu == {
        "CPU_WAIT_FOR_NPU": 729,
        "CYCLE": 5920305,
        "EXT0_RD_DATA_BEAT_RECEIVED": 359921,
        "EXT1_RD_DATA_BEAT_RECEIVED": 0,
        "EXT0_WR_DATA_BEAT_WRITTEN": 0,
        "NPU_IDLE": 503,
    }
    assert timeline.pmu_units["CPU_WAIT_FOR_NPU"] == "CPU cycles" and timeline.pmu_units["NPU_IDLE"] == "cycles"
    assert timeline.pmu_units["EXT0_RD_DATA_BEAT_RECEIVED"] == "beats"
    et = timeline.log["executorch"]
    assert et["npu_inferences"] == 1 and et["operators_total_cycles"] == 1498202
    assert et["cpu_ratio_pct"] == 99.99 and et["npu_ratio_pct"] == 0.01
    assert et["method_allocator_planned_bytes"] == 752640 and et["model_pte_bytes"] == 4425968
    assert et["temp_allocator_used"] == {"used": 0, "size": 1048576, "free": 1048576}
    assert [(s.used, s.size) for s in timeline.arena] == [(1355722, 62914560)]
    assert timeline.log["per_inference"][0]["operators_total_cycles"] == 1498202


def test_tflm_generic_benchmark() -> None:
    timeline = read_log(LOGS / "tflm_generic_benchmark_corstone300_fvp.log")
    assert len(timeline.inferences) == 1  # 31 operators, no repetition
    inference = inference_view(timeline, 0)
    ticks = [s.cycles for s in inference.layers]
    assert len(ticks) == 31 and ticks[:3] == [224622, 175917, 249561] and ticks[-4:] == [2229, 386, 28, 163]
    # The per-operator ticks add up to LogTicksPerTagCsv's "total number of ticks" printed after them.
    assert sum(ticks) == 2820774
    assert [timeline.layers[i].op for i in (0, 1, 2, 27, 30)] == [
        "DEPTHWISE_CONV_2D",
        "DEPTHWISE_CONV_2D",
        "CONV_2D",
        "AVERAGE_POOL_2D",
        "SOFTMAX",
    ]
    assert all(la.engine is Engine.CPU for la in timeline.layers.values())
    assert (inference.input_crc, inference.output_crc) == (0x14F6A510, 0xA4A6A6BE)
    assert inference.start is None  # no runtime line: no latency is invented
    setup, ops = timeline.log["tflm_ticks_per_tag"]
    assert setup["tags"]["tflite::MicroInterpreter::AllocateTensors"] == 363531 and setup["total"] == 371724
    assert ops["tags"] == {
        "DEPTHWISE_CONV_2D": 1009435,
        "CONV_2D": 1817013,
        "AVERAGE_POOL_2D": 2269,
        "RESHAPE": 87,
        "SOFTMAX": 363694,
    }
    assert ops["total"] == 2820774 == sum(ticks)
    assert timeline.log["arena"] == {"total_bytes": 84436, "head_bytes": 55296, "tail_bytes": 29140}
    assert [s.used for s in timeline.arena] == [84436]
    allocations = timeline.log["arena_allocations"]
    assert allocations["Persistent buffer data"] == {"used_bytes": 25872, "requested_bytes": 25704, "count": 90}
    assert len(allocations) == 7
    assert timeline.log["exit_code"] == 0
    fvp = timeline.log["fvp"]
    assert fvp["model"] == "FVP_MPS3_Corstone_SSE_300" and fvp["simulated_time"] == 2.958458
    assert fvp["cpu0"] == {"mips": 36.57, "instructions": 73961463} and fvp["memory_highwater_mark"] == 0x11935000
    assert "model estimate" in timeline.labels["cpu_cycles"] and "reconstructed" in timeline.labels["time"]


def test_tflm_recording_allocator() -> None:
    timeline = read_log(LOGS / "tflm_recording_allocator_print_allocations.log")
    assert timeline.log["arena"] == {"total_bytes": 9568, "head_bytes": 7744, "tail_bytes": 1824}
    assert [s.used for s in timeline.arena] == [9568]
    allocations = timeline.log["arena_allocations"]
    assert allocations["TfLiteEvalTensor data"] == {
        "used_bytes": 360,
        "requested_bytes": 360,
        "count": 15,
        "unit": "allocations",
    }
    assert allocations["Operator runtime data"] == {
        "used_bytes": 136,
        "requested_bytes": 136,
        "count": 5,
        "unit": "OpData structs",
    }
    assert allocations["NodeAndRegistration struct"]["count"] == 7 and len(allocations) == 6


def test_tflm_host_ok_arena() -> None:
    timeline = read_log(LOGS / "tflm_host" / "ok_arena_128k.txt")
    assert timeline.log["arena"] == {"total_bytes": 51824, "head_bytes": 49152, "tail_bytes": 2672}
    assert timeline.log["arena_allocations"]["Persistent buffer data"]["used_bytes"] == 772


@pytest.mark.parametrize(
    ("name", "failure"),
    [
        ("tflm_host/arena_default_too_small.txt", AllocationFailure("resize buffer", 49152, 40824, 8328, None, 2)),
        ("tflm_host/arena_50000_too_small.txt", AllocationFailure("resize buffer", 49152, 47544, 1608, None, 2)),
    ],
)
def test_arena_too_small(name: str, failure: AllocationFailure) -> None:
    timeline = read_log(LOGS / name)
    assert timeline.allocation_failures == [failure]
    assert failure.requested - failure.available == failure.missing


def test_cfu_playground_tail_memory_failures() -> None:
    timeline = read_log(LOGS / "tflm_arena_too_small_cfu_playground.log")
    assert [(f.kind, f.requested, f.available, f.missing, f.line) for f in timeline.allocation_failures] == [
        ("tail memory", 40, 0, 40, 3),
        ("tail memory", 12, 0, 12, 3),
    ]
    texts = [e["text"] for e in timeline.log["errors"]]
    assert texts[-1] == "AllocateTensors() failed" and len(texts) == 3


def test_missing_ethos_u_kernel() -> None:
    timeline = read_log(LOGS / "tflm_host" / "vela_model_no_ethosu_kernel.txt")
    assert timeline.log["errors"] == [{"line": 2, "text": "Failed to get registration from op code CUSTOM"}]


def test_fvp_banner() -> None:
    timeline = read_log(LOGS / "fvp_telnet_banner.log")
    assert timeline.log["fvp"] == {
        "telnetterminal0_port": 5000,
        "telnetterminal1_port": 5001,
        "telnetterminal2_port": 5002,
        "telnetterminal5_port": 5003,
    }
    assert "model estimate" in timeline.labels["cpu_cycles"] and len(timeline.inferences) == 0
