"""Fuzzing campaign: tens of thousands of hostile inputs through ``tracer``, in-process, seeded.

Usage (from the project root)::

    .venv/bin/python benchmarks/fuzz_campaign.py                   # 10,000 inputs, campaign 1
    .venv/bin/python benchmarks/fuzz_campaign.py --count 50000 --campaign 7 --json fuzz.json
    .venv/bin/python benchmarks/fuzz_campaign.py --campaign 1 --only 4711     # one input again
    .venv/bin/python benchmarks/fuzz_campaign.py --hostile --count 5000       # issue 26's classes only

Every input is a real file of ``tests/data`` or ``captures/`` (a capture, another tool's raw trace,
each firmware log, each budget kind, an ELF built from ``tests/data/elf``) changed by one to three
seeded mutations (``tests/fuzzing.py`` says which), given to one of the commands that read its
kind, through ``tracer.cli.main.main(argv)`` in this process. Input ``i`` of campaign ``c`` is
made from ``random.Random(f"{c}:{i}")`` alone: ``--only i`` makes and runs it again.

Each run must return an exit code of the contract (0 ok, 1 check failed, 2 usage, 3 capture, 4
source), raise nothing, print no traceback, finish within ``--max-seconds`` and not raise the
process's peak memory by more than ``--max-rss-growth`` MB. The campaign prints the count of inputs
per format and per exit code, every failure (with how to reproduce it; the input is kept under
``benchmarks/data/fuzz-failures/``), the slowest input and the peak RSS, and exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import collections
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from fuzzing import (
    FORMATS,
    build_elf,
    elf_trace,
    load_seeds,
    make_case,
    make_hostile_case,
    outcome_json,
    problems,
    run_case,
)

FAILURES = Path(__file__).resolve().parent / "data" / "fuzz-failures"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10_000, help="inputs to run (default 10000)")
    parser.add_argument("--campaign", type=int, default=1, help="the campaign's seed (default 1)")
    parser.add_argument("--start", type=int, default=0, help="first input index (default 0)")
    parser.add_argument("--only", type=int, help="run input ONLY of the campaign alone, and show what it did")
    parser.add_argument("--max-seconds", type=float, default=30.0, help="time bound per input (default 30 s)")
    parser.add_argument("--max-rss-growth", type=float, default=512.0, help="peak-memory growth bound per input, MB")
    parser.add_argument("--json", metavar="PATH", help="also write the counts and failures as JSON")
    parser.add_argument(
        "--hostile",
        action="store_true",
        help="only the structure-aware classes of issue 26 (tests/fuzz_hostile.py), one generator per input",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="tracer-fuzz-") as tmp:
        work = Path(tmp)
        elf = build_elf(work)
        if elf is None:
            print("arm-none-eabi-gcc not installed: no ELF inputs", file=sys.stderr)
        seeds = load_seeds(elf)
        trace = elf_trace(elf, work) if elf is not None else None
        print(
            f"campaign {args.campaign}: seeds per format: "
            + ", ".join(f"{f} {len(seeds.get(f, []))}" for f in FORMATS),
            file=sys.stderr,
        )
        if args.only is not None:
            case = (make_hostile_case if args.hostile else make_case)(args.campaign, args.only, seeds)
            outcome = run_case(case, work, trace, timeout=args.max_seconds * 2)
            print(json.dumps(outcome_json(outcome), indent=2))
            print("problems:", problems(outcome, args.max_seconds, args.max_rss_growth) or "none")
            return 0
        return campaign(args, seeds, work, trace)


def campaign(args: argparse.Namespace, seeds: dict, work: Path, trace: Path | None) -> int:
    per_format: collections.Counter[str] = collections.Counter()
    per_code: collections.Counter[str] = collections.Counter()
    per_pair: collections.Counter[tuple[str, str]] = collections.Counter()
    per_mutation: collections.Counter[str] = collections.Counter()
    failures = []
    slowest = None
    hungriest = None
    started = time.perf_counter()
    make = make_hostile_case if args.hostile else make_case
    for index in range(args.start, args.start + args.count):
        case = make(args.campaign, index, seeds)
        outcome = run_case(case, work, trace, timeout=args.max_seconds * 2)
        code = "raised" if outcome.code is None else str(outcome.code)
        per_format[case.format] += 1
        per_code[code] += 1
        per_pair[(case.format, code)] += 1
        for name in set(case.mutations):
            per_mutation[name] += 1
        if slowest is None or outcome.seconds > slowest.seconds:
            slowest = outcome
        if hungriest is None or outcome.rss_growth_mb > hungriest.rss_growth_mb:
            hungriest = outcome
        found = problems(outcome, args.max_seconds, args.max_rss_growth)
        if found:
            failures.append((outcome, found))
            FAILURES.mkdir(parents=True, exist_ok=True)
            (FAILURES / f"c{args.campaign}-{index}-{case.format}").write_bytes(case.data)
            print(f"FAIL {outcome.describe()}: {found}", file=sys.stderr)
        done = index - args.start + 1
        if done % 500 == 0:
            rate = done / (time.perf_counter() - started)
            print(f"  {done:,} inputs, {len(failures)} failures, {rate:.1f} inputs/s", file=sys.stderr)
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report(args, per_format, per_code, per_pair, per_mutation, failures, (slowest, hungriest), elapsed, peak)
    return 1 if failures else 0


def report(args, per_format, per_code, per_pair, per_mutation, failures, extremes, elapsed, peak) -> None:
    slowest, hungriest = extremes
    codes = sorted(per_code, key=lambda c: (not c.isdigit(), c))
    print(
        f"\ncampaign {args.campaign}: {sum(per_format.values()):,} inputs (indices {args.start}.."
        f"{args.start + args.count - 1}) in {elapsed:.0f} s ({sum(per_format.values()) / elapsed:.1f} inputs/s)"
    )
    width = max(len(f) for f in per_format)
    print(f"\n{'format':<{width}}  {'inputs':>7}  " + "  ".join(f"exit {c:>6}" for c in codes))
    for fmt in sorted(per_format):
        print(f"{fmt:<{width}}  {per_format[fmt]:>7,}  " + "  ".join(f"{per_pair[(fmt, c)]:>11,}" for c in codes))
    print(f"{'all':<{width}}  {sum(per_format.values()):>7,}  " + "  ".join(f"{per_code[c]:>11,}" for c in codes))
    print("\nmutations applied (inputs): " + ", ".join(f"{k} {v:,}" for k, v in sorted(per_mutation.items())))
    if slowest is not None:
        print(f"\nslowest input: {slowest.seconds:.2f} s, exit {slowest.code}: {slowest.describe()}")
    if hungriest is not None:
        print(f"largest peak-memory growth of one input: {hungriest.rss_growth_mb:.0f} MB: {hungriest.describe()}")
    print(f"peak RSS of the campaign process: {peak:.0f} MB")
    print(f"\nfailures: {len(failures)}")
    for outcome, found in failures[:50]:
        print(f"  {outcome.describe()}: {'; '.join(found)}")
        print(
            f"    again: .venv/bin/python benchmarks/fuzz_campaign.py --campaign {args.campaign} --only {outcome.case.index}"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "campaign": args.campaign,
                    "start": args.start,
                    "count": args.count,
                    "seconds": round(elapsed, 1),
                    "per_format": dict(per_format),
                    "per_exit_code": dict(per_code),
                    "per_format_and_code": {f"{f} {c}": n for (f, c), n in sorted(per_pair.items())},
                    "slowest": outcome_json(slowest) if slowest else None,
                    "largest_rss_growth": outcome_json(hungriest) if hungriest else None,
                    "peak_rss_mb": round(peak),
                    "failures": [dict(outcome_json(o), problems=found) for o, found in failures],
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    sys.exit(main())
