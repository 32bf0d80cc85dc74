"""ExecuTorch ETDump (``.etdp``) read with ExecuTorch's own schema (generated flatbuffer code).

The fixture is built with the flatbuffers builder from that schema (tests/data/etdump/README.md:
not a device recording); ``tracer report`` reads it by content like every other input."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest
from timeline_views import inference_views

from tracer.base.timeline import Engine
from tracer.errors import CaptureError
from tracer.pipeline.load import load_timeline
from tracer.telemetry.etdump import is_etdump, read_etdump

ETDP = Path(__file__).parent / "data" / "etdump" / "arm_runner_two_inferences.etdp"
_SPEC = importlib.util.spec_from_file_location("make_etdump", ETDP.with_name("make_etdump.py"))
assert _SPEC is not None and _SPEC.loader is not None
_MAKER = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_MAKER)
build, RUNS = _MAKER.build, _MAKER.RUNS


def test_fixture_is_what_the_script_writes() -> None:
    assert ETDP.read_bytes() == build()


def test_inferences_and_layers() -> None:
    timeline = read_etdump(ETDP)
    assert [(i.start, i.end, i.latency_cycles) for i in inference_views(timeline)] == [
        (1_000, 501_000, 500_000),
        (600_000, 1_110_000, 510_000),
    ]
    assert [[(s.layer, s.cycles) for s in i.layers] for i in inference_views(timeline)] == [
        [(0, 10_000), (1, 480_000), (2, 9_500)],
        [(0, 10_200), (1, 490_000), (2, 9_300)],
    ]
    assert [(la.name, la.op, la.engine) for la in timeline.layers.values()] == [
        ("instruction 0", "OPERATOR_CALL", Engine.CPU),
        ("instruction 1", "DELEGATE_CALL", Engine.NPU),
        ("instruction 2", "OPERATOR_CALL", Engine.CPU),
    ]
    assert [(j.start, j.end, j.inference) for j in timeline.npu_jobs] == [(20_000, 480_000, 0), (619_000, 1_089_000, 1)]
    facts = timeline.log["etdump"]
    assert facts["allocations"] == {"method allocator": {"count": 2, "bytes": 752_640 + 1_048_576}}
    assert facts["events"]["+EthosUBackend::execute()NPU"] == {"count": 2, "total_ticks": 460_000 + 470_000}
    assert facts["version"] == 0 and [r["name"] for r in facts["runs"]] == ["Execute", "Execute"]
    assert timeline.clock_hz is None and "pal_current_ticks" in timeline.labels["time"]
    assert len(RUNS) == 2


def test_report_reads_it_by_content(run_cli, tmp_path: Path) -> None:
    """The name does not matter: a renamed .etdp is still an ETDump."""
    renamed = tmp_path / "profile.bin"
    renamed.write_bytes(ETDP.read_bytes())
    timeline, facts = load_timeline(renamed)
    assert facts.kind == "etdump" and len(timeline.inferences) == 2
    done = run_cli("report", renamed, "--format", "json", "--clock", "100M")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert report["inferences"]["count"] == 2 and report["inferences"]["latency_cycles"]["max"] == 510_000
    assert [la["cycles"]["max"] for la in report["layers"]] == [10_200, 490_000, 9_500]
    assert report["log"]["etdump"]["allocations"]["method allocator"]["bytes"] == 1_801_216


def test_not_prefixed_buffer() -> None:
    data = build()
    timeline = read_etdump(data[4:])  # the same flatbuffer without its size prefix
    assert len(timeline.inferences) == 2


def test_every_cut_and_mutation_is_a_timeline_or_a_capture_error() -> None:
    """Cut at every byte and 2000 seeded byte mutations: a timeline or CaptureError, never a traceback."""
    data = build()
    outcomes = {"timeline": 0, "error": 0}
    rng = random.Random(16)
    cases = [data[:n] for n in range(len(data))]
    for _ in range(2000):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            mutated[rng.randrange(12, len(mutated))] = rng.randrange(256)
        cases.append(bytes(mutated))
    for case in cases:
        try:
            read_etdump(case)
            outcomes["timeline"] += 1
        except CaptureError as exc:
            assert str(exc).startswith("<etdump>: ")
            outcomes["error"] += 1
    assert outcomes["error"] >= len(data) - 1 and outcomes["timeline"] > 0


def test_identifier() -> None:
    assert is_etdump(build()[:12]) and not is_etdump(b"\x00" * 12)
    with pytest.raises(CaptureError, match="not an ETDump"):
        read_etdump(b"ED00" + b"\x00" * 20)
