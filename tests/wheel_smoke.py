"""Smoke test of an installed tracer (a release wheel, cibuildwheel's test step): run it as
``python tests/wheel_smoke.py`` from a checkout, against the tracer installed in that Python.

It checks that the compiled kernels were built and load (not the pure-Python fallback), then runs
the README's main job on the shipped demo capture and a TPIU decode of a corpus capture, with
known results. Exits non-zero (an assertion) on any difference.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> str:
    """``tracer ARGS`` in-process; returns stdout (exit status 0 required)."""
    from tracer.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*args])
    assert code == 0, (args, code)
    return out.getvalue()


def smoke() -> None:
    """The checks (see the module docstring)."""
    import tracer
    from tracer.native import active

    assert not Path(tracer.__file__).is_relative_to(ROOT), f"tracer is imported from the checkout: {tracer.__file__}"
    kernels = active()
    assert set(kernels.values()) == {"native"}, kernels
    report = json.loads(
        run(
            "report",
            str(ROOT / "captures" / "demo.trace"),
            "--budget",
            str(ROOT / "captures" / "demo_budget.toml"),
            "--format",
            "json",
        )
    )
    assert report["inferences"]["count"] == report["inferences"]["complete"] == 20, report["inferences"]
    assert report["inferences"]["latency_cycles"]["min"] == 153519
    assert len(report["layers"]) == 10
    stats = json.loads(
        run(
            "decode",
            str(ROOT / "tests" / "data" / "corpus" / "sigrok_stm32f105" / "trace_example_swo_tpiu.bin"),
            "--format",
            "stats",
        )
    )
    assert stats["packets"]["pc_sample"] == 393 and stats["tpiu"]["frames"] == 491, stats
    listing = run(
        "decode",
        str(ROOT / "tests" / "data" / "corpus" / "sigrok_stm32f105" / "trace_example_itm_stream1.bin"),
        "--format",
        "ndjson",
    )
    assert len(listing.splitlines()) == sum(stats["packets"].values())
    print(
        f"tracer {tracer.__version__} from {Path(tracer.__file__).parent}: compiled kernels, demo report and "
        "corpus decode as expected"
    )


if __name__ == "__main__":
    sys.path = [p for p in sys.path if Path(p or ".").resolve() != ROOT]  # the installed tracer, not the checkout's
    smoke()
