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
