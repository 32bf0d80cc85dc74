"""Slow paths of hostile inputs, made linear or bounded: measured, each against a reference in the
same run (docs/limits.md).

Usage (from the project root)::

    .venv/bin/python benchmarks/bench_inputs.py                    # about 3-4 minutes
    .venv/bin/python benchmarks/bench_inputs.py --long-mb 16 32 --short-mb 1 4 --labels 20000

What it measures:

1. **One endless log line** (``LineSplitter.feed``, fed 64 KiB pieces as ``read_log`` does): the
   splitter at ``--long-mb`` sizes (default 16 and 32 MB), and as the reference the quadratic
   splitter it replaced (kept below, verbatim) at ``--old-mb`` sizes (default 2 and 4 MB; 16 MB
   took it 18 s, 32 MB 74 s). Linear: time doubles when the size doubles; quadratic: quadruples.
   Then ``tracer report`` on a log of one ``--long-mb[0]`` MB line, in its own process (wall time,
   peak RSS from ``wait4``).
2. **A log of short lines** (``tracer report``, own process): peak RSS at each ``--short-mb`` size
   (default 1 and 4 MB), against a one-line log's (the start-up). Bounded: the RSS does not grow
   with the log (it took 1.1 GB at 16 MB before the console text was bounded).
3. **An ELF with many unsized symbols** (``--labels``, default 20,000 assembler labels with no
   ``.size`` after one sized function, built by ``arm-none-eabi-as``/``ld``): lookups of every
   PC of a capture in process, the walk-back lookup this replaced against ``SymbolIndex``, then
   ``tracer decode --elf`` on a raw capture of 14,000 PC samples (69 KB, every PC distinct; it took
   96-120 s before) in its own process.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from test_elf_bounds import walk_back_reference  # the lookup SymbolIndex replaced

from tracer.elf.image import SymbolIndex, open_elf
from tracer.telemetry.logs.lines import LineSplitter

PIECE = 64 * 1024
TRACER = [sys.executable, "-m", "tracer"]


class QuadraticSplitter:
    """The splitter this replaced (reference only): every piece re-joins and re-splits the line so far."""

    def __init__(self) -> None:
        self._partial = ""
        self._cr = False

    def feed(self, text: str) -> list[str]:
        if self._cr and text.startswith("\n"):
            text = text[1:]
        self._cr = False
        data = self._partial + text
        if data.endswith("\r"):
            self._cr = True
        parts = re.split(r"\r\n|\r|\n", data)
        self._partial = parts.pop()
        return parts


def time_splitter(splitter: object, megabytes: float) -> float:
    """Seconds to feed one line of ``megabytes`` MB in 64 KiB pieces, then its end."""
    piece = "x" * PIECE
    pieces = int(megabytes * 1024 * 1024 / PIECE)
    start = time.perf_counter()
    for _ in range(pieces):
        splitter.feed(piece)
    splitter.feed("\n")
    return time.perf_counter() - start


def run(args: list[str]) -> tuple[float, float, str]:
    """Run a command; return its wall time (s), peak RSS (MB, from wait4) and stderr."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(args)} failed ({code}): {err}")
    return wall, usage.ru_maxrss / 1024, err


def long_line(sizes: list[float], old_sizes: list[float], tmp: Path) -> None:
    print("1. one endless line: LineSplitter.feed in 64 KiB pieces")
    new = {mb: time_splitter(LineSplitter(), mb) for mb in sizes}
    old = {mb: time_splitter(QuadraticSplitter(), mb) for mb in old_sizes}
    for mb, seconds in new.items():
        print(f"   now       {mb:6.1f} MB: {seconds:7.3f} s ({mb / seconds:7.1f} MB/s)")
    for mb, seconds in old.items():
        print(f"   reference {mb:6.1f} MB: {seconds:7.3f} s ({mb / seconds:7.1f} MB/s)  (the quadratic splitter)")
    if len(sizes) >= 2:
        a, b = sizes[0], sizes[-1]
        print(f"   now: x{b / a:g} the size takes x{new[b] / new[a]:.2f} the time (linear: x{b / a:g})")
    if len(old_sizes) >= 2:
        a, b = old_sizes[0], old_sizes[-1]
        print(f"   reference: x{b / a:g} the size takes x{old[b] / old[a]:.2f} the time (quadratic: x{(b / a) ** 2:g})")
    common = max(set(new) & set(old), default=None)
    if common is None:
        common = old_sizes[-1]
        new[common] = time_splitter(LineSplitter(), common)
    print(f"   at {common:g} MB the splitter is {old[common] / new[common]:.0f}x faster than the reference")
    log = tmp / "long.log"
    with open(log, "w") as f:
        f.write("INFO - start\n" + "y" * int(sizes[0] * 1024 * 1024) + "\nINFO - end\n")
    wall, rss, err = run([*TRACER, "report", str(log), "-o", os.devnull])
    cut = "cut" in err
    print(f"   tracer report, one {sizes[0]:g} MB line: {wall:.2f} s, peak RSS {rss:.0f} MB (line cut and said: {cut})")


def short_lines(sizes: list[float], tmp: Path) -> None:
    print("2. a log of short lines: tracer report, peak RSS")
    one = tmp / "one.log"
    one.write_text("x1\n")
    wall0, rss0, _ = run([*TRACER, "report", str(one), "-o", os.devnull])
    print(f"   reference: a one-line log: {wall0:.2f} s, {rss0:.0f} MB (start-up)")
    for mb in sizes:
        path = tmp / f"short{mb:g}.log"
        line = 0
        with open(path, "w") as f:
            written = 0
            while written < mb * 1024 * 1024:
                text = f"x{line % 100}\n"
                f.write(text)
                written += len(text)
                line += 1
        wall, rss, _ = run([*TRACER, "report", str(path), "-o", os.devnull])
        print(
            f"   {mb:5g} MB ({line:,} lines): {wall:7.1f} s, peak RSS {rss:5.0f} MB ({rss - rss0:+.0f} MB over the start-up)"
        )


def build_elf(labels: int, tmp: Path) -> Path | None:
    gas, ld = shutil.which("arm-none-eabi-as"), shutil.which("arm-none-eabi-ld")
    if gas is None or ld is None:
        return None
    source = tmp / "labels.s"
    lines = [".syntax unified", ".thumb", ".text", ".global big", ".type big, %function", "big:"]
    for k in range(labels):
        lines += [f".global l{k}", f".type l{k}, %function", f"l{k}:", "  nop", "  nop"]
    lines += [".size big, . - big"]
    source.write_text("\n".join(lines) + "\n")
    obj, elf = tmp / "labels.o", tmp / "labels.elf"
    subprocess.run([gas, "-mcpu=cortex-m4", str(source), "-o", str(obj)], check=True)
    subprocess.run([ld, "-Ttext=0x8000", "-e", "big", str(obj), "-o", str(elf)], check=True)
    return elf


def unsized_symbols(labels: int, packets: int, tmp: Path) -> None:
    print(f"3. an ELF with {labels:,} unsized symbols: PC lookups")
    elf = build_elf(labels, tmp)
    if elf is None:
        print("   arm-none-eabi-as/ld not installed: skipped")
        return
    image = open_elf(elf)
    funcs = sorted((s for s in image.symbols.values() if s.kind == "func"), key=lambda s: s.address)
    low, high = funcs[0].address, funcs[-1].address + 4
    pcs = [low + 2 + (k * (high - low - 4) // packets) & ~1 for k in range(packets)]
    index = SymbolIndex(funcs)
    start = time.perf_counter()
    now = [index.lookup(pc) for pc in pcs]
    t_new = time.perf_counter() - start
    sample = pcs[:: max(1, packets // 500)]
    start = time.perf_counter()
    old = [walk_back_reference(funcs, pc) for pc in sample]
    t_old = (time.perf_counter() - start) * len(pcs) / len(sample)
    assert old == [index.lookup(pc) for pc in sample], "the index must agree with the walk"
    assert all(found is not None for found in now)
    print(
        f"   {packets:,} lookups: now {t_new * 1e3:.1f} ms; reference walk-back {t_old:.1f} s "
        f"(extrapolated from {len(sample)}): {t_old / t_new:,.0f}x"
    )
    raw = tmp / "pcs.swo"
    raw.write_bytes(b"".join(b"\x17" + pc.to_bytes(4, "little") for pc in pcs))
    wall, rss, _ = run([*TRACER, "decode", str(raw), "--elf", str(elf), "--format", "ndjson", "-o", os.devnull])
    print(
        f"   tracer decode --elf on {raw.stat().st_size / 1024:.0f} KB of PC samples: {wall:.2f} s, peak RSS {rss:.0f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--long-mb", type=float, nargs="+", default=[16, 32], metavar="MB")
    parser.add_argument("--old-mb", type=float, nargs="+", default=[2, 4], metavar="MB")
    parser.add_argument("--short-mb", type=float, nargs="+", default=[1, 4], metavar="MB")
    parser.add_argument("--labels", type=int, default=20_000)
    parser.add_argument("--packets", type=int, default=14_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-inputs-") as tmp:
        long_line(args.long_mb, args.old_mb, Path(tmp))
        short_lines(args.short_mb, Path(tmp))
        unsized_symbols(args.labels, args.packets, Path(tmp))


if __name__ == "__main__":
    main()
