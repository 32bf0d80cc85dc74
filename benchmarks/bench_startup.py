"""Start-up benchmark: a new user's first ``tracer report``, from a fresh clone into a fresh venv.

Usage (from the project root)::

    .venv/bin/python benchmarks/bench_startup.py            # about a minute (installs numpy & co.)
    .venv/bin/python benchmarks/bench_startup.py --install wheel --json startup.json

It clones this repository (HEAD, committed files only) into a temporary folder, makes a venv
there and installs the project as the README says (``pip install -e .``; ``--install wheel``:
``pip install .``), with no extras. Then, in the clone:

* cold: the README's main job, ``tracer report captures/demo.trace --budget
  captures/demo_budget.toml``, run once right after the install: no ``__pycache__`` of tracer
  anywhere, nothing compiled or cached at run time (the compiled kernels were built by the
  install); the operating system's page cache is left as it is (the install just read the files);
* warm: the same command, best of ``--repeat`` runs;
* ``tracer --help``, best of ``--repeat`` runs;
* the interpreter alone (``python -c pass``), best of ``--repeat``: the floor of any command on
  this machine at this moment (shared machines are slower when busy; compare against it);
* for each, the CPU time (user + system, from ``wait4``) besides the wall time;
* the size of the venv (``du``), the core install, and of a bare venv made beside it
  (``python -m venv``, nothing installed): what tracer and its dependencies add is the difference.
  The target is held against that: a bare venv holds only the Python's own installer, and
  its size is the Python's choice (on 3.11, pip and setuptools, about 26 MB; on 3.12 and later,
  pip alone).

It prints the cache state it measured (``__pycache__`` folders of tracer before and after the
cold run, whether the compiled kernels are there) and each figure against its target:
cold <= 1.5 s, warm <= 0.6 s, ``--help`` <= 0.25 s, the core install <= 120 MB. ``--check`` exits 1 if one is
missed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORT = ["report", "captures/demo.trace", "--budget", "captures/demo_budget.toml"]
TARGETS = {"cold_s": 1.5, "warm_s": 0.6, "help_s": 0.25, "venv_mb": 120.0}


def timed(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Run a command to completion (it must succeed); return its wall and CPU (user + system) seconds."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"{' '.join(args)} failed ({os.waitstatus_to_exitcode(status)}): {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def best(runs: list[tuple[float, float]]) -> tuple[float, float]:
    """The fastest wall time and the least CPU time of several runs."""
    return min(r[0] for r in runs), min(r[1] for r in runs)


def tracer_pycache(clone: Path, venv: Path) -> int:
    """``__pycache__`` folders of tracer: in the clone (editable install) or the venv (wheel)."""
    trees = [clone / "tracer", *venv.rglob("site-packages/tracer")]
    return sum(1 for tree in trees for _ in tree.rglob("__pycache__"))


def du_mb(path: Path) -> float:
    """Disk use of a folder, MB (10^6 bytes), as ``du`` counts it (allocated blocks)."""
    out = subprocess.run(["du", "-s", "--block-size=1", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--install",
        choices=("editable", "wheel"),
        default="editable",
        help="pip install -e . (the README's way, default) or pip install .",
    )
    parser.add_argument("--repeat", type=int, default=5, help="warm runs; the fastest counts (default 5)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="tracer-startup-") as tmp:
        clone, venv = Path(tmp) / "tracer", Path(tmp) / "venv"
        t0 = time.perf_counter()
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        head = subprocess.run(
            ["git", "-C", str(clone), "log", "-1", "--format=%h"], capture_output=True, text=True, check=True
        ).stdout.strip()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = venv / "bin" / "python"
        target = ["-e", "."] if args.install == "editable" else ["."]
        subprocess.run([str(python), "-m", "pip", "install", "-q", *target], cwd=clone, check=True)
        install_s = time.perf_counter() - t0
        tracer = str(venv / "bin" / "tracer")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "TRACER_"))}
        kernels = sorted(p.name for p in (clone / "tracer").glob("_kernels*")) + sorted(
            p.name for p in venv.rglob("tracer/_kernels*")
        )
        before = tracer_pycache(clone, venv)
        cold = timed([tracer, *REPORT], clone, env)
        after = tracer_pycache(clone, venv)
        warm = best([timed([tracer, *REPORT], clone, env) for _ in range(args.repeat)])
        help_ = best([timed([tracer, "--help"], clone, env) for _ in range(args.repeat)])
        floor = best([timed([str(python), "-c", "pass"], clone, env) for _ in range(args.repeat)])
        venv_mb = du_mb(venv)
        bare = Path(tmp) / "bare-venv"
        subprocess.run([sys.executable, "-m", "venv", str(bare)], check=True)
        bare_mb = du_mb(bare)

    load = os.getloadavg()[0]
    print(f"fresh clone of {head}, fresh venv, pip install -q {' '.join(target)} (no extras): {install_s:.0f} s")
    print(
        f"cache state: tracer __pycache__ folders before the cold run {before}, after it {after}; "
        f"compiled kernels: {', '.join(kernels) or 'none'}; nothing else cached by tracer; page cache not dropped"
    )
    print(
        f"machine: {os.cpu_count()} cores, load average {load:.2f}; interpreter alone (python -c pass): "
        f"{floor[0]:.3f} s, {floor[1]:.3f} s CPU"
    )
    print("(wall-clock figures depend on what else the machine runs; CPU time, user + system, much less)\n")
    print(
        f"venv with tracer (no extras) {venv_mb:.1f} MB; a bare venv of Python "
        f"{sys.version_info.major}.{sys.version_info.minor} (its own installer only) {bare_mb:.1f} MB\n"
    )
    figures = {"cold_s": cold[0], "warm_s": warm[0], "help_s": help_[0], "venv_mb": venv_mb - bare_mb}
    cpu = {"cold_s": cold[1], "warm_s": warm[1], "help_s": help_[1]}
    names = {
        "cold_s": "tracer report (README main job), cold",
        "warm_s": f"tracer report, warm (best of {args.repeat})",
        "help_s": f"tracer --help, warm (best of {args.repeat})",
        "venv_mb": "core install: venv minus a bare venv (MB)",
    }
    ok = True
    for key, value in figures.items():
        passed = value <= TARGETS[key]
        ok &= passed
        ratio = "" if key == "venv_mb" else f"  (CPU {cpu[key]:.3f} s; {value / floor[0]:4.1f}x the interpreter alone)"
        print(f"{names[key]:<44}{value:8.3f}  target <= {TARGETS[key]:g}  {'PASS' if passed else 'MISS'}{ratio}")
    if args.json:
        summary = {
            **{k: round(v, 3) for k, v in figures.items()},
            "venv_total_mb": round(venv_mb, 1),
            "bare_venv_mb": round(bare_mb, 1),
            "interpreter_s": round(floor[0], 3),
            "cpu_s": {k: round(v, 3) for k, v in cpu.items()},
            "load_average": round(load, 2),
            "install": args.install,
            "commit": head,
            "pycache_before": before,
            "pycache_after": after,
            "kernels": kernels,
        }
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
