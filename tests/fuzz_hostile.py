"""Structure-aware hostile inputs for the fuzzing harness (``tests/fuzzing.py``): inputs that are
well-formed where a reader checks form (chunk checksums, record framing and CRCs, ELF headers,
flatbuffer offsets) and hostile in what they mean (issue 26's classes).

* ``capture_notes``: event chunks with valid checksums whose notes have fields of the wrong type,
  size or range (counters as text, a QREAD number where a list is expected, a CYCCNT beyond 64
  bits, a STATUS shorter than the samples), and metadata chunks patching a large metadata;
* ``hostile_records``: valid telemetry record streams with hostile fields (inference numbers that
  jump by 2^20 again and again, NPU buffers of 4 GiB, NPU layers far apart with probe samples);
* ``elf_sections``: an ELF with debug information whose sections lie (a compressed section
  inflating to 4 GiB, a NOBITS debug section, a DWARF unit with an odd address size);
* ``shared_etdump``: ETDump flatbuffers whose vectors share offsets (one table reached again and
  again) and whose inferences overlap;
* ``unicode_digits``: digits of text inputs replaced by digits ``int()`` refuses or takes (``²``,
  ``٣``, fullwidth, runs of thousands);
* ``vela_padding``: Vela console output with its numbers padded as Vela pads them;
* ``repeated_id_frames``: raw ITM put in TPIU frames that each repeat their source ID.

Everything is drawn from the ``random.Random`` the harness gives, so an input is made again from
its campaign and index.
"""

from __future__ import annotations

import json
import random
import re
import struct
import sys
import zlib
from pathlib import Path

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:  # the campaign imports this from benchmarks/
    sys.path.insert(0, str(TESTS))

from itm_encoder import tpiu_frames  # noqa: E402
from telemetry_encoder import TelemetryEncoder  # noqa: E402

from tracer.capture.format import ChunkKind  # noqa: E402
from tracer.capture.metadata import CaptureMetadata  # noqa: E402
from tracer.capture.writer import encode_chunk, encode_header  # noqa: E402
from tracer.telemetry.wire import TimeSource  # noqa: E402

WRAP = 1 << 32
HOSTILE_VALUES: list[object] = [
    "12",
    "text",
    -1,
    2**32,
    2**64,
    2**70,
    1.5,
    None,
    True,
    [],
    [1, 2],
    {"a": 1},
    float("inf"),
    "²",
]


# -- captures -------------------------------------------------------------------------------------
def capture(
    stream: bytes, notes: list[dict] = (), patches: list[bytes | dict] = (), cpu_hz: int = 100_000_000
) -> bytes:  # type: ignore[assignment]
    """A capture of ``stream`` with event chunks (notes) and metadata chunks (patches) before it,
    every checksum right."""
    blob = bytearray(encode_header(CaptureMetadata(source="fuzz://hostile", cpu_hz=cpu_hz).stamped()))
    seq = 1
    for note in notes:
        blob += encode_chunk(ChunkKind.EVENT, json.dumps(note).encode(), seq, 0)
        seq += 1
    for patch in patches:
        body = patch if isinstance(patch, bytes) else json.dumps(patch).encode()
        blob += encode_chunk(ChunkKind.METADATA, body, seq, 0)
        seq += 1
    for at in range(0, len(stream), 4096):
        blob += encode_chunk(ChunkKind.DATA, stream[at : at + 4096], seq, at)
        seq += 1
    return bytes(blob)


def dwt_stream(wraps: int = 1, far: int | None = None, inferences: int = 2) -> tuple[bytes, list[int]]:
    """Inferences with one NPU layer each on a DWT time line; the last one at cycle ``far`` when
    given. Returns the stream and the NPU layers' start cycles."""
    enc = TelemetryEncoder()
    t = wraps * WRAP + 1_000_000
    enc.target_info(t, 100_000_000, TimeSource.DWT)
    enc.layer_info(t + 1, 0, 1, "ethos-u", "job")
    starts = []
    for k in range(inferences):
        t += 100_000
        if far is not None and k == inferences - 1:
            t = far
            enc.time_sync(t)
        enc.inference_begin(t)
        enc.layer_begin(t + 100, 0, 1)
        enc.layer_end(t + 10_100, 0)
        starts.append(t + 100)
        enc.inference_end(t + 10_200)
        t += 10_300
    return bytes(enc), starts


def npu_notes(first_cycle: int, n: int) -> list[dict]:
    """A probe's NPU samples, as ``npu=`` on a probe URL records them, starting at ``first_cycle``."""
    return [
        {
            "event": "npu samples",
            "npu": 55,
            "base": 0x5010_0000,
            "qread": [200 + 4 * (k % 3) for k in range(n)],
            "status": [1] * n,
            "qbase": [0] * n,
            "qsize": [308] * n,
            "pmu_cycles": [None] * n,
            "counters": [[]] * n,
            "cyccnt": [(first_cycle + 50 + 97 * k) % WRAP for k in range(n)],
            "host_time": [1000.0 + k * 1e-4 for k in range(n)],
        },
        {"event": "npu sampling", "requested_hz": 1000.0},
    ]


def capture_notes(rng: random.Random, data: bytes) -> bytes:
    """A capture with probe NPU samples (valid chunks) whose note has a hostile field, or a large
    metadata patched many times."""
    stream, starts = dwt_stream()
    notes = npu_notes(starts[0], rng.choice([1, 10, 200]))
    choice = rng.randrange(4)
    if choice == 0:  # a field of the wrong type or size
        key = rng.choice(["qread", "status", "qbase", "qsize", "pmu_cycles", "counters", "cyccnt", "host_time"])
        value = rng.choice(HOSTILE_VALUES)
        notes[0][key] = value if rng.random() < 0.5 else [value] * len(notes[0]["qread"])
    elif choice == 1:  # a list shorter or longer than the samples
        key = rng.choice(["status", "qbase", "qsize", "cyccnt", "host_time", "counters"])
        notes[0][key] = notes[0][key][: rng.randrange(len(notes[0][key]) + 1)] + notes[0][key] * rng.randint(0, 2)
    elif choice == 2:  # counters as text, CYCCNT past 64 bits, a rate of the wrong kind
        notes[0]["counters"] = [["1", "x"]] * len(notes[0]["qread"])
        notes[0]["cyccnt"][rng.randrange(len(notes[0]["cyccnt"]))] = rng.choice([2**64, 2**70, -1, "0"])
        notes[1]["requested_hz"] = rng.choice(["fast", -5, 0, 2**80, None])
    else:  # a large metadata, patched again and again
        big = {f"extra{k}": list(range(rng.choice([3, 10]))) for k in range(rng.choice([500, 3000]))}
        patches: list[bytes | dict] = [big]
        patches += [
            rng.choice([{"notes": "x"}, {"cpu_hz": "fast"}, {f"k{j}": j}]) for j in range(rng.choice([500, 2000]))
        ]
        return capture(stream, notes, patches)
    return capture(stream, notes)


def hostile_records(rng: random.Random, data: bytes) -> bytes:
    """A valid record stream whose fields are hostile, in a capture."""
    choice = rng.randrange(4)
    enc = TelemetryEncoder()
    t = 1_000
    enc.target_info(t, 100_000_000, TimeSource.DWT)
    enc.layer_info(t + 1, 0, rng.choice([0, 1]), "conv", "l")
    if choice == 0:  # inference numbers that jump by 2^20 (or more) again and again
        step = rng.choice([1 << 20, 1 << 31, 1000, 1001])
        for k in range(rng.choice([100, 2000, 4000])):
            t += 1_000
            enc.inference_begin(t, number=(k * step) & 0xFFFF_FFFF, sync=rng.random() < 0.1)
            enc.inference_end(t + 500, number=(k * step) & 0xFFFF_FFFF)
    elif choice == 1:  # NPU buffers of up to 4 GiB, with CPU accesses and cache operations
        for _ in range(rng.choice([2, 20])):
            t += 100_000
            enc.inference_begin(t)
            enc.cpu_write(t + 10, rng.randrange(2**32), rng.choice([64, 2**32 - 1]))
            enc.cache_op(t + 20, rng.randrange(1, 4), rng.randrange(2**32), rng.choice([32, 2**32 - 1]))
            enc.layer_begin(t + 100, 0, 1)
            enc.npu_job_begin(t + 101, 0)
            for role in (0, 1):
                enc.npu_buffer(
                    t + 102, 0, role, rng.choice([0, 3, rng.randrange(2**32)]), rng.choice([2**32 - 1, 2**31, 64])
                )
            enc.npu_job_end(t + 200, 0)
            enc.layer_end(t + 10_100, 0)
            enc.cpu_read(t + 10_150, rng.randrange(2**32), rng.choice([64, 2**32 - 1]))
            enc.inference_end(t + 10_200)
    elif choice == 2:  # NPU layers far apart, with probe samples to place against them
        stream, starts = dwt_stream(
            wraps=rng.choice([0, 1, 5]), far=rng.choice([2**40, 2**60, 2**62]), inferences=rng.choice([2, 5])
        )
        return capture(stream, npu_notes(starts[0], rng.choice([10, 500])))
    else:  # any record type with words of extreme values
        for _ in range(rng.choice([50, 500])):
            t += rng.randrange(1, 10_000)
            words = [rng.choice([0, 1, 2**31, 2**32 - 1, rng.randrange(2**32)]) for _ in range(rng.randrange(0, 12))]
            enc.record(rng.randrange(1, 64), t, words)
    return capture(bytes(enc))


# -- ELF ------------------------------------------------------------------------------------------
def _sections(blob: bytes) -> tuple[int, int, dict[str, int]]:
    """(section header table offset, entry size, index by name) of a 32-bit little-endian ELF."""
    shoff = struct.unpack_from("<I", blob, 32)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 46)
    strtab = struct.unpack_from("<I", blob, shoff + shstrndx * shentsize + 16)[0]
    names = {}
    for i in range(shnum):
        at = strtab + struct.unpack_from("<I", blob, shoff + i * shentsize)[0]
        names[blob[at : blob.index(b"\0", at)].decode("ascii", "replace")] = i
    return shoff, shentsize, names


def elf_sections(rng: random.Random, data: bytes) -> bytes:
    """An ELF whose sections lie: a compressed section that inflates to 4 GiB, a NOBITS debug
    section, a DWARF unit with an odd address size, a ``.zdebug`` bomb."""
    try:
        shoff, size, names = _sections(data)
    except (struct.error, ValueError, IndexError):
        return data
    debug = [n for n in names if n.startswith(".debug")] or [n for n in names if n]
    if not debug:
        return data
    out = bytearray(data)
    name = rng.choice(debug)
    head = shoff + names[name] * size
    choice = rng.randrange(4)
    if choice == 0:  # SHF_COMPRESSED: a zlib bomb declaring up to 4 GiB
        bomb = zlib.compress(b"\0" * rng.choice([1 << 20, 16 << 20]), 9)
        chdr = struct.pack("<III", 1, rng.choice([2**32 - 16, 1 << 30, 100]), 1)
        at = len(out)
        out += chdr + bomb
        flags = struct.unpack_from("<I", out, head + 8)[0]
        struct.pack_into("<I", out, head + 8, flags | 0x800)
        struct.pack_into("<II", out, head + 16, at, len(chdr) + len(bomb))
    elif choice == 1:  # NOBITS with a size of up to 4 GiB
        struct.pack_into("<I", out, head + 4, 8)
        struct.pack_into("<I", out, head + 20, rng.choice([2**32 - 16, 1 << 30, 16]))
    elif choice == 2 and ".debug_info" in names:  # the first unit's address size
        at = struct.unpack_from("<I", out, shoff + names[".debug_info"] * size + 16)[0]
        version = struct.unpack_from("<H", out, at + 4)[0]
        out[at + (7 if version >= 5 else 10)] = rng.choice([0, 1, 2, 3, 5, 16, 255])
    else:  # GNU's .zdebug: "ZLIB", the size, a bomb
        bomb = b"ZLIB" + struct.pack(">Q", 1 << 32) + zlib.compress(b"\0" * rng.choice([1 << 20, 80 << 20]), 9)
        at = len(out)
        out += bomb
        struct.pack_into("<II", out, head + 16, at, len(bomb))
        name_at = struct.unpack_from("<I", out, head)[0]
        strtab = struct.unpack_from("<I", out, shoff + struct.unpack_from("<H", out, 50)[0] * size + 16)[0]
        if name.startswith(".debug"):  # ".debug_info" -> ".zdebug_inf": the name keeps its length
            renamed = (".z" + name[1:])[: len(name)].encode()
            out[strtab + name_at : strtab + name_at + len(renamed)] = renamed
    return bytes(out)


# -- ETDump ---------------------------------------------------------------------------------------
def shared_etdump(rng: random.Random, data: bytes) -> bytes:
    """An ETDump whose vectors point at the same tables again and again (and whose inferences
    overlap): small, valid as a flatbuffer, and a walk of the square of its size or more."""
    import flatbuffers

    from tracer.telemetry.etdump.schema import ETDump, Event, ProfileEvent, RunData

    b = flatbuffers.Builder(1024)
    events = []
    for name, instruction in [
        ("Method::execute", -1),
        ("DELEGATE_CALL", 1),
        ("EthosUBackend::execute()NPU", 1),
        ("OPERATOR_CALL", 0),
    ]:
        text = b.CreateString(name)
        ProfileEvent.Start(b)
        ProfileEvent.AddName(b, text)
        ProfileEvent.AddInstructionId(b, instruction)
        ProfileEvent.AddStartTime(b, rng.choice([0, 10]))
        ProfileEvent.AddEndTime(b, rng.choice([1000, 2**40]))
        profile = ProfileEvent.End(b)
        Event.Start(b)
        Event.AddProfileEvent(b, profile)
        events.append(Event.End(b))
    n_events = rng.choice([1000, 5000, 20000])
    RunData.StartEventsVector(b, n_events)
    for k in range(n_events):
        b.PrependUOffsetTRelative(events[k % len(events)] if rng.random() < 0.9 else events[0])
    vector = b.EndVector()
    block = b.CreateString("Execute")
    RunData.Start(b)
    RunData.AddName(b, block)
    RunData.AddEvents(b, vector)
    run = RunData.End(b)
    n_runs = rng.choice([1, 100, 5000])
    ETDump.StartRunDataVector(b, n_runs)
    for _ in range(n_runs):
        b.PrependUOffsetTRelative(run)
    runs = b.EndVector()
    ETDump.Start(b)
    ETDump.AddVersion(b, 0)
    ETDump.AddRunData(b, runs)
    b.FinishSizePrefixed(ETDump.End(b), file_identifier=b"ED00")
    return bytes(b.Output())


# -- text -----------------------------------------------------------------------------------------
UNICODE_DIGITS = ["²", "³", "¹", "٣", "０", "９", "𝟗", "৪", "⁴", "₅", "Ⅻ"]


def unicode_digits(rng: random.Random, data: bytes) -> bytes:
    """Some ASCII digits replaced by characters ``str.isdigit()`` or ``\\d`` accept (``int()``
    refuses some, takes others), a few as runs of thousands."""
    text = data.decode("utf-8", "replace")
    where = [m.start() for m in re.finditer(r"[0-9]", text)]
    if not where:
        return data + rng.choice(UNICODE_DIGITS).encode()
    chars = list(text)
    for at in rng.sample(where, min(len(where), rng.choice([1, 3, 30, 300]))):
        digit = rng.choice(UNICODE_DIGITS)
        chars[at] = digit * (5000 if rng.random() < 0.05 else 1)
    return "".join(chars).encode()


def vela_padding(rng: random.Random, data: bytes) -> bytes:
    """Vela's console output with its numbers padded to widths, as Vela prints them
    (``f"{ms:7.2f} ms, {ips:7.2f} inferences/s"``), and the batch line of a slow model."""
    text = data.decode("utf-8", "replace")
    text = re.sub(r"(?<=[ ,]) (?=[0-9])", lambda m: " " * rng.randint(1, 9), text)
    if rng.random() < 0.5:
        ms = rng.choice([4.94, 18.22, 1234.5, 0.0])
        ips = 1000.0 / ms if ms else 0.0
        line = f"Batch Inference time              {ms:7.2f} ms, {ips:7.2f} inferences/s (batch size 1)"
        text = re.sub(r"^Batch Inference time.*$", line, text, flags=re.MULTILINE)
    return text.encode()


# -- TPIU -----------------------------------------------------------------------------------------
def repeated_id_frames(rng: random.Random, data: bytes) -> bytes:
    """The input's bytes as raw ITM in TPIU frames that each begin with their source ID, the
    current one or not (what probes' formatters commonly do), another source now and then."""
    itm = data[: rng.choice([2000, 20_000, 60_000])]
    pairs: list[tuple[int, int]] = []
    other = rng.choice([0, 2, 3])
    for k, byte in enumerate(itm):
        pairs.append((1, byte))
        if other and rng.random() < 0.02:
            pairs.append((other, k & 0xFF))
    frames, _ = tpiu_frames(pairs, repeat_id=True)
    out = b"".join(frames)
    if rng.random() < 0.3:  # a full sync now and then, as probes insert them
        out = b"\xff\xff\xff\x7f" + out
    return out
