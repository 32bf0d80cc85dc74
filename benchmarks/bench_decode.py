"""Decoder benchmark: ``tracer decode`` against pyOCD's SWOParser on the same ITM bytes, same run.

Usage (from the project root)::

    .venv/bin/python benchmarks/bench_decode.py              # 200 MB stream (about 2 minutes)
    .venv/bin/python benchmarks/bench_decode.py --size-mb 100 --json results.json

It generates a realistic ITM stream (cached in ``benchmarks/data/``, git-ignored), then measures,
each ``tracer decode`` in its own process (wall time; peak RSS from ``wait4``):

* ``--format stats`` on the raw file (``--size-mb``, default 200 MB) and on a prefix of it
  (``--small-mb``, default 20 MB): MB/s end to end, MB/s steady state (minus the start-up time
  of a run on a 1 KB file), and the peak-memory difference between the two sizes;
* the same stream as a ``.trace`` capture (16 KiB checksummed chunks, as tracer writes them), ``--format stats``;
* ``--format ndjson`` and ``--format text`` to ``/dev/null`` on ``--ndjson-mb`` (default: the whole
  200 MB, so the listing's rate is not mostly the 0.3 s start-up; ``--ndjson-mb 20`` for a quick run);
* in-process, the bare decoder (``ItmDecoder`` fed 1 MiB chunks);
* pyOCD's ``SWOParser.parse`` on the first ``--pyocd-mb`` (default 10 MB) of the same bytes,
  scaled to MB/s; every figure above is also given as a ratio to it.

Wall and CPU time (user + system, from ``wait4``; ``process_time`` for pyOCD) are both given: on a
shared machine the wall-clock figures depend on what else runs, CPU time much less.

Targets (README, "Benchmarks"): at least 100x pyOCD's SWOParser, steady state over the 200 MB
file; a 200 MB capture uses at most 64 MB more memory than a 20 MB one; the ndjson listing at
least 30 MB/s of ITM. ``--check`` exits 1 if one is missed.

The stream's mix, per packet (before timestamps), chosen to look like an instrumented NN workload
with SWO tracing on:
    30%  SW 1-byte writes to port 0 (printf text)
     8%  SW 2-byte writes to ports 1-3 (counters)
    12%  SW 4-byte writes to ports 8 and 24 (layer markers, cycle counts)
    15%  exception trace (SysTick and IRQs 0-63 entered / exited / returned)
    22%  periodic PC samples (PCs in a 1 MB flash image), 3% PC sleep
     5%  DWT data trace (address offset, data value, PC), 2% DWT event counters,
   0.3%  PMU overflow, 0.001% ITM overflow
After 80% of packets a local timestamp: half LTS2 (1-6 ticks), half LTS1 with 1-3 payload bytes
(deltas geometric, mean 400 ticks; TC 1-3 on 10% of them). A sync packet every ~2 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
GENERATOR_VERSION = 1
EVENTS_PER_BLOCK = 400_000  # about 2 MB of stream; each block starts with a sync packet
SYNC = b"\x00\x00\x00\x00\x00\x80"

# Event kinds of the generator and their probabilities.
KINDS = [
    ("sw1", 0.30),
    ("sw2", 0.08),
    ("sw4", 0.12),
    ("exception", 0.15),
    ("pc_sample", 0.22),
    ("pc_sleep", 0.03),
    ("data_addr", 0.02),
    ("data_value", 0.02),
    ("data_pc", 0.01),
    ("dwt_event", 0.02),
    ("pmu", 0.003),
    ("overflow", 0.00001),
]
LENGTHS = {
    "sw1": 2,
    "sw2": 3,
    "sw4": 5,
    "exception": 3,
    "pc_sample": 5,
    "pc_sleep": 2,
    "data_addr": 3,
    "data_value": 5,
    "data_pc": 5,
    "dwt_event": 2,
    "pmu": 2,
    "overflow": 1,
}


def generate_block(rng: np.random.Generator, n: int = EVENTS_PER_BLOCK) -> bytes:
    """One block of the realistic stream (vectorised; see the module docstring for the mix)."""
    names = [k for k, _ in KINDS]
    probs = np.array([p for _, p in KINDS])
    probs[0] += 1.0 - probs.sum()
    kind = rng.choice(len(names), size=n, p=probs)
    length = np.array([LENGTHS[k] for k in names])[kind]
    has_lts = rng.random(n) < 0.8
    small = rng.random(n) < 0.5
    tc = np.where(rng.random(n) < 0.1, rng.integers(1, 4, n), 0)
    delta = np.where(small & (tc == 0), rng.integers(1, 7, n), rng.geometric(1 / 400, n))
    lts2 = has_lts & small & (tc == 0)
    lts1 = has_lts & ~lts2
    lts1_bytes = 1 + (delta >= 1 << 7) + (delta >= 1 << 14)
    delta = np.minimum(delta, (1 << 21) - 1)
    lts_len = np.where(lts2, 1, np.where(lts1, 1 + lts1_bytes, 0))
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(length + lts_len, out=offsets[1:])
    out = np.zeros(len(SYNC) + int(offsets[-1]), np.uint8)
    out[: len(SYNC)] = np.frombuffer(SYNC, np.uint8)
    at = offsets[:-1] + len(SYNC)
    value = rng.integers(0, 1 << 32, n, dtype=np.uint64)

    def put(name: str, header: np.ndarray | int, payload: np.ndarray | None, size: int) -> None:
        sel = kind == names.index(name)
        pos = at[sel]
        out[pos] = header if np.isscalar(header) else header[sel]
        if payload is not None:
            p = payload[sel].astype(np.uint64)
            for j in range(size):
                out[pos + 1 + j] = (p >> np.uint64(8 * j)) & np.uint64(0xFF)

    put("sw1", 0x01, rng.integers(32, 127, n), 1)
    put("sw2", (rng.integers(1, 4, n) << 3) | 0x02, value, 2)
    put("sw4", np.where(rng.random(n) < 0.5, 8, 24) << 3 | 0x03, value, 4)
    number = np.where(rng.random(n) < 0.3, 15, rng.integers(16, 80, n))
    action = rng.integers(1, 4, n)
    number = np.where(action == 3, np.where(rng.random(n) < 0.8, 0, number), number)
    put("exception", 0x0E, number | (action << 12), 2)
    pc = (0x08000000 + 2 * rng.integers(0, 1 << 19, n)).astype(np.uint64)
    put("pc_sample", 0x17, pc, 4)
    put("pc_sleep", 0x15, np.zeros(n, np.uint64), 1)
    comparator = rng.integers(0, 4, n) << 4
    put("data_addr", 0x4E | comparator, value, 2)
    put("data_value", 0x87 | comparator | (rng.integers(0, 2, n) << 3), value, 4)
    put("data_pc", 0x47 | comparator, pc, 4)
    put("dwt_event", 0x05, value & np.uint64(0x3F), 1)
    put("pmu", 0x1D, value & np.uint64(0xFF), 1)
    put("overflow", 0x70, None, 0)
    lts_at = at + length
    out[lts_at[lts2]] = (delta[lts2] << 4).astype(np.uint8)
    out[lts_at[lts1]] = (0xC0 | tc[lts1] << 4).astype(np.uint8)
    for j in range(3):
        sel = lts1 & (lts1_bytes > j)
        group = (delta[sel] >> (7 * j)) & 0x7F
        more = (lts1_bytes[sel] > j + 1).astype(np.int64) << 7
        out[lts_at[sel] + 1 + j] = (group | more).astype(np.uint8)
    return out.tobytes()


def stream_file(size_mb: int, seed: int) -> Path:
    """The generated stream of at least ``size_mb`` MB (10^6 bytes), cached."""
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"itm_{size_mb}mb_seed{seed}_v{GENERATOR_VERSION}.bin"
    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    tmp = path.with_suffix(".tmp")
    written = 0
    with open(tmp, "wb") as f:
        while written < size_mb * 1_000_000:
            written += f.write(generate_block(rng))
    tmp.replace(path)
    return path


def prefix_file(source: Path, size_mb: int) -> Path:
    if size_mb * 1_000_000 >= source.stat().st_size:  # the whole file: no copy
        return source
    path = source.with_name(source.stem + f"_first{size_mb}mb.bin")
    if not path.exists():
        with open(source, "rb") as f:
            path.write_bytes(f.read(size_mb * 1_000_000))
    return path


def capture_file(source: Path) -> Path:
    """The stream as a ``.trace`` capture, written by tracer's own CaptureWriter."""
    from tracer.capture import CaptureMetadata, CaptureWriter

    path = source.with_suffix(".c16k.trace")  # chunks as tracer writes them since they are bounded
    if path.exists():
        return path
    tmp = path.with_suffix(".tmp")
    meta = CaptureMetadata(source="benchmark", cpu_hz=160_000_000, notes="bench_decode.py generated stream")
    with (
        CaptureWriter(tmp, meta, overwrite=True, flush_interval=1e9, sync_interval=1e9) as writer,
        open(source, "rb") as f,
    ):
        while block := f.read(1 << 20):
            writer.write(block)
    tmp.replace(path)
    return path


def warm(path: Path) -> None:
    """Read a file once so that every run reads it from the page cache, not the disk."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def tracer_exe() -> list[str]:
    exe = shutil.which("tracer", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "tracer"]


def run(args: list[str]) -> tuple[float, float, float]:
    """Run a command; return its wall time (s), CPU time (user + system, s) and peak RSS (MB), from wait4."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {err}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def best_of(repeats: int, args: list[str]) -> tuple[float, float, float]:
    runs = [run(args) for _ in range(repeats)]
    return min(r[0] for r in runs), min(r[1] for r in runs), max(r[2] for r in runs)


def pyocd_rate(data: bytes) -> tuple[float, float]:
    """pyOCD's SWOParser on ``data``: MB/s of wall time and of CPU time."""
    from pyocd.trace.swo import SWOParser

    class Sink:
        def receive(self, event: object) -> None:
            pass

    class Core:
        def exception_number_to_name(self, number: int) -> str:
            return str(number)

    parser = SWOParser(Core(), Sink())
    start, cpu = time.perf_counter(), time.process_time()
    parser.parse(data)
    return len(data) / (time.perf_counter() - start) / 1e6, len(data) / (time.process_time() - cpu) / 1e6


def in_process_rate(path: Path) -> tuple[float, dict[str, int]]:
    """The bare decoder, 1 MiB chunks, counting only: MB/s and the packet mix."""
    from tracer.decode import ItmDecoder

    with open(path, "rb") as f:
        ItmDecoder(packets=False).feed(f.read(100_000))  # imports and first allocations outside the timing
    decoder = ItmDecoder(packets=False)
    size = path.stat().st_size
    start = time.perf_counter()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            decoder.feed(block)
    decoder.finish()
    return size / (time.perf_counter() - start) / 1e6, decoder.stats.packet_counts()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=200, metavar="MB", help="stream size (default 200)")
    parser.add_argument("--small-mb", type=int, default=20, metavar="MB", help="smaller capture for the memory check")
    parser.add_argument("--pyocd-mb", type=int, default=10, metavar="MB", help="slice given to pyOCD's SWOParser")
    parser.add_argument("--ndjson-mb", type=int, default=200, metavar="MB", help="slice for the ndjson/text runs")
    parser.add_argument("--repeats", type=int, default=2, help="runs per measurement; the fastest counts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = parser.parse_args()

    t0 = time.perf_counter()
    big = stream_file(args.size_mb, args.seed)
    small = prefix_file(big, args.small_mb)
    text_slice = prefix_file(big, args.ndjson_mb)
    capture = capture_file(big)
    tiny = DATA / "tiny.bin"
    with open(big, "rb") as f:
        tiny.write_bytes(f.read(1000))
    print(f"stream: {big.name} ({big.stat().st_size / 1e6:.1f} MB), ready in {time.perf_counter() - t0:.1f} s")

    decode = [*tracer_exe(), "decode"]
    run([*decode, str(tiny), "--format", "stats"])  # loads the files into the page cache
    startup, startup_cpu, startup_rss = best_of(3, [*decode, str(tiny), "--format", "stats"])
    big_mb = big.stat().st_size / 1e6
    small_mb = small.stat().st_size / 1e6
    text_mb = text_slice.stat().st_size / 1e6
    results: dict[str, dict[str, float]] = {}

    def measure(name: str, path: Path, size_mb: float, *extra: str) -> None:
        warm(path)
        wall, cpu, rss = best_of(args.repeats, [*decode, str(path), *extra])
        results[name] = {
            "mb": round(size_mb, 1),
            "seconds": round(wall, 2),
            "mb_per_s": round(size_mb / wall, 1),
            "steady_mb_per_s": round(size_mb / max(wall - startup, 1e-9), 1),
            "peak_rss_mb": round(rss, 1),
            "cpu_seconds": round(cpu, 2),
            "steady_cpu_mb_per_s": round(size_mb / max(cpu - startup_cpu, 1e-9), 1),
        }

    measure("stats_raw_big", big, big_mb, "--format", "stats")
    measure("stats_raw_small", small, small_mb, "--format", "stats")
    measure("stats_capture_big", capture, big_mb, "--format", "stats")
    measure("ndjson", text_slice, text_mb, "--format", "ndjson", "-o", os.devnull)
    measure("text", text_slice, text_mb, "--format", "text", "-o", os.devnull)
    warm(big)
    decoder_rate, mix = in_process_rate(big)
    with open(big, "rb") as f:
        pyocd, pyocd_cpu = pyocd_rate(f.read(args.pyocd_mb * 1_000_000))

    total = sum(mix.values())
    print(
        f"packets: {total:,} ({total / big_mb / 1e3:.0f} k/MB): "
        + ", ".join(f"{k} {v / total:.1%}" for k, v in sorted(mix.items(), key=lambda kv: -kv[1]))
    )
    print(
        f"start-up of `tracer decode` (1 KB file): {startup:.2f} s ({startup_cpu:.2f} s CPU), {startup_rss:.0f} MB RSS"
    )
    print(f"pyOCD SWOParser: {pyocd:.2f} MB/s ({pyocd_cpu:.2f} MB/s of CPU time) on the first {args.pyocd_mb} MB")
    print("(wall-clock figures depend on what else the machine runs; CPU time, user + system, much less)\n")
    print(
        f"{'measurement':<34}{'MB':>7}{'s':>8}{'MB/s':>9}{'steady':>9}{'x pyOCD':>9}{'CPU s':>8}{'CPU MB/s':>10}"
        f"{'x pyOCD':>9}{'peak RSS':>10}"
    )
    for name, r in results.items():
        print(
            f"{name:<34}{r['mb']:>7.0f}{r['seconds']:>8.2f}{r['mb_per_s']:>9.1f}{r['steady_mb_per_s']:>9.1f}"
            f"{r['steady_mb_per_s'] / pyocd:>9.1f}{r['cpu_seconds']:>8.2f}{r['steady_cpu_mb_per_s']:>10.1f}"
            f"{r['steady_cpu_mb_per_s'] / pyocd_cpu:>9.1f}{r['peak_rss_mb']:>9.0f}M"
        )
    print(
        f"{'in-process ItmDecoder (1 MiB chunks)':<34}{big_mb:>7.0f}{'':>8}{decoder_rate:>9.1f}{'':>9}"
        f"{decoder_rate / pyocd:>9.1f}"
    )

    ratio = results["stats_raw_big"]["steady_mb_per_s"] / pyocd
    cpu_ratio = results["stats_raw_big"]["steady_cpu_mb_per_s"] / pyocd_cpu
    growth = results["stats_raw_big"]["peak_rss_mb"] - results["stats_raw_small"]["peak_rss_mb"]
    ndjson_rate = results["ndjson"]["mb_per_s"]
    speed_ok, memory_ok, ndjson_ok = ratio >= 100, growth <= 64, ndjson_rate >= 30
    print(
        f"\ntarget speed : >= 100x pyOCD, steady state over {big_mb:.0f} MB: {ratio:.1f}x  "
        f"{'PASS' if speed_ok else 'MISS'} (CPU time: {cpu_ratio:.1f}x)"
    )
    print(
        f"target memory: {big_mb:.0f} MB uses <= 64 MB more than {small_mb:.0f} MB: {growth:+.1f} MB  "
        f"{'PASS' if memory_ok else 'MISS'}"
    )
    ndjson_cpu = results["ndjson"]["mb"] / results["ndjson"]["cpu_seconds"]
    print(
        f"target ndjson: >= 30 MB/s end to end: {ndjson_rate:.1f} MB/s  {'PASS' if ndjson_ok else 'MISS'} "
        f"(CPU time: {ndjson_cpu:.1f} MB/s)"
    )
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the end")
    if args.json:
        summary = {
            "stream_mb": big_mb,
            "pyocd_mb_per_s": round(pyocd, 2),
            "pyocd_cpu_mb_per_s": round(pyocd_cpu, 2),
            "startup_s": round(startup, 2),
            "ratio_steady_cpu": round(cpu_ratio, 1),
            "in_process_mb_per_s": round(decoder_rate, 1),
            "runs": results,
            "ratio_steady": round(ratio, 1),
            "memory_growth_mb": round(growth, 1),
            "packet_mix": mix,
        }
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    return 1 if args.check and not (speed_ok and memory_ok and ndjson_ok) else 0


if __name__ == "__main__":
    sys.exit(main())
