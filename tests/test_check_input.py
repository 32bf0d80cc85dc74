"""``tracer check`` does not pass on nothing, and bytes that are not trace are said to be so
(decode and report warn; check fails): docs/check.md, "The input"."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

import pytest
from junitparser import JUnitXml

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "captures" / "demo.trace"
CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
NOT_TRACE = "does not look like ITM/DWT trace"


def _random(tmp_path: Path, size: int = 50_000) -> Path:
    path = tmp_path / "random.bin"
    path.write_bytes(random.Random(7).randbytes(size))
    return path


def _zip(tmp_path: Path) -> Path:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in ("tracer/decode/itm.py", "tracer/decode/tpiu.py", "tracer/capture/reader.py"):
            archive.write(ROOT / name, name)
    path = tmp_path / "sources.zip"
    path.write_bytes(buf.getvalue())
    return path


@pytest.mark.parametrize("what", ["empty", "random", "zip", "cut in the header", "cut in the magic"])
def test_check_does_not_pass_on_nothing(what: str, tmp_path: Path, run_cli) -> None:
    if what == "empty":
        path = tmp_path / "empty.trace"
        path.write_bytes(b"")
    elif what == "random":
        path = _random(tmp_path)
    elif what == "zip":
        path = _zip(tmp_path)
    else:
        blob = DEMO.read_bytes()
        path = tmp_path / "cut.trace"
        path.write_bytes(blob[:40] if what == "cut in the header" else blob[:5])
    result = run_cli("check", path)
    assert result.code == 1, result.out + result.err
    assert "FAIL  measured" in result.out and "nothing measured" in result.out
    assert "check FAILED" in result.out


@pytest.mark.parametrize("make", [_random, _zip], ids=["random", "zip"])
def test_bytes_that_are_not_trace_are_said_to_be_so(make, tmp_path: Path, run_cli) -> None:
    path = make(tmp_path)
    decoded = run_cli("decode", path, "--format", "stats")
    assert decoded.code == 0 and NOT_TRACE in decoded.err, decoded.err
    report = run_cli("report", path)
    assert report.code == 0 and NOT_TRACE in report.err
    check = run_cli("check", path, "--format", "json")
    assert check.code == 1
    import json

    document = json.loads(check.out)
    failed = {c["name"] for c in document["checks"] if not c["passed"]}
    assert {"input looks like trace", "measured"} <= failed


@pytest.mark.parametrize(
    "path",
    [
        DEMO,
        *sorted((CORPUS / "novakov_rtos_trace").glob("*.trace")),
        CORPUS / "sigrok_stm32f105" / "trace_example_swo_tpiu.bin",
        CORPUS / "sigrok_stm32f105" / "trace_example_itm_stream1.bin",
    ],
    ids=lambda p: p.name,
)
def test_real_trace_is_never_doubted(path: Path, run_cli) -> None:
    result = run_cli("decode", path, "--format", "stats")
    assert result.code == 0 and NOT_TRACE not in result.err


def test_the_demo_passes_with_its_input_checks(tmp_path: Path, run_cli) -> None:
    out = tmp_path / "junit.xml"
    result = run_cli("check", DEMO, "--budget", ROOT / "captures" / "demo_budget.toml", "--format", "junit", "-o", out)
    assert result.code == 0, result.err
    suites = {suite.name: suite for suite in JUnitXml.fromfile(str(out))}
    inputs = next(s for name, s in suites.items() if name.startswith("tracer check: input"))
    names = {case.name for case in inputs}
    assert names == {"measured", "input looks like trace", "budget layers measured"}
    text = run_cli("check", DEMO)
    assert text.code == 0
    assert "PASS  measured: 20 inferences" in text.out


def test_a_text_log_that_measured_something_passes(tmp_path: Path, run_cli) -> None:
    log = tmp_path / "run.log"
    log.write_text("CONV_2D took 100 ticks (1 ms).\nADD took 20 ticks (0 ms).\n")
    result = run_cli("check", log)
    assert result.code == 0, result.out
    empty_log = tmp_path / "quiet.log"
    empty_log.write_text("INFO - hello\nINFO - nothing to report\n")
    assert run_cli("check", empty_log).code == 1
