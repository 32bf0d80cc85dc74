"""Every fixture log through ``tracer report``: its numbers in the report JSON (pmu, memory, layers,
log facts) and its findings (ids, severities, the numbers in the message and the fix)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracer.analysis.findings import budget, engine, firmware, loss, memory, npu

LOGS = Path(__file__).resolve().parent / "data" / "logs"
MINE = {kind for module in (budget, engine, firmware, loss, memory, npu) for kind in module.KINDS}

# file -> the findings (id, severity) the report must hold, exactly
FINDINGS = {
    "executorch_arm_fvp_corstone320_u85.log": [],
    "fvp_telnet_banner.log": [("no-measurements", "warning")],
    "mlek_fpga_cpu_profile.log": [],
    "mlek_img_class_fvp_profile.log": [],
    "mlek_img_class_model_info.log": [],
    "mlek_inference_runner_fvp_profile.log": [],
    "mlek_npu_config_mismatch.log": [("npu-config-mismatch", "error"), ("firmware-error", "info")],
    "mlek_startup_ethosu_version.log": [("no-measurements", "warning")],
    "mlia_generic_inference_runner_metrics_line.txt": [("npu-utilization-low", "warning")],
    "tflm_arena_too_small_cfu_playground.log": [("arena-too-small", "error"), ("firmware-error", "info")],
    "tflm_generic_benchmark_corstone300_fvp.log": [],
    "tflm_recording_allocator_print_allocations.log": [],
    "tflm_host/arena_50000_too_small.txt": [("arena-too-small", "error")],
    "tflm_host/arena_default_too_small.txt": [("arena-too-small", "error")],
    "tflm_host/ok_arena_128k.txt": [],
    "tflm_host/vela_model_no_ethosu_kernel.txt": [("missing-operator-kernel", "error")],
    "ethosu_core_platform_mobilenet_v2_fvp.log": [],
    # The document's "..." leaves out 133 of the 136 "Inference k/136" lines: counted as lost.
    "mlek_noise_reduction_fvp.log": [("capture-loss", "warning")],
    "mlek_kws_asr_fvp.log": [],
}


def report(run_cli, name: str) -> dict:
    """``tracer report LOG --format json``."""
    done = run_cli("report", LOGS / name, "--format", "json")
    assert done.code == 0, done.err
    return json.loads(done.out)


def test_every_fixture_is_listed() -> None:
    """A new fixture log gets its expectations here."""
    found = {str(p.relative_to(LOGS)) for p in LOGS.rglob("*") if p.suffix in (".log", ".txt")}
    assert found == set(FINDINGS)


@pytest.mark.parametrize("name", sorted(FINDINGS))
def test_findings_of_each_log(run_cli, name: str) -> None:
    """Exactly the expected findings, each with a message, evidence and (for problems) a fix."""
    r = report(run_cli, name)
    # Only the kinds of this rule modules: other rules (interrupts, jitter ...) may add theirs.
    got = sorted((f["id"], f["severity"]) for f in r["findings"] if f["id"] in MINE)
    assert got == sorted(FINDINGS[name])
    for f in r["findings"]:
        assert f["message"] and isinstance(f["evidence"], dict)
        if f["severity"] != "info":
            assert f.get("fix"), f["id"]
    text = run_cli("report", LOGS / name).out
    for f in r["findings"]:
        assert f"[{f['severity']}] {f['id']}" in text


def test_mlek_profiles_give_pmu_counters(run_cli) -> None:
    """MLEK's profile blocks become the pmu section with their units and the utilization."""
    r = report(run_cli, "mlek_inference_runner_fvp_profile.log")
    pmu = r["pmu"]
    assert pmu["totals"] == {
        "AXI0_RD_DATA_BEAT_RECEIVED": 9332,
        "AXI0_WR_DATA_BEAT_WRITTEN": 3248,
        "AXI1_RD_DATA_BEAT_RECEIVED": 2219,
        "NPU_ACTIVE": 33145,
        "NPU_IDLE": 1033,
        "CYCLE": 34178,
    }
    assert pmu["per_inference"] == [{"number": 0, "complete": True, "counters": pmu["totals"]}]
    assert pmu["units"]["AXI0_RD_DATA_BEAT_RECEIVED"] == "beats" and pmu["units"]["CYCLE"] == "cycles"
    assert pmu["npu_utilization"] == {"active": 33145, "idle": 1033, "total": 34178, "ratio": round(33145 / 34178, 6)}
    assert pmu["simulated"] is False
    fpga = report(run_cli, "mlek_fpga_cpu_profile.log")["pmu"]["totals"]
    assert fpga["CPU_ACTIVE"] == 993553 and fpga["TIME_MS"] == 210 and fpga["CYCLE"] == 1081634
    img = report(run_cli, "mlek_img_class_fvp_profile.log")["pmu"]["totals"]
    assert (img["NPU_ACTIVE"], img["NPU_IDLE"], img["CYCLE"]) == (7345741, 431, 7346172)


def test_mlia_metrics_line_and_its_utilization_finding(run_cli) -> None:
    """The base64 <metrics> JSON line: counters 1..6, ACTIVE 1 of TOTAL 3 is low utilization."""
    r = report(run_cli, "mlia_generic_inference_runner_metrics_line.txt")
    assert r["pmu"]["totals"] == {
        "NPU_IDLE": 2,
        "AXI0_RD_DATA_BEAT_RECEIVED": 4,
        "AXI0_WR_DATA_BEAT_WRITTEN": 5,
        "AXI1_RD_DATA_BEAT_RECEIVED": 6,
        "NPU_ACTIVE": 1,
        "CYCLE": 3,
    }
    low = r["findings"][0]
    assert low["evidence"]["ratio"] == round(1 / 3, 6) and "33.3%" in low["message"] and low["inferences"] == [0]


def test_executorch_report_carries_its_numbers(run_cli) -> None:
    """ExecuTorch's PMU report named by its event list, the operator layer, allocator pools."""
    r = report(run_cli, "executorch_arm_fvp_corstone320_u85.log")
    assert r["pmu"]["totals"] == {
        "CPU_WAIT_FOR_NPU": 729,
        "CYCLE": 5920305,
        "EXT0_RD_DATA_BEAT_RECEIVED": 359921,
        "EXT1_RD_DATA_BEAT_RECEIVED": 0,
        "EXT0_WR_DATA_BEAT_WRITTEN": 0,
        "NPU_IDLE": 503,
    }
    assert r["pmu"]["npu_utilization"]["active"] == 5920305 - 503
    assert [(la["op"], la["engine"], la["cycles"]["p50"]) for la in r["layers"]] == [("ethos-u", "npu", 1498202)]
    assert r["memory"]["arena"] == {"used": 1355722, "size": 62914560, "planned": None}
    assert r["log"]["executorch"]["method_allocator_planned_bytes"] == 752640
    assert r["log"]["executorch"]["operators_total_cycles"] == 1498202


def test_tflm_benchmark_layers_and_facts(run_cli) -> None:
    """31 operator layers from MicroProfiler::Log, arena parts, the FVP labels the CPU cycles."""
    r = report(run_cli, "tflm_generic_benchmark_corstone300_fvp.log")
    assert len(r["layers"]) == 31
    assert r["layers"][0]["op"] == "DEPTHWISE_CONV_2D" and r["layers"][0]["cycles"]["p50"] == 224622
    assert r["memory"]["arena"]["used"] == 84436
    assert r["log"]["arena"] == {"total_bytes": 84436, "head_bytes": 55296, "tail_bytes": 29140}
    assert "model estimate" in r["capture"]["labels"]["cpu_cycles"]
    assert r["log"]["fvp"]["cpu0"]["instructions"] == 73961463


def test_arena_too_small_gives_the_size_and_the_fixes(run_cli) -> None:
    """Requested, available, missing; the arena to grow with 10-15% headroom; the field's fixes."""
    r = report(run_cli, "tflm_host/arena_50000_too_small.txt")
    f = r["findings"][0]
    assert (f["evidence"]["requested"], f["evidence"]["available"], f["evidence"]["missing"]) == (49152, 47544, 1608)
    assert "1,608 bytes short" in f["message"] and "line 2" in f["message"]
    assert 1608 * 1.10 <= f["evidence"]["grow_by_min"] <= 1608 * 1.10 + 16
    assert 1608 * 1.15 <= f["evidence"]["grow_by_max"] <= 1608 * 1.15 + 16
    for fix in ("_ACTIVATION_BUF_SZ", "--memory-mode=Dedicated_Sram", "linker script", "10-15% headroom"):
        assert fix in f["fix"], fix
    assert r["memory"]["allocation_failures"][0]["missing"] == 1608
    cfu = report(run_cli, "tflm_arena_too_small_cfu_playground.log")["findings"][0]
    assert cfu["evidence"]["kind"] == "tail memory" and cfu["evidence"]["missing"] == 52


def test_config_mismatch_names_the_accelerator(run_cli) -> None:
    """macs_per_cc 8 against 7: 256 MACs per cycle on the NPU, 128 in the compiled model."""
    f = report(run_cli, "mlek_npu_config_mismatch.log")["findings"][0]
    assert f["id"] == "npu-config-mismatch"
    assert "128 MACs/cycle" in f["message"] and "the NPU has 256" in f["message"] and "shram_size" in f["message"]
    assert "ethos-u55-256" in f["fix"] and "--accelerator-config" in f["fix"]
    assert f["evidence"]["lines"] == [1, 2]


def test_memory_only_and_fact_logs(run_cli) -> None:
    """Allocator reports give arena use; the boot banner gives the clock and the NPU's configuration."""
    r = report(run_cli, "tflm_recording_allocator_print_allocations.log")
    assert r["memory"]["arena"]["used"] == 9568 and r["log"]["arena"]["tail_bytes"] == 1824
    assert r["log"]["arena_allocations"]["NodeAndRegistration struct"]["used_bytes"] == 392
    boot = report(run_cli, "mlek_startup_ethosu_version.log")
    assert boot["capture"]["clock_hz"] == 32_000_000
    assert boot["log"]["npu"]["macs_per_cc"] == 128 and boot["log"]["cpu"]["name"] == "Cortex-M55 r0p0"
    info = report(run_cli, "mlek_img_class_model_info.log")
    assert info["memory"]["arena"]["used"] == 1510004 and info["log"]["model"]["operators"] == ["ethos-u"]
    ok = report(run_cli, "tflm_host/ok_arena_128k.txt")
    assert ok["memory"]["arena"]["used"] == 51824 and ok["log"]["arena"]["head_bytes"] == 49152
