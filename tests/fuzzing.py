"""Seeded mutation fuzzing of every input tracer reads, run in-process through ``main(argv)``.

Shared by the unit test (``tests/test_fuzz_inputs.py``, a few hundred inputs) and the campaign
(``benchmarks/fuzz_campaign.py``, tens of thousands). Every input is made from a real file of
``tests/data`` or ``captures/`` (the seeds) by one to three mutations drawn from
``random.Random(f"{campaign}:{index}")``, so any input can be made again from its two numbers.

Formats and what is run on them (``{input}`` is the mutated file):

* ``capture``: tracer captures, mutated as bytes and as structure (header JSON of the wrong shape
  or with absurd values, chunks swapped, repeated, dropped, offsets jumped, unknown kinds,
  hostile event and metadata JSON, all with their checksums made right again);
* ``raw-trace``: other tools' raw ITM/TPIU files (the corpus);
* ``log``: every firmware text log of ``tests/data/logs`` (numbers replaced by absurd ones, lines
  repeated, removed, made endless);
* ``budget-vela``, ``budget-glow``, ``budget-toml``, ``budget-json``: budget files of each kind
  (numbers, nesting, lines), given to ``tracer budget``, ``check`` and ``report``;
* ``elf``: a firmware ELF (built by ``arm-none-eabi-gcc`` from ``tests/data/elf``), given to
  ``tracer decode --elf``.

What each run must do (:func:`problems`): return an exit code of the contract (0-4), never raise,
never print a traceback, finish within the time bound and not grow the process's peak memory by
more than the memory bound.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import random
import re
import resource
import signal
import struct
import subprocess
import time
import traceback
import zlib
from collections.abc import Callable
from pathlib import Path

import fuzz_hostile

from tracer.capture.format import CHUNK_HEAD, CRC, HEAD_CRC_SPAN, HEADER_PREFIX, MAGIC, VERSION
from tracer.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
DEMO = ROOT / "captures" / "demo.trace"
DEMO_BUDGET = ROOT / "captures" / "demo_budget.toml"
CONTRACT = frozenset({0, 1, 2, 3, 4})
MAX_INPUT = 256 * 1024  # mutations never grow an input past this

FORMATS = (
    "capture",
    "records",
    "raw-trace",
    "log",
    "etdump",
    "budget-vela",
    "budget-glow",
    "budget-toml",
    "budget-json",
    "elf",
)


@dataclasses.dataclass(frozen=True)
class Seed:
    """A real file to mutate."""

    format: str
    name: str
    data: bytes
    companion: tuple[tuple[str, bytes], ...] = ()  # files given with it (a Vela summary beside its CSV)


@dataclasses.dataclass
class Case:
    """One input: which seed, which mutations, which command."""

    index: int
    format: str
    seed: str
    mutations: list[str]
    data: bytes
    argv: list[str]  # "{input}" stands for the input file, "{companion}" for a companion, "{out}" for an output
    companions: tuple[tuple[str, bytes], ...] = ()


@dataclasses.dataclass
class Outcome:
    """What running one case did."""

    case: Case
    code: int | None
    seconds: float
    rss_growth_mb: float
    error: str = ""  # a traceback, a timeout

    def describe(self) -> str:
        """One line to reproduce it."""
        return (
            f"#{self.case.index} {self.case.format} seed={self.case.seed} mutations={self.case.mutations} "
            f"argv={self.case.argv}"
        )


class FuzzTimeout(BaseException):
    """Raised by the alarm: not an Exception, so nothing in tracer catches it."""


# -- seeds -----------------------------------------------------------------------------------------
def build_elf(out_dir: Path, debug: bool = False) -> Path | None:
    """``tests/data/elf/tiny.c`` built by arm-none-eabi-gcc (with DWARF when ``debug``), or None
    when it is not installed."""
    source = DATA / "elf"
    out = out_dir / ("tiny-debug.elf" if debug else "tiny.elf")
    try:
        subprocess.run(
            [
                "arm-none-eabi-gcc",
                *(["-g"] if debug else []),
                "-mcpu=cortex-m55",
                "-mthumb",
                "-O1",
                "-nostdlib",
                "-ffreestanding",
                "-T",
                str(source / "tiny.ld"),
                "-Wl,--build-id=sha1",
                str(source / "tiny.c"),
                "-o",
                str(out),
            ],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out


def load_seeds(elf: Path | None) -> dict[str, list[Seed]]:
    """The seeds of each format, from the repository's own files."""
    seeds: dict[str, list[Seed]] = {f: [] for f in FORMATS}
    seeds["capture"].append(Seed("capture", "captures/demo.trace", DEMO.read_bytes()))
    seeds["capture"].append(Seed("capture", "corpus as a capture with events", _capture_with_events()))
    for path in sorted((DATA / "corpus").rglob("*")):
        if path.is_file() and path.suffix in (".trace", ".bin") and path.stat().st_size <= MAX_INPUT:
            seeds["raw-trace"].append(Seed("raw-trace", _rel(path), path.read_bytes()))
    for path in sorted((DATA / "logs").rglob("*")):
        if path.is_file() and path.suffix != ".h" and path.name != "README.md" and path.stat().st_size <= MAX_INPUT:
            seeds["log"].append(Seed("log", _rel(path), path.read_bytes()))
        elif path.suffix == ".h":
            seeds["budget-glow"].append(Seed("budget-glow", _rel(path), path.read_bytes()))
    for folder in sorted(p for p in (DATA / "vela").glob("out_*") if p.is_dir()):
        summary = next(folder.glob("*summary*.csv"))
        companion = ((summary.name, summary.read_bytes()),)
        for path in sorted(folder.iterdir()):
            seeds["budget-vela"].append(
                Seed("budget-vela", _rel(path), path.read_bytes(), companion if path is not summary else ())
            )
    seeds["budget-toml"].append(Seed("budget-toml", "captures/demo_budget.toml", DEMO_BUDGET.read_bytes()))
    from tracer.budget import load_budget

    for files in ([DEMO_BUDGET], sorted((DATA / "vela" / "out_u55-128_regor").iterdir())):
        text = json.dumps(load_budget(files).to_json(parts=True), indent=2).encode()
        seeds["budget-json"].append(Seed("budget-json", f"tracer budget --format json {files[0].name}", text))
    if elf is not None:
        seeds["elf"].append(Seed("elf", "tiny.elf (tests/data/elf)", elf.read_bytes()))
        debug = build_elf(elf.parent, debug=True)
        if debug is not None:
            seeds["elf"].append(Seed("elf", "tiny.elf with DWARF (tests/data/elf, -g)", debug.read_bytes()))
    for path in sorted((DATA / "vela").glob("*.stdout.txt")):
        seeds["budget-vela"].append(Seed("budget-vela", _rel(path), path.read_bytes()))
    stream, starts = fuzz_hostile.dwt_stream()
    seeds["records"].append(
        Seed(
            "records",
            "NPU layers with probe samples",
            fuzz_hostile.capture(stream, fuzz_hostile.npu_notes(starts[0], 50)),
        )
    )
    for path in sorted((DATA / "etdump").glob("*.etdp")):
        seeds["etdump"].append(Seed("etdump", _rel(path), path.read_bytes()))
    return {f: s for f, s in seeds.items() if s}


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _capture_with_events() -> bytes:
    """A capture of a corpus stream in 512-byte chunks with an event and a metadata patch."""
    from tracer.capture.format import ChunkKind
    from tracer.capture.metadata import CaptureMetadata
    from tracer.capture.writer import encode_chunk, encode_header

    stream = (DATA / "corpus" / "novakov_rtos_trace" / "queue_demo.trace").read_bytes()[:20_000]
    blob = bytearray(encode_header(CaptureMetadata(source="tcp://localhost:3443", cpu_hz=64_000_000).stamped()))
    for at in range(0, len(stream), 512):
        if at == 4096:
            blob += encode_chunk(ChunkKind.EVENT, b'{"event": "source lost", "bytes_received": 4096}', 7, at)
            blob += encode_chunk(ChunkKind.METADATA, b'{"elf_build_id": "abc123"}', 8, at)
        blob += encode_chunk(ChunkKind.DATA, stream[at : at + 512], 1_000 + at, at)
    return bytes(blob)


# -- commands --------------------------------------------------------------------------------------
COMMANDS: dict[str, list[list[str]]] = {
    "capture": [
        ["decode", "{input}", "--format", "stats"],
        ["decode", "{input}", "--format", "ndjson", "-o", "{out}"],
        ["report", "{input}", "--format", "json", "-o", "{out}"],
        ["check", "{input}", "--format", "junit", "-o", "{out}"],
        ["export", "{input}", "--format", "perfetto", "-o", "{out}"],
        ["export", "{input}", "--format", "csv", "-o", "{out}"],
        ["check", "{input}", "--budget", str(DEMO_BUDGET), "-o", "{out}"],
        ["export", "{input}", "--format", "raw", "-o", "{out}"],
        ["record", "file://{input}", "-o", "{out}", "--force"],
    ],
    "etdump": [
        ["report", "{input}", "--format", "json", "-o", "{out}"],
        ["check", "{input}", "-o", "{out}"],
        ["export", "{input}", "--format", "perfetto", "-o", "{out}"],
    ],
    "raw-trace": [
        ["decode", "{input}", "--format", "stats"],
        ["decode", "{input}", "--format", "text", "-o", "{out}"],
        ["decode", "{input}", "--tpiu", "on", "--format", "stats"],
        ["report", "{input}", "-o", "{out}"],
        ["check", "{input}", "-o", "{out}"],
    ],
    "log": [
        ["report", "{input}", "-o", "{out}"],
        ["report", "{input}", "--format", "json", "-o", "{out}"],
        ["check", "{input}", "--format", "json", "-o", "{out}"],
        ["export", "{input}", "--format", "chrome-json", "-o", "{out}"],
        ["report", "{input}", "--budget", str(DEMO_BUDGET), "--clock", "32M", "--match", "any", "-o", "{out}"],
    ],
    "budget": [
        ["budget", "{input}", "{companion}", "--format", "json", "-o", "{out}"],
        ["budget", "{input}", "{companion}", "--parts", "-o", "{out}"],
        ["check", str(DEMO), "--budget", "{input}", "{companion}", "-o", "{out}"],
        [
            "report",
            str(DEMO),
            "--budget",
            "{input}",
            "{companion}",
            "--match",
            "any",
            "--format",
            "json",
            "-o",
            "{out}",
        ],
    ],
    "elf": [
        ["decode", "{trace}", "--elf", "{input}", "--format", "ndjson", "-o", "{out}"],
        ["decode", "{trace}", "--elf", "{input}", "--format", "text", "-o", "{out}"],
    ],
}


def command_for(fmt: str) -> list[list[str]]:
    """The commands a format's inputs are given to."""
    if fmt == "records":
        return COMMANDS["capture"]
    return COMMANDS["budget" if fmt.startswith("budget") else fmt]


# -- mutations -------------------------------------------------------------------------------------
INTERESTING_NUMBERS = [
    "0",
    "-1",
    "-0",
    "1",
    "0.4",
    "1e308",
    "-1e308",
    "1e-320",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "4294967296",
    "18446744073709551616",
    "9223372036854775808",
    "2147483648",
    "9" * 45,
    "9" * 5000,
    "0x" + "f" * 5000,
    "1" + "0" * 30,
    "3.5",
    "1e30",
]
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def _bytes_flip(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def _bytes_set(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if out:
            at = rng.randrange(len(out))
            value = rng.choice([b"\x00", b"\xff", b"\x7f", b"\x80", b"\xff\xff\xff\x7f", b"\x00" * 6 + b"\x80"])
            out[at : at + len(value)] = value
    return bytes(out)


def _bytes_insert(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.randbytes(rng.randint(1, 64)) + data[at:]


def _bytes_delete(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    at = rng.randrange(len(data))
    return data[:at] + data[at + rng.randint(1, max(1, len(data) // 8)) :]


def _bytes_duplicate(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    a = rng.randrange(len(data))
    piece = data[a : a + rng.randint(1, 4096)]
    at = rng.randrange(len(data) + 1)
    return (data[:at] + piece + data[at:])[:MAX_INPUT]


def _bytes_truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _bytes_repeat(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    a = rng.randrange(len(data))
    piece = data[a : a + rng.randint(1, 64)]
    return (data[:a] + piece * rng.randint(2, MAX_INPUT // max(1, len(piece)) // 2) + data[a:])[:MAX_INPUT]


def _bytes_random(rng: random.Random, data: bytes) -> bytes:
    return rng.randbytes(rng.randint(0, 4096))


BYTE_MUTATIONS: dict[str, Callable[[random.Random, bytes], bytes]] = {
    "flip": _bytes_flip,
    "set": _bytes_set,
    "insert": _bytes_insert,
    "delete": _bytes_delete,
    "duplicate": _bytes_duplicate,
    "truncate": _bytes_truncate,
    "repeat": _bytes_repeat,
}


def _text_number(rng: random.Random, data: bytes) -> bytes:
    numbers = list(_NUMBER.finditer(data))
    if not numbers:
        return data + rng.choice(INTERESTING_NUMBERS).encode()
    out = data
    for m in sorted(rng.sample(numbers, min(len(numbers), rng.randint(1, 3))), key=lambda m: -m.start()):
        out = out[: m.start()] + rng.choice(INTERESTING_NUMBERS).encode() + out[m.end() :]
    return out[: MAX_INPUT + 6000]


def _text_lines(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    for _ in range(rng.randint(1, 4)):
        if not lines:
            break
        k = rng.randrange(len(lines))
        action = rng.randrange(4)
        if action == 0:
            del lines[k]
        elif action == 1:
            lines.insert(rng.randrange(len(lines) + 1), lines[k])
        elif action == 2:
            j = rng.randrange(len(lines))
            lines[k], lines[j] = lines[j], lines[k]
        else:
            lines[k:k] = [lines[k]] * rng.randint(2, 200)
    return b"\n".join(lines)[:MAX_INPUT]


def _text_long_line(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.choice([b"x", b"9", b"[", b"{", b" ", b","]) * rng.randint(10_000, 200_000) + data[at:]


def _text_nesting(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    depth = rng.choice([65, 1000, 100_000])
    opening = rng.choice([b"[", b'{"a":', b"[[", b"{"])
    return data[:at] + opening * depth + data[at:]


def _text_control(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    junk = rng.choice([b"\x00", b"\r", b"\r\r\n", b"\xff\xfe", "\u2028".encode(), b"\x1b[31m", b"\t" * 50, b"\xc3"])
    return data[:at] + junk + data[at:]


TEXT_MUTATIONS: dict[str, Callable[[random.Random, bytes], bytes]] = {
    "number": _text_number,
    "lines": _text_lines,
    "long-line": _text_long_line,
    "nesting": _text_nesting,
    "control": _text_control,
}


def _chunks_of(blob: bytes) -> tuple[bytes, list[bytes]] | None:
    """(header JSON, chunks) of a well-formed capture, else None."""
    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + HEADER_PREFIX.size:
        return None
    _, length = HEADER_PREFIX.unpack_from(blob, len(MAGIC))
    at = len(MAGIC) + HEADER_PREFIX.size
    header = blob[at : at + length]
    pos = at + length + CRC.size
    chunks = []
    while pos + CHUNK_HEAD.size <= len(blob):
        size = struct.unpack_from("<I", blob, pos + CHUNK_HEAD.size - 12)[0]
        chunks.append(blob[pos : pos + CHUNK_HEAD.size + size])
        pos += CHUNK_HEAD.size + size
    return header, chunks


def _capture_of(header: bytes, chunks: list[bytes]) -> bytes:
    return MAGIC + HEADER_PREFIX.pack(VERSION, len(header)) + header + CRC.pack(zlib.crc32(header)) + b"".join(chunks)


def _rechunk(chunk: bytes, **fields: int) -> bytes:
    """A chunk with some head fields changed (kind, offset, length) and both checksums made right."""
    values = list(CHUNK_HEAD.unpack(chunk[: CHUNK_HEAD.size]))
    payload = chunk[CHUNK_HEAD.size :]
    if "payload" in fields:
        payload = fields.pop("payload")
        values[6] = len(payload)
    for name, index in (("kind", 1), ("offset", 5), ("length", 6)):
        if name in fields:
            values[index] = fields[name]
    values[7] = zlib.crc32(payload)
    values[5] %= 2**64
    values[6] %= 2**32
    head = CHUNK_HEAD.pack(*values[:-1], 0)[:HEAD_CRC_SPAN]
    return head + CRC.pack(zlib.crc32(head)) + payload


HOSTILE_JSON = [
    b"[1, 2]",
    b"null",
    b"3",
    b'"text"',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 1000 + b"1" + b"}" * 1000,
    b'{"cpu_hz": "fast"}',
    b'{"cpu_hz": 1.5e8}',
    b'{"cpu_hz": 1}',
    b'{"cpu_hz": -5}',
    b'{"cpu_hz": NaN}',
    b'{"cpu_hz": Infinity}',
    b'{"cpu_hz": ' + b"9" * 5000 + b"}",
    b'{"tpiu": "yes", "tpiu_id": 9999}',
    b'{"ts_prescaler": 3, "encoding": 5}',
    b'{"encoding": "text"}',
    b"\xff\xfe",
    b"",
]


def _capture_structure(rng: random.Random, data: bytes) -> bytes:
    parsed = _chunks_of(data)
    if parsed is None or not parsed[1]:
        return _bytes_flip(rng, data)
    header, chunks = parsed
    action = rng.randrange(9)
    if action == 0:  # a header of the wrong shape or values
        choice = rng.choice(HOSTILE_JSON)
        if choice.startswith(b"{") and rng.random() < 0.5:
            try:
                merged = {**json.loads(header), **json.loads(choice)}
                choice = json.dumps(merged).encode()
            except (ValueError, TypeError, RecursionError):  # the seed's header or the choice is not a shallow object
                pass
        header = choice
    elif action == 1:  # swap two chunks
        i, j = rng.randrange(len(chunks)), rng.randrange(len(chunks))
        chunks[i], chunks[j] = chunks[j], chunks[i]
    elif action == 2:  # repeat or drop one
        k = rng.randrange(len(chunks))
        if rng.random() < 0.5:
            chunks.insert(rng.randrange(len(chunks) + 1), chunks[k])
        else:
            del chunks[k]
    elif action == 3:  # an offset that jumps
        k = rng.randrange(len(chunks))
        chunks[k] = _rechunk(chunks[k], offset=rng.choice([2**62, 2**64 - 1, 0, rng.randrange(2**32)]))
    elif action == 4:  # a kind from the future
        k = rng.randrange(len(chunks))
        chunks[k] = _rechunk(chunks[k], kind=rng.randrange(3, 256))
    elif action == 5:  # hostile event or metadata JSON
        k = rng.randrange(len(chunks) + 1)
        kind = rng.choice([1, 2])
        template = chunks[0]
        chunks.insert(k, _rechunk(template, kind=kind, payload=rng.choice(HOSTILE_JSON)))
    elif action == 6:  # a length that lies (the head's checksum still right)
        k = rng.randrange(len(chunks))
        chunks[k] = _rechunk(chunks[k], length=rng.choice([0, 1, 2**24, 2**32 - 1]))
    elif action == 7:  # one data chunk split into many
        k = rng.randrange(len(chunks))
        values = CHUNK_HEAD.unpack(chunks[k][: CHUNK_HEAD.size])
        payload = chunks[k][CHUNK_HEAD.size :]
        pieces = [
            _rechunk(chunks[k], payload=payload[a : a + 7], offset=values[5] + a) for a in range(0, len(payload), 7)
        ]
        chunks[k : k + 1] = pieces or [chunks[k]]
    else:  # a cut inside the header or the first chunk
        return _capture_of(header, chunks)[: rng.randrange(len(MAGIC) + HEADER_PREFIX.size + len(header) + 64)]
    return _capture_of(header, chunks)


def _elf_header(rng: random.Random, data: bytes) -> bytes:
    """Bytes of the ELF header and section header table changed (what pyelftools parses first)."""
    out = bytearray(data)
    if len(out) < 52:
        return _bytes_flip(rng, data)
    shoff = struct.unpack_from("<I", out, 32)[0]
    regions = [(0, 52), (shoff, shoff + 40 * 24)] if shoff < len(out) else [(0, 52)]
    for _ in range(rng.randint(1, 6)):
        start, end = rng.choice(regions)
        at = rng.randrange(start, min(end, len(out)))
        out[at] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
    return bytes(out)


def _tpiu_syncs(rng: random.Random, data: bytes) -> bytes:
    out = data
    for _ in range(rng.randint(1, 5)):
        at = rng.randrange(len(out) + 1)
        out = out[:at] + rng.choice([b"\xff\xff\xff\x7f", b"\xff\x7f", b"\x00" * 5 + b"\x80"]) + out[at:]
    return out


def mutations_for(fmt: str) -> dict[str, Callable[[random.Random, bytes], bytes]]:
    """The mutations that make sense for a format (bytes for all; text and structure where they apply)."""
    out = dict(BYTE_MUTATIONS)
    if fmt == "capture":
        out.update(
            {"structure": _capture_structure, "structure2": _capture_structure, "structure3": _capture_structure}
        )
        out.update({"notes": fuzz_hostile.capture_notes, "notes2": fuzz_hostile.capture_notes})
    elif fmt == "records":  # valid record streams with hostile fields (the bytes mutated now and then)
        out = {"flip": _bytes_flip, "truncate": _bytes_truncate}
        out.update({f"records{k}": fuzz_hostile.hostile_records for k in ("", "2", "3")})
        out.update({f"notes{k}": fuzz_hostile.capture_notes for k in ("", "2", "3")})
    elif fmt == "raw-trace":
        out.update({"tpiu-sync": _tpiu_syncs, "random": _bytes_random})
        out.update({"tpiu-repeat": fuzz_hostile.repeated_id_frames, "tpiu-repeat2": fuzz_hostile.repeated_id_frames})
    elif fmt == "elf":
        out.update({"elf-header": _elf_header, "elf-header2": _elf_header, "elf-header3": _elf_header})
        out.update({f"elf-section{k}": fuzz_hostile.elf_sections for k in ("", "2", "3")})
    elif fmt == "etdump":
        out.update({f"etdump-shared{k}": fuzz_hostile.shared_etdump for k in ("", "2", "3")})
    else:
        out.update(TEXT_MUTATIONS)
        out.update({"number2": _text_number, "number3": _text_number})
        out.update({"unicode-digits": fuzz_hostile.unicode_digits, "unicode-digits2": fuzz_hostile.unicode_digits})
        if fmt == "budget-vela":
            out.update({"vela-padding": fuzz_hostile.vela_padding, "vela-padding2": fuzz_hostile.vela_padding})
    return out


def make_case(campaign: int, index: int, seeds: dict[str, list[Seed]]) -> Case:
    """Input ``index`` of campaign ``campaign``: the same two numbers always make the same input."""
    rng = random.Random(f"{campaign}:{index}")
    formats = sorted(seeds)
    fmt = formats[index % len(formats)]
    seed = rng.choice(seeds[fmt])
    table = mutations_for(fmt)
    data = seed.data
    applied = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        name = rng.choice(sorted(table))
        data = table[name](rng, data)[: MAX_INPUT + 8192]
        applied.append(name.rstrip("23"))
    argv = list(rng.choice(command_for(fmt)))
    return Case(index, fmt, seed.name, applied, data, argv, seed.companion)


HOSTILE: dict[str, tuple[str, ...]] = {  # issue 26's classes: the structure-aware generators by format
    "capture": ("notes",),
    "records": ("records", "notes"),
    "raw-trace": ("tpiu-repeat",),
    "log": ("unicode-digits",),
    "etdump": ("etdump-shared",),
    "budget-vela": ("unicode-digits", "vela-padding"),
    "budget-toml": ("unicode-digits",),
    "budget-json": ("unicode-digits",),
    "elf": ("elf-section",),
}


def make_hostile_case(campaign: int, index: int, seeds: dict[str, list[Seed]]) -> Case:
    """Input ``index`` of the structure-aware classes alone (one generator, then maybe a byte
    mutation): what the CI's fixed seed budget runs."""
    rng = random.Random(f"hostile:{campaign}:{index}")
    formats = sorted(f for f in HOSTILE if f in seeds)
    fmt = formats[index % len(formats)]
    seed = rng.choice(seeds[fmt])
    table = mutations_for(fmt)
    name = rng.choice(HOSTILE[fmt])
    data = table[name](rng, seed.data)[: MAX_INPUT + 8192]
    applied = [name]
    if rng.random() < 0.25:
        extra = rng.choice(sorted(BYTE_MUTATIONS))
        data = BYTE_MUTATIONS[extra](rng, data)[: MAX_INPUT + 8192]
        applied.append(extra)
    return Case(index, fmt, seed.name, applied, data, list(rng.choice(command_for(fmt))), seed.companion)


# -- running ---------------------------------------------------------------------------------------
def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_case(case: Case, workdir: Path, trace_for_elf: Path | None = None, timeout: float = 30.0) -> Outcome:
    """Run one case in-process; the output goes to files in ``workdir``."""
    path = workdir / f"input-{case.format}"
    path.write_bytes(case.data)
    out = workdir / "out"
    companions = []
    for name, blob in case.companions:
        companion = workdir / name
        companion.write_bytes(blob)
        companions.append(str(companion))
    argv: list[str] = []
    for word in case.argv:
        if word == "{companion}":
            argv += companions
        else:
            argv.append(
                word.replace("{input}", str(path))
                .replace("{out}", str(out))
                .replace("{trace}", str(trace_for_elf or DEMO))
            )
    if out.exists():
        out.unlink()
    stdout, stderr = io.StringIO(), io.StringIO()
    before = _peak_rss_mb()
    error = ""
    code: int | None = None

    def alarm(signum: int, frame: object) -> None:
        raise FuzzTimeout

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main(argv)
    except FuzzTimeout:
        error = f"timeout: still running after {timeout:g} s"
    except BaseException:  # noqa: BLE001 - what the harness is for
        error = traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    seconds = time.perf_counter() - start
    if not error and "Traceback" in stderr.getvalue():
        error = stderr.getvalue()
    return Outcome(case, code, seconds, max(0.0, _peak_rss_mb() - before), error)


def problems(outcome: Outcome, max_seconds: float, max_rss_growth_mb: float) -> list[str]:
    """What the run did wrong (empty when it kept every promise)."""
    found = []
    if outcome.error:
        found.append(outcome.error.strip().splitlines()[-1] if outcome.error.strip() else "error")
    if outcome.code is not None and outcome.code not in CONTRACT:
        found.append(f"exit code {outcome.code} is not in the contract")
    if outcome.seconds > max_seconds:
        found.append(f"took {outcome.seconds:.1f} s (bound {max_seconds:g} s)")
    if outcome.rss_growth_mb > max_rss_growth_mb:
        found.append(f"grew the peak memory by {outcome.rss_growth_mb:.0f} MB (bound {max_rss_growth_mb:g} MB)")
    return found


def elf_trace(elf: Path, workdir: Path) -> Path:
    """A raw ITM stream of PC samples, exceptions and data addresses inside ``elf``, for ``decode --elf``."""
    from tracer.elf import open_elf

    image = open_elf(elf)
    addresses = sorted({s.address for s in image.symbols.values()})
    blob = bytearray()
    for k, address in enumerate(addresses * 4):
        blob += b"\x17" + (address + 2 * (k % 8)).to_bytes(4, "little")  # PC sample
        blob += b"\x0e" + bytes([16 + k % 48, 0x10])  # exception entry of IRQ k
        blob += b"\x4e" + (address & 0xFFFF).to_bytes(2, "little")  # data-trace address offset, comparator 0
    path = workdir / "pcs.swo"
    path.write_bytes(bytes(blob))
    return path


def outcome_json(outcome: Outcome) -> dict[str, object]:
    """For the campaign's record of failures."""
    return {
        "index": outcome.case.index,
        "format": outcome.case.format,
        "seed": outcome.case.seed,
        "mutations": outcome.case.mutations,
        "argv": outcome.case.argv,
        "code": outcome.code,
        "seconds": round(outcome.seconds, 3),
        "rss_growth_mb": round(outcome.rss_growth_mb, 1),
        "error": outcome.error[-2000:],
    }
