"""Benchmark: many captures on Dask (ingest, compare) and one very large capture in bounded memory.

One command (generated captures are kept under benchmarks/data/fleet/, never committed, and
reused by the next run)::

    .venv/bin/python benchmarks/bench_fleet.py                       # 200 x 10.5 MB, a 1 GB capture
    .venv/bin/python benchmarks/bench_fleet.py --captures 20 --mb 2 --big-mb 100     # a quick look

The captures are the synthetic workload of :mod:`workload` (a 30-layer model, 18 layers on the NPU
with cache maintenance, NPU job marks and PMU snapshots, CRCs and a stack report per inference),
made by the reference encoder. Half of them are build 1, half build 2, in which layer 7 is 3 %
slower; every capture gets its own small overall speed factor (build-to-build noise) and labels
in its header (build, board). It measures, printing the machine's load average beside each phase
(other work on the machine slows the runs; the figures say when):

  ingest     all captures into a fresh dataset with a local Dask cluster of 1, then 2 worker
             processes (``tracer ingest`` as a library call; the cluster's start is timed apart):
             MB/s, the speed-up of 2 workers over 1 (target >= 1.8x on 2 cores), each worker's
             peak resident memory (VmHWM) and CPU time (user + system) with the share of the wall
             time it spent on a CPU: on a machine other work keeps busy, a share well below 100 %
             says the workers waited for a CPU, not for each other;
  compare    the first half against the second half: decoded on the 2-worker cluster, and the
             same selection read from the dataset; seconds;
  big        ``tracer report``, ``tracer compare BIG BIG`` and ``tracer ingest BIG`` of one
             ``--big-mb`` capture, each in a fresh process: peak resident memory (target: under
             300 MB for a 1 GB capture) and seconds;
  carry      ``tracer report`` of a ``--big-mb`` capture with what windows carry from one to the
             next, as the QEMU demo's recordings have it: port-0 console text (a line per block
             of inferences), an RTOS task lane (the sensor task preempts a layer in every
             inference), a CPU counter configuration sent once and counters per layer, NPU buffer
             declarations with CPU write and read marks around two NPU jobs per inference (the
             coherency checks); peak resident memory (same target) and seconds.

The reference for the MB/s is decoding alone (packets, no telemetry) of the same captures in this
process, measured in the same run.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))  # the telemetry encoder (a test oracle)

from telemetry_encoder import SlotSpec, TelemetryEncoder, encode_inferences
from workload import LAYERS, inference_slots

from tracer.base.firmware_marks import NPU_READS, NPU_WRITES
from tracer.capture.metadata import CaptureMetadata
from tracer.capture.reader import open_capture
from tracer.capture.writer import CaptureWriter
from tracer.decode.tpiu import TpiuMode
from tracer.pipeline.capture import decode_reader
from tracer.telemetry.wire import COUNTERS_PMU, TimeSource
from tracer.telemetry.wire import RecordType as R

DATA = HERE / "data" / "fleet"
SLOW_LAYER = 7
SLOW_PCT = 3.0
CLOCK_HZ = 480_000_000
RSS_TARGET_MB = 300
SCALING_TARGET = 1.8


def write_capture(path: Path, megabytes: float, build: int, seed: int) -> int:
    """One synthetic capture of about ``megabytes`` MB of stream; returns its stream bytes."""
    rng = random.Random(seed)
    factor = 1 + rng.gauss(0, 0.005)
    scale = dict.fromkeys(range(LAYERS), factor)
    if build == 2:
        scale[SLOW_LAYER] = factor * (1 + SLOW_PCT / 100)
    slots, t = inference_slots(scale)
    period = t + 5000
    created = (_dt.datetime(2025, 6, 1, tzinfo=_dt.UTC) + _dt.timedelta(days=build - 1)).isoformat()
    meta = CaptureMetadata(
        source="synthetic://bench_fleet",
        tpiu=False,
        cpu_hz=CLOCK_HZ,
        created=created,
        extra={"labels": {"build": build}, "board": f"bench-board-{seed % 2}"},
    )
    block = 128  # inferences per encoded block (about 430 kB): the capture ends close to its size
    target = int(megabytes * 1e6)
    written = inferences = sequence = 0
    start = seed * 1_000_003  # every capture's bytes differ (its own content hash)
    with CaptureWriter(path, meta, overwrite=True) as writer:
        while written < target:
            data = encode_inferences(
                slots,
                block,
                period,
                start=start + inferences * period,
                first_number=inferences,
                first_sequence=sequence,
            )
            writer.write(data)
            written += len(data)
            inferences += block
            sequence = (sequence + block * len(slots)) & 0xFF
    return written


INFERENCE_TASK, SENSOR_TASK = 0x20001000, 0x20002000


def carry_slots() -> tuple[list[SlotSpec], int]:
    """The workload's inference with the records windows carry: a CPU write of the input before
    and a read of the output after NPU layers 0 and 1, which declare their buffers; the sensor task
    switched in and out inside layer 3; INST_RETIRED counted in layer 4."""
    slots, t = inference_slots()
    out: list[SlotSpec] = []
    layer = -1
    for slot in slots:
        if slot.type == R.LAYER_BEGIN:
            layer = int(slot.words[0]) & 0xFFFF
            if layer == 0:
                out.append(SlotSpec(R.CPU_WRITE, slot.offset - 20, (0x31000000, 4096)))
        out.append(slot)
        if slot.type == R.LAYER_BEGIN and layer in (0, 1):
            out.append(SlotSpec(R.NPU_BUFFER, slot.offset + 10, ("inference", NPU_READS, 0x31000000, 4096)))
            out.append(SlotSpec(R.NPU_BUFFER, slot.offset + 20, ("inference", NPU_WRITES, 0x31001000, 2048)))
        elif slot.type == R.LAYER_BEGIN and layer == 3:
            out.append(SlotSpec(R.TASK_SWITCH, slot.offset + 500, (SENSOR_TASK,)))
            out.append(SlotSpec(R.TASK_SWITCH, slot.offset + 1100, (INFERENCE_TASK,)))
        elif slot.type == R.LAYER_BEGIN and layer == 4:
            out.append(SlotSpec(R.CPU_COUNTERS, slot.offset + 4000, (4 | (COUNTERS_PMU << 16) | (1 << 24), 3900)))
        elif slot.type == R.CACHE_OP and layer == 1 and slot.words[0] == 2:  # layer 1's invalidate
            out.append(SlotSpec(R.CPU_READ, slot.offset + 10, (0x31001000, 2048)))
    return out, t


def write_carry_capture(path: Path, megabytes: float) -> int:
    """A capture of about ``megabytes`` MB with console text, tasks, counters and buffer
    declarations (:func:`carry_slots`); returns its stream bytes."""
    slots, t = carry_slots()
    period = t + 5000
    meta = CaptureMetadata(source="synthetic://bench_fleet/carry", tpiu=False, cpu_hz=CLOCK_HZ)
    prelude = TelemetryEncoder()
    prelude.target_info(0, CLOCK_HZ, TimeSource.DWT)
    prelude.task_info(1, INFERENCE_TASK, "inference", priority=2)
    prelude.task_info(2, SENSOR_TASK, "sensor", priority=3)
    prelude.cpu_counter_config(3, COUNTERS_PMU, [0x0008])
    prelude.task_switch(4, INFERENCE_TASK)
    prelude.text("bench-carry READY\n")
    block = 128
    target = int(megabytes * 1e6)
    written = inferences = 0
    sequence = prelude.sequence
    with CaptureWriter(path, meta, overwrite=True) as writer:
        writer.write(bytes(prelude))
        while written < target:
            data = encode_inferences(
                slots, block, period, start=1000 + inferences * period, first_number=inferences, first_sequence=sequence
            )
            line = TelemetryEncoder()
            line.text(f"{inferences + block} inferences done\n")
            writer.write(data + bytes(line))
            written += len(data) + len(line.out)
            inferences += block
            sequence = (sequence + block * len(slots)) & 0xFF
    return written


def generate(count: int, megabytes: float, big_mb: float | None) -> tuple[list[Path], Path | None]:
    """The captures (reused when present with the same sizes) and the big one (None: not made)."""
    folder = DATA / f"{count}x{megabytes:g}MB"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    t0 = time.perf_counter()
    made = 0
    for i in range(count):
        path = folder / f"c{i:03d}.trace"
        if not path.exists() or path.stat().st_size < megabytes * 1e6:
            write_capture(path, megabytes, 1 if i < count // 2 else 2, i)
            made += 1
        paths.append(path)
    big = DATA / f"big-{big_mb:g}MB.trace" if big_mb is not None else None
    if big is not None and (not big.exists() or big.stat().st_size < (big_mb or 0) * 1e6):
        write_capture(big, big_mb or 0, 1, 10_000)
        made += 1
    total = sum(p.stat().st_size for p in paths)
    sized = f", big {big.stat().st_size / 1e9:.2f} GB" if big is not None else ""
    print(
        f"captures: {count} x {megabytes:g} MB = {total / 1e9:.2f} GB{sized} "
        f"({made} written in {time.perf_counter() - t0:.0f} s, the rest reused) under {DATA}"
    )
    return paths, big


def load() -> str:
    """The load averages (1, 5, 15 min) and the CPUs."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def decode_only(paths: list[Path]) -> float:
    """Seconds to decode the captures' ITM packets (no telemetry) in this process."""
    t0 = time.perf_counter()
    for path in paths:
        with open_capture(path) as reader:
            _, batches = decode_reader(reader, TpiuMode.OFF, None, hold_timestamps=False)
            for _ in batches:
                pass
    return time.perf_counter() - t0


def vm_hwm_mb() -> float:
    """This process's peak resident memory (VmHWM), in MB (runs on Dask workers too)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (runs on Dask workers too)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def ingest_on(paths: list[Path], workers: int, dataset: Path) -> dict:
    """Ingest into a fresh dataset on a local cluster of ``workers`` processes."""
    from distributed import Client

    from tracer.fleet.cluster import DaskRunner, local_cluster
    from tracer.fleet.dataset import Dataset
    from tracer.fleet.ingest import ingest

    shutil.rmtree(dataset, ignore_errors=True)
    t0 = time.perf_counter()
    cluster = local_cluster(workers)
    try:
        with Client(cluster) as client:
            started = time.perf_counter() - t0
            client.run(lambda: __import__("tracer.fleet.ingest"))  # imports paid before the clock starts
            cpu_before = client.run(cpu_seconds)
            t1, own = time.perf_counter(), cpu_seconds()
            result = ingest(
                [str(p) for p in paths], Dataset.create_or_open(dataset), DaskRunner(client, f"{workers} workers")
            )
            seconds, own = time.perf_counter() - t1, cpu_seconds() - own
            cpu = [after - cpu_before[w] for w, after in client.run(cpu_seconds).items()]
            peaks = client.run(vm_hwm_mb)
    finally:
        cluster.close()
    assert result.count("failed") == 0, [o.error for o in result.outcomes if o.error]
    return {
        "seconds": seconds,
        "start": started,
        "bytes": result.bytes,
        "executions": result.executions,
        "peaks": sorted(peaks.values()),
        "cpu": sorted(cpu),
        "client_cpu": own,
    }


def compare_sets(paths: list[Path], dataset: Path) -> tuple[float, float, list[str]]:
    """Seconds to compare the first half with the second: decoded on 2 workers; read from the dataset."""
    from distributed import Client

    from tracer.compare.compare import compare
    from tracer.fleet.cluster import DaskRunner, local_cluster
    from tracer.fleet.dataset import Dataset
    from tracer.pipeline.digest import digest_file

    half = len(paths) // 2
    cluster = local_cluster(2)
    try:
        with Client(cluster) as client:
            client.run(lambda: __import__("tracer.pipeline.digest"))
            runner = DaskRunner(client, "2 workers")
            t0 = time.perf_counter()
            digests = [None] * len(paths)
            for i, d in runner.run(digest_file, [(str(p), None) for p in paths]):
                digests[i] = d
            files = compare(digests[:half], digests[half:], threshold_pct=2.0)
            from_files = time.perf_counter() - t0
    finally:
        cluster.close()
    t0 = time.perf_counter()
    data = Dataset.open(dataset)
    selected = compare(data.digests({"build": "1"}, "base"), data.digests({"build": "2"}, "new"), threshold_pct=2.0)
    from_dataset = time.perf_counter() - t0
    assert [c.label for c in selected.regressions] == [c.label for c in files.regressions]
    return from_files, from_dataset, [c.label for c in files.regressions]


def run_cli(args: list[str]) -> tuple[int, float, float]:
    """``tracer ARGS`` in a fresh process: (exit code, seconds, peak resident MB)."""
    code = (
        "import sys; from tracer.cli.main import main; rc = main(sys.argv[1:]); "
        "hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0]; "
        "print(hwm, file=sys.stderr); sys.exit(rc)"
    )
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, args[0], "-q", *args[1:]], capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - t0
    return done.returncode, seconds, int(done.stderr.split()[-1]) / 1024


def main() -> int:
    """Generate, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--captures", type=int, default=200, help="captures to ingest (default 200)")
    parser.add_argument("--mb", type=float, default=10.5, help="MB of stream per capture (default 10.5)")
    parser.add_argument("--big-mb", type=float, default=1000.0, help="MB of the large capture (default 1000)")
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=("ingest", "compare", "big", "carry"), help="phases to skip"
    )
    args = parser.parse_args()
    print(load())
    paths, big = generate(args.captures, args.mb, None if "big" in args.skip else args.big_mb)
    work = DATA / "work"
    work.mkdir(exist_ok=True)
    total = sum(p.stat().st_size for p in paths)

    if "ingest" not in args.skip:
        reference = decode_only(paths)  # also reads every file once: both ingests find them in the page cache
        print(f"\nreference: decoding the packets alone, 1 process: {total / 1e6 / reference:.0f} MB/s  ({load()})")
        runs = {}
        for workers in (1, 2):
            r = ingest_on(paths, workers, work / f"ds-{workers}w")
            runs[workers] = r
            print(
                f"ingest, {workers} worker(s): {r['seconds']:.1f} s, {r['bytes'] / 1e6 / r['seconds']:.1f} MB/s "
                f"({r['bytes'] / 1e6 / r['seconds'] / (total / 1e6 / reference):.2f}x decoding alone), "
                f"{r['executions']:,} layer executions; cluster start {r['start']:.1f} s; "
                f"peak RSS per worker {', '.join(f'{p:.0f}' for p in r['peaks'])} MB  ({load()})"
            )
            shares = ", ".join(f"{100 * c / r['seconds']:.0f}" for c in r["cpu"])
            print(
                f"  CPU: workers {', '.join(f'{c:.1f}' for c in r['cpu'])} s (on a CPU {shares} % of the wall time), "
                f"client and scheduler {r['client_cpu']:.1f} s; "
                f"{r['bytes'] / 1e6 / sum(r['cpu']):.1f} MB per worker CPU second"
            )
        speedup = runs[1]["seconds"] / runs[2]["seconds"]
        verdict = "meets" if speedup >= SCALING_TARGET else "misses"
        print(
            f"scaling: 2 workers {speedup:.2f}x 1 worker ({verdict} the {SCALING_TARGET}x target); "
            f"in worker CPU time per MB, 2 workers cost {sum(runs[2]['cpu']) / sum(runs[1]['cpu']):.2f}x 1 worker"
        )

    if "compare" not in args.skip:
        dataset = work / "ds-2w"
        if not dataset.exists():
            ingest_on(paths, 2, dataset)
        from_files, from_dataset, regressions = compare_sets(paths, dataset)
        half = len(paths) // 2
        print(
            f"\ncompare {half} against {len(paths) - half} captures: {from_files:.1f} s decoded on 2 workers, "
            f"{from_dataset:.1f} s from the dataset; regressions at 2 %: {', '.join(regressions) or 'none'} "
            f"(layer {SLOW_LAYER} was made {SLOW_PCT:g} % slower)  ({load()})"
        )

    if big is not None:
        size = big.stat().st_size / 1e6
        print(f"\nlarge capture: {size:.0f} MB")
        shutil.rmtree(work / "ds-big", ignore_errors=True)
        for name, cli in (
            ("report", ["report", str(big), "--format", "json", "-o", os.devnull]),
            ("compare", ["compare", str(big), str(big), "--format", "json", "-o", os.devnull]),
            ("ingest", ["ingest", str(big), "-o", str(work / "ds-big"), "--workers", "1"]),
        ):
            code, seconds, peak = run_cli(cli)
            verdict = "under" if peak < RSS_TARGET_MB else "OVER"
            print(
                f"{name:8s} exit {code}, {seconds:.1f} s ({size / seconds:.0f} MB/s), peak RSS {peak:.0f} MB "
                f"({verdict} the {RSS_TARGET_MB} MB target)  ({load()})"
            )

    if "carry" not in args.skip:
        carry = DATA / f"carry-{args.big_mb:g}MB.trace"
        if not carry.exists() or carry.stat().st_size < args.big_mb * 1e6:
            t0 = time.perf_counter()
            write_carry_capture(carry, args.big_mb)
            print(f"\nwrote {carry} in {time.perf_counter() - t0:.0f} s")
        size = carry.stat().st_size / 1e6
        print(f"\nlarge capture with console text, a task lane, CPU counters, NPU buffer declarations: {size:.0f} MB")
        code, seconds, peak = run_cli(["report", str(carry), "--format", "json", "-o", os.devnull])
        verdict = "under" if peak < RSS_TARGET_MB else "OVER"
        print(
            f"report   exit {code}, {seconds:.1f} s ({size / seconds:.1f} MB/s), peak RSS {peak:.0f} MB "
            f"({verdict} the {RSS_TARGET_MB} MB target)  ({load()})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
