"""``tracer demo`` without QEMU: clear errors (exit 4 naming what to install, exit 2 on bad options)."""

from __future__ import annotations

from pathlib import Path

from tracer.cli.main import build_parser


def test_missing_tools_exit_4_and_say_what_to_install(tmp_path: Path, run_cli, monkeypatch) -> None:
    """With neither QEMU nor the cross compiler on PATH, demo exits 4 and names the packages."""
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no tools at all
    done = run_cli("demo", "--inferences", "2")
    assert done.code == 4
    assert "qemu-system-arm" in done.err and "arm-none-eabi-gcc" in done.err
    assert "apt-get install --no-install-recommends" in done.err and "Traceback" not in done.err


def test_bad_inference_count_is_a_usage_error(run_cli) -> None:
    """--inferences 0 exits 2 before anything runs."""
    done = run_cli("demo", "--inferences", "0")
    assert done.code == 2 and "at least 1" in done.err


def test_unknown_scenario_is_refused(run_cli) -> None:
    """Only the implemented scenarios are accepted (argparse: exit 2)."""
    done = run_cli("demo", "--scenario", "no-such-scenario")
    assert done.code == 2


def test_help_teaches() -> None:
    """demo and report have descriptions, metavars and real examples."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "verb")
    for verb in ("demo", "report"):
        text = sub.choices[verb].format_help()
        assert "examples:" in text and f"tracer {verb}" in text
    assert "--inferences N" in sub.choices["demo"].format_help()
    assert "--per-inference" in sub.choices["report"].format_help()
