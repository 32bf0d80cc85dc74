"""Every benchmark and evaluation script in ``benchmarks/`` still imports: they run by hand, not
in the suite, so a module they name that moves would otherwise go unnoticed until someone measures.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCHMARKS.glob("*.py")))
def test_benchmark_script_imports(script: str) -> None:
    name = script.removesuffix(".py")
    # (a process of its own: the scripts put benchmarks/ and tests/ on sys.path as they run;
    # workload.py, the module they share, is imported after they did)
    paths = [str(BENCHMARKS), str(BENCHMARKS.parent / "tests")]
    code = f"import sys; sys.path[:0] = {paths!r}; import {name}"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_bench_energy_attributes_a_short_recording() -> None:
    """The energy benchmark on 20 s of recording: every layer attributed (its speed is not judged
    here; its alignment is, which a change to how the timeline carries sync marks once broke).
    """
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_energy.py"), "--seconds", "20"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    layers = [line for line in done.stdout.splitlines() if line.strip().startswith("layer ")]
    assert len(layers) == 8 and all("truth" in line for line in layers), done.stdout
