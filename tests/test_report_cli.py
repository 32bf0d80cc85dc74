"""``tracer report``: the JSON contract (docs/report.md) on the shipped capture, the text rendering,
the per-inference listing, incomplete inferences left out of the numbers, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from check_streams import write_capture
from telemetry_streams import build_stream, cut

from tracer.capture.reader import open_capture
from tracer.telemetry.wire import RecordType

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "captures" / "demo.trace"
LAYERS = ["conv0", "dw1", "pw2", "dw3", "pw4", "add5", "pool6", "conv7", "gap8", "fc9"]
STATS = {"min", "p50", "p99", "max", "mean", "std"}


def test_json_report_of_the_shipped_capture_has_the_contract_shape(run_cli) -> None:
    """schema_version, capture, inferences, layers, memory, findings, with the contract's fields."""
    done = run_cli("report", DEMO, "--format", "json")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert set(report) >= {"schema_version", "capture", "inferences", "layers", "memory", "findings"}
    assert report["schema_version"] == 1
    capture = report["capture"]
    assert set(capture) >= {"source", "bytes", "duration", "clock_hz", "clock_source", "loss"}
    assert capture["source"].startswith("qemu://mps3-an547") and capture["clock_hz"] == 32_000_000
    with open_capture(DEMO) as reader:
        stream_bytes = len(reader.read_stream())
    assert capture["clock_source"] == "systick" and capture["bytes"] == stream_bytes
    assert isinstance(capture["duration"], float) and capture["duration"] > 0
    assert capture["loss"] == {
        "overflows": 0,
        "gaps": 0,
        "lost_records": 0,
        "damaged_records": 0,
        "orphan_packets": 0,
        "desyncs": 0,
    }
    assert capture["labels"]["npu_pmu"] == "simulated"
    inferences = report["inferences"]
    assert inferences["count"] == 20 and inferences["complete"] == 20
    assert set(inferences["latency_cycles"]) >= {"min", "p50", "p99", "max"}
    lat = inferences["latency_cycles"]
    assert lat["min"] <= lat["p50"] <= lat["p99"] <= lat["max"]
    layers = report["layers"]
    assert [layer["name"] for layer in layers] == LAYERS and [layer["index"] for layer in layers] == list(range(10))
    for layer in layers:
        assert set(layer) >= {"index", "name", "op", "engine", "count", "cycles", "predicted_cycles", "ratio"}
        assert layer["engine"] in ("npu", "cpu") and layer["count"] == 20
        assert set(layer["cycles"]) == STATS
        assert layer["cycles"]["min"] <= layer["cycles"]["p50"] <= layer["cycles"]["p99"] <= layer["cycles"]["max"]
        assert layer["predicted_cycles"] is None and layer["ratio"] is None
    assert sum(layer["cycles"]["mean"] for layer in layers) < lat["mean"]  # markers outside layers
    memory = report["memory"]
    assert memory["arena"] == {"used": 13312, "size": 16384, "planned": None}
    assert [(s["name"], s["size"]) for s in memory["stacks"]] == [("main", 16384), ("handler", 4096)]
    assert all(0 < s["high_water"] < s["size"] and s["canary_ok"] for s in memory["stacks"])
    assert report["findings"] == []


def test_text_report_has_the_same_content(run_cli) -> None:
    """Every layer, latency, memory, loss and the labels, readable in a terminal."""
    done = run_cli("report", DEMO)
    assert done.code == 0, done.err
    text = done.out
    report = json.loads(run_cli("report", DEMO, "--format", "json").out)
    for layer in report["layers"]:
        line = next(ln for ln in text.splitlines() if f" {layer['name']} " in ln and layer["op"] in ln)
        assert f"{layer['cycles']['p50']:,}" in line and f"{layer['cycles']['max']:,}" in line
    assert f"p50 {report['inferences']['latency_cycles']['p50']:,}" in text
    assert "20 (20 complete, 0 incomplete)" in text
    assert "used 13,312 of 16,384 bytes" in text and "stack       main: high-water" in text
    assert "loss        none" in text and "SIMULATED" in text and "emulated" in text
    assert "findings    none" in text


def test_per_inference_lists_every_layer_of_every_inference(run_cli) -> None:
    """JSON per_inference: 20 inferences x 10 layers with cycles; text: one row per inference."""
    report = json.loads(run_cli("report", DEMO, "--format", "json", "--per-inference").out)
    listing = report["per_inference"]
    assert [i["number"] for i in listing] == list(range(20))
    for inference in listing:
        assert [s["index"] for s in inference["layers"]] == list(range(10))
        assert inference["latency_cycles"] > sum(s["cycles"] for s in inference["layers"]) > 0
        assert inference["complete"] and inference["input_crc"] is not None
    npu = listing[0]["layers"][0]
    assert npu["pmu"]["NPU_ACTIVE"] > 0
    text = run_cli("report", DEMO, "--per-inference").out
    rows = [ln.split() for ln in text.splitlines() if ln.strip() and ln.split()[0].isdigit() and "ok" in ln.split()]
    assert len(rows) == 20 and all(len(r) == 13 for r in rows)


def test_incomplete_inferences_are_counted_but_not_averaged(tmp_path: Path, run_cli) -> None:
    """A damaged inference shows in count and in the reasons; its spans are not in the statistics."""
    stream = build_stream(inferences=6, layers=3)
    record = stream.records_of(2, RecordType.LAYER_END)[2]
    path = write_capture(tmp_path / "lossy.trace", cut(stream.data, *stream.record_bytes(record)))
    report = json.loads(run_cli("report", path, "--format", "json").out)
    assert report["inferences"]["count"] == 6 and report["inferences"]["complete"] == 5
    assert report["inferences"]["incomplete"] == [
        {"number": 2, "problems": ["1 record(s) lost (sequence gap)", "layer begin/end records do not pair up"]}
    ]
    assert report["capture"]["loss"]["lost_records"] == 1
    layer0 = report["layers"][0]
    assert layer0["count"] == 5 and layer0["excluded"] == 1
    truth = sorted(e - s for t in stream.truth if t.number != 2 for layer, s, e in t.spans if layer == 0)
    assert layer0["cycles"]["min"] == truth[0] and layer0["cycles"]["max"] == truth[-1]
    assert layer0["cycles"]["mean"] == pytest.approx(sum(truth) / len(truth), abs=1e-3)
    text = run_cli("report", path).out
    assert "incomplete  #2: 1 record(s) lost (sequence gap)" in text and "1 lost records" in text


def test_output_file(tmp_path: Path, run_cli) -> None:
    """-o writes the report to a file, nothing on stdout."""
    out = tmp_path / "report.json"
    done = run_cli("report", DEMO, "--format", "json", "-o", out)
    assert done.code == 0 and done.out == ""
    assert json.loads(out.read_text())["inferences"]["count"] == 20


def test_missing_capture_exits_3(tmp_path: Path, run_cli) -> None:
    """No file: exit 3 with the path in the message, no traceback."""
    done = run_cli("report", tmp_path / "nope.trace")
    assert done.code == 3 and "nope.trace" in done.err and "Traceback" not in done.err


def test_capture_without_telemetry_warns_and_reports_nothing(tmp_path: Path, run_cli) -> None:
    """An empty or foreign capture is not an error: the report is empty and a warning says why."""
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    done = run_cli("report", empty, "--format", "json")
    assert done.code == 0 and "no telemetry records" in done.err
    report = json.loads(done.out)
    assert report["inferences"]["count"] == 0 and report["layers"] == []
    assert report["inferences"]["latency_cycles"] is None
    text = run_cli("report", empty)
    assert text.code == 0 and "no complete inference" in text.out


def test_text_findings_give_their_evidence_in_words_not_python_objects(run_cli) -> None:
    """Evidence lines read ``name value`` (None as "-"), never a printed dict; nested lists are counted."""
    done = run_cli("report", DEMO, "--budget", ROOT / "captures" / "demo_budget.toml")
    assert done.code == 0, done.err
    evidence = [line for line in done.out.splitlines() if line.strip().startswith("evidence:")]
    assert evidence, done.out
    text = "\n".join(evidence)
    assert "{'" not in text and "None" not in text and "': " not in text
    assert all(len(line) <= 110 for line in done.out.splitlines() if "evidence:" in line)
