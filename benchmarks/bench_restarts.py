"""Benchmark: a target that restarts inside a capture costs the same per restart, however many.

Usage (from the project root)::

    .venv/bin/python benchmarks/bench_restarts.py                     # 1, 10, 40, 100, 200, 500 runs
    .venv/bin/python benchmarks/bench_restarts.py --counts 1 10 40 --check

It takes the raw stream of the demo capture (``captures/demo.trace``: one boot of the QEMU demo,
20 inferences) and writes it N times in a row to one raw file (in ``benchmarks/data/``,
git-ignored): a target that boots, runs, and boots again, N-1 restarts. For each N it runs
``tracer report FILE --format json`` in its own process and measures wall and CPU time (user +
system) and peak RSS (``wait4``), and checks the report: N sessions, N-1 restarts, no record
counted lost, 20 x N inferences, all complete.

The reference, in the same run, is the single boot (N = 1): the cost of a restart is
``(time(N) - time(1)) / (N - 1)``, and the cost is linear when that stays the same as N grows.
``--check`` exits 1 if the CPU cost per restart at the largest N is more than twice the one at the
smallest N above 1, or if a report is wrong.
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

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
sys.path.insert(0, str(ROOT))

from tracer.capture.reader import open_capture

LINEAR_SLACK = 2.0  # per-restart cost at the largest N over that at the smallest, at most


def demo_stream() -> bytes:
    """The ITM bytes of the demo capture, as the target sent them."""
    with open_capture(ROOT / "captures" / "demo.trace") as reader:
        return b"".join(chunk.data for chunk in reader.chunks())


def tracer_exe() -> list[str]:
    exe = shutil.which("tracer", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "tracer"]


def run_report(path: Path) -> tuple[float, float, float, dict[str, object]]:
    """``tracer report path``: wall (s), CPU (s), peak RSS (MB) and the report."""
    out = path.with_suffix(".json")
    start = time.perf_counter()
    with out.open("w") as stdout:
        proc = subprocess.Popen(
            [*tracer_exe(), "report", str(path), "--format", "json"], stdout=stdout, stderr=subprocess.PIPE
        )
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) not in (0, 1):  # 1: a finding failed the check, still a report
        raise SystemExit(f"tracer report {path} failed: {err}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, json.loads(out.read_text())


def problems_of(report: dict[str, object], runs: int, per_run: int) -> list[str]:
    """What is wrong with the report of ``runs`` boots."""
    capture = report["capture"]
    inferences = report["inferences"]
    assert isinstance(capture, dict) and isinstance(inferences, dict)
    wrong = []
    if capture.get("sessions") != runs or len(capture.get("restarts", [])) != runs - 1:
        wrong.append(f"sessions {capture.get('sessions')}, restarts {len(capture.get('restarts', []))}")
    if capture["loss"]["lost_records"]:
        wrong.append(f"{capture['loss']['lost_records']} records counted lost")
    if inferences["count"] != runs * per_run or inferences["complete"] != runs * per_run:
        wrong.append(f"{inferences['count']} inferences, {inferences['complete']} complete")
    return wrong


def main() -> int:
    """Run the benchmark; print a table; with ``--check``, exit 1 on a missed target."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--counts",
        type=int,
        nargs="+",
        default=[1, 10, 40, 100, 200, 500],
        help="boots in a row per file (1 is added: it is the reference)",
    )
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = parser.parse_args()
    counts = sorted({1, *args.counts})
    if len(counts) < 2:
        parser.error("give at least one count above 1")
    DATA.mkdir(exist_ok=True)
    stream = demo_stream()
    rows = []
    for n in counts:
        path = DATA / f"demo_restarts_{n}.swo"
        path.write_bytes(stream * n)
        wall, cpu, rss, report = run_report(path)
        rows.append(
            {"runs": n, "bytes": len(stream) * n, "wall_s": wall, "cpu_s": cpu, "rss_mb": rss, "report": report}
        )
    per_run = rows[0]["report"]["inferences"]["count"]
    base = rows[0]
    print(f"demo stream {len(stream)} bytes, {per_run} inferences per boot; reference: one boot")
    print(
        f"{'boots':>6} {'MB':>7} {'wall s':>8} {'CPU s':>7} {'RSS MB':>7} {'CPU/restart ms':>15} {'x first':>8}  report"
    )
    first_cost = None
    failures = []
    for row in rows:
        n = int(row["runs"])
        wrong = problems_of(row["report"], n, per_run)
        failures += [f"{n} boots: {w}" for w in wrong]
        cost = (row["cpu_s"] - base["cpu_s"]) / (n - 1) if n > 1 else None
        if cost is not None and first_cost is None:
            first_cost = cost
        row["cpu_per_restart_ms"] = None if cost is None else cost * 1000
        ratio = "" if cost is None or not first_cost else f"{cost / first_cost:8.2f}"
        print(
            f"{n:>6} {row['bytes'] / 1e6:7.2f} {row['wall_s']:8.2f} {row['cpu_s']:7.2f} {row['rss_mb']:7.0f} "
            f"{'' if cost is None else f'{cost * 1000:15.1f}':>15} {ratio:>8}  {'ok' if not wrong else '; '.join(wrong)}"
        )
    last = rows[-1]["cpu_per_restart_ms"]
    linear = first_cost is not None and last is not None and last <= LINEAR_SLACK * first_cost * 1000
    print(
        f"cost per restart at {counts[-1]} boots / at {counts[1]} boots: "
        f"{last / (first_cost * 1000):.2f} (linear if about 1; target <= {LINEAR_SLACK})"
    )
    if args.json:
        args.json.write_text(json.dumps([{k: v for k, v in r.items() if k != "report"} for r in rows], indent=2))
    if not linear:
        failures.append("cost per restart grows with the number of restarts")
    for failure in failures:
        print(f"MISSED: {failure}")
    return 1 if args.check and failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
