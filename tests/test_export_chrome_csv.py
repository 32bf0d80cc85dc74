"""``tracer export --format chrome-json`` (legacy trace-event JSON: X events in microseconds, never
overlapping on a thread) and ``--format csv`` (one row per layer execution), and ``raw`` kept."""

from __future__ import annotations

import csv
import itertools
import json
from collections import defaultdict
from pathlib import Path

from check_streams import LayerSpec, encode_model, write_capture

from tracer.pipeline.load import load_timeline
from tracer.telemetry.wire import RecordType

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "captures" / "demo.trace"
DEMO_BUDGET = ROOT / "captures" / "demo_budget.toml"


def test_chrome_json_of_the_demo(run_cli, tmp_path: Path) -> None:
    """Threads per track, X events with ts/dur in us from cycles, no overlap on a thread."""
    out = tmp_path / "demo.json"
    assert run_cli("export", DEMO, "--format", "chrome-json", "-o", out).code == 0
    doc = json.loads(out.read_text())
    events = doc["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert list(threads.values())[:3] == ["Inferences", "CPU", "NPU"]
    complete = [e for e in events if e["ph"] == "X"]
    by_thread: dict[str, list[dict]] = defaultdict(list)
    for e in complete:
        by_thread[threads[e["tid"]]].append(e)
    assert len(by_thread["CPU"]) == 80 and len(by_thread["NPU"]) == 120 and len(by_thread["Inferences"]) == 20
    for name, items in by_thread.items():
        items.sort(key=lambda e: e["ts"])
        for a, b in itertools.pairwise(items):
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-9, (name, a["name"], b["name"])
    timeline, _ = load_timeline(DEMO)
    first = min(by_thread["NPU"], key=lambda e: e["ts"])
    start = int(timeline.spans.start[0])
    assert first["name"] == "conv0" and first["ts"] == round(start / 32, 3)  # 32 cycles per us at 32 MHz
    cycles0 = int(timeline.spans.end[0]) - start
    assert first["dur"] == round(cycles0 / 32, 3) and first["args"]["cycles"] == cycles0
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert "Arena used" in counters and "NPU PMU NPU_ACTIVE (simulated)" in counters
    assert doc["otherData"]["clock_hz"] == 32_000_000 and doc["displayTimeUnit"] == "ns"


def test_csv_rows_with_budget(run_cli, tmp_path: Path, demo_budget: dict) -> None:
    """One row per layer execution with cycles, predicted and ratio."""
    out = tmp_path / "layers.csv"
    done = run_cli("export", DEMO, "--format", "csv", "--budget", DEMO_BUDGET, "-o", out)
    assert done.code == 0 and "200 layer executions" in done.err
    rows = list(csv.DictReader(out.open()))
    assert list(rows[0]) == [
        "inference",
        "layer",
        "name",
        "op",
        "engine",
        "start",
        "end",
        "cycles",
        "complete",
        "predicted",
        "ratio",
    ]
    assert len(rows) == 200
    assert [r["name"] for r in rows[:10]] == [
        "conv0",
        "dw1",
        "pw2",
        "dw3",
        "pw4",
        "add5",
        "pool6",
        "conv7",
        "gap8",
        "fc9",
    ]
    for r in rows:
        assert int(r["end"]) - int(r["start"]) == int(r["cycles"]) and r["complete"] == "1"
        assert float(r["ratio"]) == round(int(r["cycles"]) / float(r["predicted"]), 4)
    conv0 = next(la["cycles"] for la in demo_budget["layer"] if la["name"] == "conv0")
    assert rows[0]["predicted"] == str(float(conv0)) and rows[0]["engine"] == "npu" and rows[5]["engine"] == "cpu"
    assert sorted({int(r["inference"]) for r in rows}) == list(range(20))


def test_csv_marks_incomplete_executions_and_needs_no_budget(run_cli, tmp_path: Path) -> None:
    """An inference that lost a record: its rows say complete 0; no budget: predicted empty."""
    enc = encode_model([LayerSpec("a", "ADD", False, 300), LayerSpec("b", "ADD", False, 400)], inferences=4)
    victim = next(r for r in enc.records if r.inference == 1 and r.type == RecordType.INFERENCE_END)
    data = bytes(enc.out)
    capture = write_capture(tmp_path / "c.trace", data[: victim.offset] + data[victim.offset + victim.length :])
    out = tmp_path / "c.csv"
    assert run_cli("export", capture, "--format", "csv", "-o", out).code == 0
    rows = list(csv.DictReader(out.open()))
    assert {(r["inference"], r["complete"]) for r in rows} == {("0", "1"), ("1", "0"), ("2", "1"), ("3", "1")}
    assert all(r["predicted"] == "" and r["ratio"] == "" for r in rows)


def test_raw_still_copies_the_stream(run_cli, tmp_path: Path) -> None:
    """``--format raw`` writes the stream bytes exactly."""
    from tracer.capture.reader import open_capture

    out = tmp_path / "demo.swo"
    assert run_cli("export", DEMO, "--format", "raw", "-o", out).code == 0
    with open_capture(DEMO) as reader:
        assert out.read_bytes() == reader.read_stream()


def test_export_errors(run_cli, tmp_path: Path) -> None:
    """Unreadable input 3, bad budget 2, unknown format 2."""
    assert run_cli("export", tmp_path / "nope.trace", "--format", "perfetto", "-o", tmp_path / "x").code == 3
    bad = tmp_path / "b.toml"
    bad.write_text("[[layer]]\ncycles = 'many'\n")
    assert run_cli("export", DEMO, "--format", "csv", "--budget", bad, "-o", tmp_path / "x.csv").code == 2
    assert run_cli("export", DEMO, "--format", "svg", "-o", tmp_path / "x").code == 2
