"""ELF images: symbols, IRQ names from the vector table, build ID; ``decode --elf``, ``record --elf``.

The firmware is built in the test from ``tests/data/elf/tiny.c`` with the real
``arm-none-eabi-gcc`` (CI installs it); the expected values come from ``arm-none-eabi-nm`` and
``arm-none-eabi-readelf``, not from our reader.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.base.exceptions import exception_label
from tracer.capture.reader import open_capture
from tracer.elf import open_elf
from tracer.elf.image import read_elf
from tracer.errors import UsageError
from tracer.export.packet_symbols import SymbolResolver

HERE = Path(__file__).parent / "data" / "elf"


@pytest.fixture(scope="module")
def tiny_elf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tiny.elf, built now by the cross compiler."""
    gcc = shutil.which("arm-none-eabi-gcc")
    assert gcc, "arm-none-eabi-gcc is needed (apt-get install gcc-arm-none-eabi; .ci/run installs it)"
    out = tmp_path_factory.mktemp("elf") / "tiny.elf"
    subprocess.run(
        [
            gcc,
            "-mcpu=cortex-m55",
            "-mthumb",
            "-O1",
            "-nostdlib",
            "-ffreestanding",
            "-Wall",
            "-Werror",
            "-T",
            str(HERE / "tiny.ld"),
            "-Wl,--build-id=sha1",
            str(HERE / "tiny.c"),
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    return out


def nm(path: Path) -> dict[str, int]:
    """Symbol addresses as arm-none-eabi-nm prints them."""
    done = subprocess.run(["arm-none-eabi-nm", str(path)], check=True, capture_output=True, text=True)
    return {
        parts[2]: int(parts[0], 16) for parts in (line.split() for line in done.stdout.splitlines()) if len(parts) == 3
    }


def test_build_id_matches_readelf(tiny_elf: Path) -> None:
    notes = subprocess.run(["arm-none-eabi-readelf", "-n", str(tiny_elf)], check=True, capture_output=True, text=True)
    expected = re.search(r"Build ID: ([0-9a-f]+)", notes.stdout).group(1)
    image = open_elf(tiny_elf)
    assert image.build_id == expected
    assert image.identity["elf_build_id"] == expected
    assert image.identity["firmware_hash"].startswith("sha256:")


def test_symbols_match_nm(tiny_elf: Path) -> None:
    image = open_elf(tiny_elf)
    addresses = nm(tiny_elf)
    for name in ("main", "compute_layer", "TIMER0_IRQHandler", "tensor_arena", "arena_used_bytes", "main_stack"):
        assert image.symbol(name) is not None, name
        assert image.symbol(name).address == addresses[name] & ~1, name
    assert image.symbol("tensor_arena").size == 8192
    assert image.symbol("main_stack").size == 256 * 4


def test_pc_resolves_to_function_and_offset(tiny_elf: Path) -> None:
    image = open_elf(tiny_elf)
    main = nm(tiny_elf)["main"] & ~1
    assert image.function_at(main) == ("main", 0)
    assert image.function_at(main + 4) == ("main", 4)
    assert image.function_at(main | 1) == ("main", 0)  # a Thumb address
    assert image.function_at(0x2100_0000 + 0x10_0000) is None  # RAM: no function
    arena = image.symbol("tensor_arena").address
    assert image.object_at(arena + 100) == ("tensor_arena", 100)


def test_irq_names_come_from_the_vector_table(tiny_elf: Path) -> None:
    image = open_elf(tiny_elf)
    assert image.exception_name(16) == "TIMER0_IRQHandler"  # IRQ0
    assert image.exception_name(18) == "UART0_RX_IRQHandler"  # IRQ2
    assert image.exception_name(15) == "SysTick_Handler"
    assert image.exception_name(3) == "HardFault_Handler"
    # Default_Handler serves many vectors: it names none of them; the architecture's name is used.
    assert image.exception_name(17) == "IRQ1"
    assert image.exception_name(2) == "NMI"
    assert image.exception_name(40) == "IRQ24"  # past the table


def test_exception_labels() -> None:
    assert [exception_label(n) for n in (0, 1, 3, 11, 14, 15, 16, 21)] == [
        "Thread",
        "Reset",
        "HardFault",
        "SVCall",
        "PendSV",
        "SysTick",
        "IRQ0",
        "IRQ5",
    ]


def test_read_from_a_pipe(tiny_elf: Path) -> None:
    """An ELF arriving on a non-seekable stream reads the same."""
    proc = subprocess.Popen(["cat", str(tiny_elf)], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    image = read_elf(proc.stdout, name="<pipe>")
    proc.wait()
    assert image.build_id == open_elf(tiny_elf).build_id
    assert image.exception_name(16) == "TIMER0_IRQHandler"


def test_bad_files_give_clear_errors(tmp_path: Path, tiny_elf: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        open_elf(tmp_path / "missing.elf")
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(UsageError, match="not an ELF file"):
        open_elf(text)
    cut = tmp_path / "cut.elf"
    cut.write_bytes(tiny_elf.read_bytes()[:200])
    with pytest.raises(UsageError, match="damaged ELF"):
        open_elf(cut)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_after_the_magic_never_crash(tail: bytes) -> None:
    with contextlib.suppress(UsageError):
        read_elf(b"\x7fELF" + tail)


# -- decode --elf ------------------------------------------------------------------------------
def _pc_and_exception_stream(main: int) -> bytes:
    pc = bytes([0x17]) + (main + 2).to_bytes(4, "little")  # PC sample, 4 bytes
    irq0 = bytes([0x0E, 0x10, 0x10])  # exception 16 entered
    irq1 = bytes([0x0E, 0x11, 0x10])  # exception 17 entered
    ret = bytes([0x0E, 0x10, 0x20])  # exception 16 exited
    return pc + irq0 + irq1 + ret


def test_decode_names_pc_samples_and_irqs(run_cli, tmp_path: Path, tiny_elf: Path) -> None:
    main = nm(tiny_elf)["main"] & ~1
    raw = tmp_path / "swo.bin"
    raw.write_bytes(_pc_and_exception_stream(main))
    text = run_cli("decode", raw, "--elf", tiny_elf)
    assert text.code == 0, text.err
    lines = text.out.splitlines()
    assert "pc=" in lines[0] and "<main+0x2>" in lines[0]
    assert "<TIMER0_IRQHandler>" in lines[1] and "<IRQ1>" in lines[2]
    nd = run_cli("decode", raw, "--elf", tiny_elf, "--format", "ndjson")
    recs = [json.loads(line) for line in nd.out.splitlines()]
    assert recs[0]["symbol"] == "main+0x2" and recs[0]["pc"] == main + 2
    assert [r.get("symbol") for r in recs[1:]] == ["TIMER0_IRQHandler", "IRQ1", "TIMER0_IRQHandler"]
    # Without --elf the contract is unchanged: no symbol field.
    plain = run_cli("decode", raw, "--format", "ndjson")
    assert all("symbol" not in json.loads(line) for line in plain.out.splitlines())


def test_decode_with_a_non_elf_is_a_usage_error(run_cli, tmp_path: Path) -> None:
    raw = tmp_path / "swo.bin"
    raw.write_bytes(b"\x01A")
    done = run_cli("decode", raw, "--elf", raw)
    assert done.code == 2 and "not an ELF file" in done.err and "Traceback" not in done.err


def test_record_stores_the_build_id_and_decode_warns_on_mismatch(run_cli, tmp_path: Path, tiny_elf: Path) -> None:
    raw = tmp_path / "swo.bin"
    raw.write_bytes(_pc_and_exception_stream(nm(tiny_elf)["main"] & ~1))
    capture = tmp_path / "run.trace"
    done = run_cli("record", f"file://{raw}", "-o", capture, "--elf", tiny_elf)
    assert done.code == 0, done.err
    with open_capture(capture) as reader:
        assert reader.metadata.elf_build_id == open_elf(tiny_elf).build_id
        assert reader.metadata.firmware_hash.startswith("sha256:")
        assert reader.read_stream() == raw.read_bytes()
    # Another build of the firmware: decode says the names may be wrong.
    other = tmp_path / "other.elf"
    blob = bytearray(tiny_elf.read_bytes())
    build_id = bytes.fromhex(open_elf(tiny_elf).build_id or "")
    at = blob.find(build_id)
    blob[at] ^= 0xFF
    other.write_bytes(bytes(blob))
    warned = run_cli("decode", capture, "--elf", other)
    assert warned.code == 0 and "build ID" in warned.err and "names may be wrong" in warned.err


def test_resolver_caches_and_names_data_addresses(tiny_elf: Path) -> None:
    from tracer.decode.packets import PacketKind

    resolver = SymbolResolver(open_elf(tiny_elf))
    arena = resolver.image.symbol("arena_used_bytes").address
    assert resolver.describe(int(PacketKind.DATA_ADDR), arena) == "arena_used_bytes"
    assert resolver.describe(int(PacketKind.SWIT), arena) is None


def test_polling_symbols_come_from_the_elf(tiny_elf: Path) -> None:
    from tracer.sources.polling import parse_poll_spec

    image = open_elf(tiny_elf)
    addresses = nm(tiny_elf)
    spec = parse_poll_spec(
        {"arena": "arena_used_bytes", "arena_size": "8k", "stack": "main@main_stack,isr@main_stack..tensor_arena"},
        image,
    )
    assert spec.arena == addresses["arena_used_bytes"] and spec.arena_size == 8192
    main, isr = spec.stacks
    assert (main.name, main.start, main.size) == ("main", addresses["main_stack"], 1024)
    assert (isr.start, isr.size) == (addresses["main_stack"], addresses["tensor_arena"] - addresses["main_stack"])
    with pytest.raises(UsageError, match="no symbol 'missing'"):
        parse_poll_spec({"arena": "missing"}, image)
