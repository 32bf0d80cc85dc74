"""Inputs that cannot hurt (issue 26): each class of hostile input ends as the exit-code contract
says (a message, an exit code of the contract), within the fuzzing bounds of time and memory,
never a traceback. The inputs are built with the fuzz harness's structure-aware generators
(``tests/fuzz_hostile.py``): valid checksums and framing, hostile meaning.

Each test names the root fix it checks; run against the code before it, each fails (a traceback,
a timeout past the bound, or a wrong answer).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import fuzz_hostile
import pytest
from conftest import require_tools
from fuzzing import DATA, DEMO, Case, build_elf, problems, run_case
from itm_encoder import tpiu_frames
from telemetry_encoder import TelemetryEncoder

from tracer.budget import load_budget
from tracer.decode import tpiu
from tracer.elf.image import read_elf
from tracer.elf.inlines import read_inlined_ranges
from tracer.errors import UsageError
from tracer.limits import InputError
from tracer.pipeline.load import load_timeline
from tracer.telemetry.wire import TimeSource
from tracer.values import ascii_int, is_ascii_digits, whole, whole_list

MAX_SECONDS = 20.0  # the fuzz unit test's bound (benchmarks/fuzz_campaign.py: 30 s)
MAX_RSS_GROWTH_MB = 512.0


def keeps_the_contract(tmp_path: Path, data: bytes, argv: list[str], codes: set[int], fmt: str = "capture") -> str:
    """Run ``tracer ARGV`` on ``data`` in-process under the fuzz harness's bounds; return stderr."""
    import contextlib
    import io

    case = Case(0, fmt, "hostile", [], data, argv)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        outcome = run_case(case, tmp_path, timeout=MAX_SECONDS * 2)
    found = problems(outcome, MAX_SECONDS, MAX_RSS_GROWTH_MB)
    assert not found, f"{found}\n{outcome.error}"
    assert outcome.code in codes, outcome.code
    return outcome.error + err.getvalue()


def report_stderr(tmp_path: Path, data: bytes, codes: frozenset[int] = frozenset({0})) -> str:
    """``tracer report`` of a capture; its warnings and errors (the harness keeps stderr)."""
    path = tmp_path / "in.trace"
    path.write_bytes(data)
    import contextlib
    import io

    from tracer.cli.main import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["report", str(path), "--format", "json", "-o", str(tmp_path / "out.json")])
    assert code in codes, (code, err.getvalue())
    return err.getvalue()


# -- 1. fields of the wrong type or size in event and metadata chunks ------------------------------
@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("counters", [["1", "x"]] * 10, "'counters'[0][0] is '1'"),
        ("qread", 5, "'qread' is 5: expected a list"),
        ("cyccnt", [2**70] * 10, "'cyccnt'[0] is 1180591620717411303424"),
        ("status", [1], "'status' has 1 items: expected 10"),
        ("host_time", ["now"] * 10, "'host_time'[0] is 'now'"),
    ],
)
def test_note_fields_of_the_wrong_type_or_size_are_left_out_with_a_warning(
    tmp_path: Path, field: str, value: object, said: str
) -> None:
    """Root fix: capture notes of known kinds are checked as read (tracer/capture/notes.py)."""
    stream, starts = fuzz_hostile.dwt_stream()
    notes = fuzz_hostile.npu_notes(starts[0], 10)
    notes[0][field] = value
    err = report_stderr(tmp_path, fuzz_hostile.capture(stream, notes))
    assert "event chunk at byte" in err and said in err and "Traceback" not in err


def test_valid_notes_are_still_placed(tmp_path: Path) -> None:
    """The check keeps what the recorder writes: the same samples, untouched, are placed."""
    stream, starts = fuzz_hostile.dwt_stream()
    err = report_stderr(tmp_path, fuzz_hostile.capture(stream, fuzz_hostile.npu_notes(starts[0], 10)))
    assert "event chunk" not in err and "left out" not in err


def test_typed_values_refuse_what_numpy_and_int_would_raise_on() -> None:
    """tracer/values.py: ASCII digits only, 64-bit bounds, types, lengths."""
    assert not is_ascii_digits("²") and not is_ascii_digits("٣") and is_ascii_digits("0123")
    assert ascii_int("0x1F", "x") == 31 and ascii_int(" 42 ", "x") == 42
    for text in ("²", "4²", "", "0x", "1" * 41):
        with pytest.raises(InputError):
            ascii_int(text, "x")
    with pytest.raises(InputError, match="from 0 to 18,446,744,073,709,551,615"):
        whole(2**64, "cyccnt")
    for value in (True, 1.0, "1", None):
        with pytest.raises(InputError):
            whole(value, "x")
    with pytest.raises(InputError, match="has 1 items: expected 2"):
        whole_list([1], "status", length=2)


def test_a_large_metadata_patched_thousands_of_times_is_read_in_bounds(tmp_path: Path) -> None:
    """Root fix: a metadata patch costs what the patch holds (no deep copy of the metadata)."""
    stream, _ = fuzz_hostile.dwt_stream()
    big = {f"extra{k}": list(range(10)) for k in range(3000)}
    data = fuzz_hostile.capture(stream, [], [big] + [{"notes": "x"}] * 3000)
    keeps_the_contract(tmp_path, data, ["report", "{input}", "--format", "json", "-o", "{out}"], {0})
    from tracer.capture.metadata import CaptureMetadata

    meta = CaptureMetadata.from_json(big)
    assert meta.merged({"notes": "y"}).extra is meta.extra  # shared, not copied


# -- 2. sizes taken from the input ----------------------------------------------------------------
def test_inference_numbers_that_jump_by_2_20_make_bounded_rows(tmp_path: Path, kernels: str) -> None:
    """Root fix: rows made for inferences lost entirely are bounded per stream (MAX_LOST_ROWS_TOTAL),
    in both kernels; the rest are counted."""
    from tracer.telemetry.kernel import MAX_LOST_ROWS_TOTAL

    enc = TelemetryEncoder()
    enc.target_info(1_000, 100_000_000, TimeSource.DWT)
    t = 1_000
    for k in range(400):
        t += 1_000
        enc.inference_begin(t, number=k << 20, sync=False)
        enc.inference_end(t + 500, number=k << 20)
    path = tmp_path / "jumps.trace"
    path.write_bytes(fuzz_hostile.capture(bytes(enc)))
    timeline, _ = load_timeline(str(path))
    assert len(timeline.inferences) <= MAX_LOST_ROWS_TOTAL + 400
    assert timeline.stream is not None
    made = len(timeline.inferences) - 400
    assert made + timeline.stream.inferences_lost_without_row == 399 * ((1 << 20) - 1)


def test_a_4_gib_npu_buffer_is_checked_exactly_in_bounded_memory(tmp_path: Path) -> None:
    """Root fix: the coherency checks keep a value per segment of the events, not per cache line."""
    enc = TelemetryEncoder()
    t = 1_000
    enc.target_info(t, 100_000_000, TimeSource.DWT)
    enc.layer_info(t + 1, 0, 1, "ethos-u", "job")
    for _ in range(2):
        t += 100_000
        enc.inference_begin(t)
        enc.cpu_write(t + 10, 0x100, 64)
        enc.layer_begin(t + 100, 0, 1)
        enc.npu_job_begin(t + 101, 0)
        enc.npu_buffer(t + 102, 0, 0, 0, 0xFFFF_FFFF)
        enc.npu_job_end(t + 200, 0)
        enc.layer_end(t + 10_100, 0)
        enc.inference_end(t + 10_200)
    data = fuzz_hostile.capture(bytes(enc))
    keeps_the_contract(tmp_path, data, ["report", "{input}", "--format", "json", "-o", "{out}"], {0})
    report = json.loads((tmp_path / "out").read_text())
    (clean,) = [f for f in report["findings"] if f["id"] == "coherency-missing-clean"]
    example = clean["evidence"]["examples"][0]
    assert example["uncleaned_bytes"] == 64 and example["uncleaned"] == ["0x00000100..0x00000140"]


@pytest.fixture(scope="module")
def debug_elf(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """tests/data/elf/tiny.c built with DWARF (-g)."""
    require_tools("arm-none-eabi-gcc")
    built = build_elf(tmp_path_factory.mktemp("elf"), debug=True)
    assert built is not None
    return built.read_bytes()


@pytest.mark.parametrize(
    ("choice", "said"),
    [
        (0, "inflates to"),  # SHF_COMPRESSED declaring up to 4 GiB
        (1, "no bits in the file"),
        (2, "DWARF"),  # an address size of neither 4 nor 8
        (3, "once decompressed"),  # a .zdebug bomb
    ],
)
def test_elf_sections_that_lie_are_refused_before_they_inflate(
    tmp_path: Path, debug_elf: bytes, choice: int, said: str
) -> None:
    """Root fix: every section pyelftools may read is checked first (tracer/elf/image.py
    checked_elf), decompression capped before it inflates, one list of pyelftools' errors."""

    class Pick(random.Random):
        def randrange(self, *args: int) -> int:  # the generator's choice of lie
            return choice if args == (4,) else super().randrange(*args)

        def choice(self, seq):  # the largest sizes, the section with DWARF units
            if ".debug_info" in seq:
                return ".debug_info"
            return max(seq) if all(isinstance(x, int) for x in seq) else seq[0]

    data = fuzz_hostile.elf_sections(Pick(1), debug_elf)
    trace = tmp_path / "t.swo"
    trace.write_bytes(b"\x17\x00\x00\x00\x08" * 10)
    err = keeps_the_contract(tmp_path, data, ["report", str(trace), "--elf", "{input}", "-o", "{out}"], {2}, fmt="elf")
    assert "Traceback" not in err
    with pytest.raises(UsageError, match=said):
        read_elf(data)
        read_inlined_ranges(data)


# -- 3. work that grows faster than the input -----------------------------------------------------
def test_probe_samples_against_far_away_layers_finish(tmp_path: Path) -> None:
    """Root fix: only the counts of wraps that can place a sample are scored (probe_samples.py)."""
    stream, starts = fuzz_hostile.dwt_stream(far=2**60, inferences=2)
    data = fuzz_hostile.capture(stream, fuzz_hostile.npu_notes(starts[0], 50))
    keeps_the_contract(tmp_path, data, ["report", "{input}", "--format", "json", "-o", "{out}"], {0})


def test_probe_samples_are_still_placed_after_wraps(tmp_path: Path) -> None:
    """The candidates include the right one: samples 5 wraps into the time line are placed."""
    stream, starts = fuzz_hostile.dwt_stream(wraps=5)
    err = report_stderr(tmp_path, fuzz_hostile.capture(stream, fuzz_hostile.npu_notes(starts[0], 50)))
    assert "left out" not in err


def test_an_etdump_whose_tables_share_offsets_is_refused(tmp_path: Path) -> None:
    """Root fix: all vectors together reach at most a word's worth of elements, and events are
    paired by start time within a budget (telemetry/etdump/reader.py)."""

    class Big(random.Random):
        def choice(self, seq):
            return max(seq) if all(isinstance(x, (int, float)) for x in seq) else seq[0]

    data = fuzz_hostile.shared_etdump(Big(2), b"")
    path = tmp_path / "in.etdp"
    path.write_bytes(data)
    keeps_the_contract(tmp_path, data, ["report", "{input}", "-o", "{out}"], {3}, fmt="etdump")
    from tracer.errors import CaptureError
    from tracer.telemetry.etdump import read_etdump

    with pytest.raises(CaptureError, match=r"share offsets|overlap far more"):
        read_etdump(data)


def test_a_toml_budget_larger_than_any_model_is_refused_before_parsing(tmp_path: Path) -> None:
    """Root fix: TOML budgets at most 1 Mi characters and 10,000 [[layer]] tables, checked first."""
    layers = "".join(f'[[layer]]\nindex = {i}\nname = "l{i}"\ncycles = 1000\n' for i in range(10_001))
    path = tmp_path / "big.toml"
    path.write_text('[model]\nname = "m"\n' + layers)
    with pytest.raises(UsageError, match="more than 10,000"):
        load_budget([path])
    path.write_text('[model]\nname = "m"\na = [' + "1," * 600_000 + "]\n")
    with pytest.raises(UsageError, match="a TOML budget has at most"):
        load_budget([path])


# -- 4. digits that are not ASCII ------------------------------------------------------------------
def test_unicode_digits_in_a_vela_debug_database_are_a_located_error(tmp_path: Path) -> None:
    """Root fix: ids are ASCII digits (values.is_ascii_digits), not whatever str.isdigit() takes."""
    folder = DATA / "vela" / "out_u55-128_regor"
    text = (folder / "tiny_int8_debug.xml").read_text()
    bad = text.replace('"ext_key"\n1,', '"ext_key"\n²,', 1)
    assert bad != text
    path = tmp_path / "tiny_int8_debug.xml"
    path.write_text(bad)
    with pytest.raises(UsageError, match=r"tiny_int8_debug\.xml:\d+"):
        load_budget([folder / "tiny_int8_per-layer.csv", path])


def test_unicode_digits_in_an_mlek_log_are_not_numbers(tmp_path: Path, run_cli) -> None:
    """The MLEK version line's MACs/cc: '²' is text, not a number int() refuses."""
    log = (DATA / "logs" / "mlek_startup_ethosu_version.log").read_text()
    assert "MACs/cc:    128" in log
    path = tmp_path / "mlek.log"
    path.write_text(log.replace("MACs/cc:    128", "MACs/cc:    ²", 1))
    result = run_cli("report", path, "--format", "json")
    assert result.code in (0, 3) and "Traceback" not in result.err


def test_long_runs_of_unicode_digits_in_logs_are_bounded(tmp_path: Path, run_cli) -> None:
    """int() refuses 4,300 digits of any script: runs past 40 decimal digits are bounded."""
    log = (DATA / "logs" / "mlek_startup_ethosu_version.log").read_text()
    path = tmp_path / "long.log"
    path.write_text(log.replace("MACs/cc:    128", "MACs/cc:    " + "٣" * 5000, 1))
    result = run_cli("report", path, "--format", "json")
    assert result.code in (0, 3) and "Traceback" not in result.err


# -- 5. Vela's console output as Vela prints it ----------------------------------------------------
SLOW = DATA / "vela" / "out_u55-32_slow-clock.stdout.txt"


def test_vela_console_output_with_padded_numbers_is_read() -> None:
    """Root fix: any run of spaces between Vela's numbers and units (budget/vela_stdout.py)."""
    assert "18.22 ms,   54.88 inferences/s" in SLOW.read_text()
    budget = load_budget([SLOW])
    assert budget.model.clock_hz == 12_000_000
    assert budget.model.cycles_total == 218_642  # Vela's own total in the same file
    assert budget.model.details["inference_time_s"] == 0.01822
    assert budget.model.details["inferences_per_second"] == 54.88


def test_real_vela_pads_and_tracer_reads_it(tmp_path: Path) -> None:
    """The real Vela (the budget extra) run now with a 12 MHz system configuration prints the padded
    batch line, and tracer reads its console output."""
    vela = Path(sys.executable).with_name("vela")
    found = str(vela) if vela.exists() else shutil.which("vela")
    assert found, "vela is not installed: pip install -e '.[budget]'"
    import ethosu.vela

    ini = Path(ethosu.vela.__file__).parent.parent / "config_files" / "Arm" / "vela.ini"
    text = ini.read_text()
    start = text.index("[System_Config.Ethos_U55_High_End_Embedded]")
    block = text[start : text.index("\n\n", start)]
    config = tmp_path / "slow.ini"
    config.write_text(
        text
        + "\n"
        + block.replace("Ethos_U55_High_End_Embedded", "Slow_Clock").replace("core_clock=500e6", "core_clock=12e6")
        + "\n"
    )
    model = tmp_path / "tiny_int8.tflite"
    shutil.copyfile(DATA / "vela" / "tiny_int8.tflite", model)
    run = subprocess.run(
        [found, str(model), "--config", str(config), "--accelerator-config", "ethos-u55-32", "--system-config",
         "Slow_Clock", "--memory-mode", "Shared_Sram", "--verbose-performance", "--verbose-cycle-estimate",
         "--output-dir", str(tmp_path / "out")],
        capture_output=True, text=True, check=True, cwd=tmp_path,
    )  # fmt: skip
    out = tmp_path / "vela.stdout.txt"
    out.write_text(run.stdout)
    assert "ms,  " in run.stdout  # Vela's padding, as the issue saw it
    assert load_budget([out]).model.clock_hz == 12_000_000


# -- 6. TPIU frames that repeat their source ID ----------------------------------------------------
def test_frames_that_repeat_their_id_are_detected_as_tpiu(tmp_path: Path, run_cli) -> None:
    """Root fix: repeats of the current ID in byte 0 of a frame are a formatter's habit, not raw
    ITM read as frames (decode/tpiu.py, Run.leading). The framed stream decodes to the very
    packets of the raw ITM it carries."""
    itm = (DATA / "corpus" / "novakov_rtos_trace" / "queue_demo.trace").read_bytes()[:20_000]
    frames, _ = tpiu_frames([(1, b) for b in itm], repeat_id=True)
    framed = b"".join(frames)
    assert all(f[0] == 0x03 for f in frames)  # every frame says its source, ID 1
    assert tpiu.detect(framed[: tpiu.DETECT_WINDOW]) is not None
    (tmp_path / "framed.swo").write_bytes(framed)
    (tmp_path / "raw.swo").write_bytes(itm)
    got = json.loads(run_cli("decode", tmp_path / "framed.swo", "--format", "stats").out)
    want = json.loads(run_cli("decode", tmp_path / "raw.swo", "--format", "stats").out)
    assert got["tpiu"]["frames"] == len(frames)
    assert (got["packets"], got["reserved"], got["itm_bytes"]) == (want["packets"], want["reserved"], len(itm))


def test_raw_itm_is_still_raw_itm() -> None:
    """Every raw ITM file of the corpus still reads as raw ITM (the rule did not widen)."""
    for path in sorted((DATA / "corpus").rglob("*.trace")):
        if "tpiu" not in path.name:
            assert tpiu.detect(path.read_bytes()[: tpiu.DETECT_WINDOW]) is None, path


def test_demo_capture_is_unchanged_by_the_checks(tmp_path: Path) -> None:
    """The shipped capture reads with no new warning (its notes and metadata are the recorder's)."""
    err = report_stderr(tmp_path, DEMO.read_bytes(), frozenset({0, 1}))
    assert "event chunk" not in err and "metadata chunk" not in err
