"""The text report, the gate's text and ``--help`` fitted to the terminal (80 columns readable),
and as wide as they are when piped (what scripts read does not change).

The terminal is a real pseudo-terminal (``pty``) given to ``tracer`` as its stdout."""

from __future__ import annotations

import os
import pty
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tracer.cli.main import VERBS, build_parser
from tracer.export.fit_width import fit_text

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "captures" / "demo.trace"
BUDGET = ROOT / "captures" / "demo_budget.toml"
MLEK_LOG = ROOT / "tests" / "data" / "logs" / "mlek_img_class_fvp_profile.log"


def _on_terminal(*args: object, columns: int = 80) -> str:
    """``tracer ARGS`` with a pseudo-terminal as stdout of ``columns`` columns; what it drew."""
    main, child = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "50"}
    with subprocess.Popen(
        [sys.executable, "-m", "tracer", *map(str, args)],
        stdout=child,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    ) as proc:
        os.close(child)
        chunks = []
        while True:
            try:
                data = os.read(main, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=120)
    os.close(main)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def _piped(*args: object) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tracer", *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    return done.stdout


@pytest.mark.parametrize("verb", ["", *VERBS])
@pytest.mark.parametrize("columns", [80, 200])
def test_help_fits_80_columns(run_cli, monkeypatch, verb: str, columns: int) -> None:
    """Every --help line within 80 columns, on a narrow terminal and a wide one alike."""
    monkeypatch.setenv("COLUMNS", str(columns))
    done = run_cli(*([verb] if verb else []), "--help")
    assert done.code == 0
    wide = [line for line in done.out.splitlines() if len(line) > 80]
    assert not wide, wide


@pytest.mark.parametrize("verb", VERBS)
def test_wrapped_examples_still_parse(run_cli, monkeypatch, verb: str) -> None:
    """An example broken over lines ends each but the last with '\\': joined, it is the command."""
    monkeypatch.setenv("COLUMNS", "80")
    text = run_cli(verb, "--help").out
    examples = text.split("\nexamples:\n", 1)[1].split("\n\n", 1)[0] if "\nexamples:\n" in text else ""
    joined = re.sub(r" \\\n\s+", " ", examples)
    commands = [line.strip() for line in joined.splitlines() if line.strip().startswith("tracer ")]
    assert commands or verb == "list", f"{verb}: no example"
    for command in commands:
        words = shlex.split(command, comments=True)
        starts = [0] + [i + 1 for i, w in enumerate(words) if w in ("&&", "|")]
        for start in starts:
            part = words[start:]
            part = part[: next((i for i, w in enumerate(part) if w in ("&&", "|")), len(part))]
            if part and part[0] == "tracer":
                try:
                    build_parser().parse_args(part[1:])
                except SystemExit:
                    pytest.fail(f"{verb}: example does not parse: {' '.join(part)}")


def test_report_on_a_terminal_fits_it_and_piped_stays_wide() -> None:
    terminal = _on_terminal("report", DEMO, "--budget", BUDGET)
    piped = _piped("report", DEMO, "--budget", BUDGET)
    assert max(len(line) for line in piped.splitlines()) > 80  # the full table when piped
    assert terminal.strip() and max(len(line) for line in terminal.splitlines()) <= 80
    # the same numbers and words, only laid out again (a table's key columns repeat)
    assert set(piped.split()) == set(terminal.split())
    assert terminal.count("conv0") > piped.count("conv0")  # the layer table cut in column groups


def test_gate_text_on_a_terminal_fits_it() -> None:
    terminal = _on_terminal("check", MLEK_LOG, "--budget", BUDGET, "--clock", "400M")
    piped = _piped("check", MLEK_LOG, "--budget", BUDGET, "--clock", "400M")
    assert max(len(line) for line in piped.splitlines()) > 80
    assert max(len(line) for line in terminal.splitlines()) <= 80
    assert set(piped.split()) == set(terminal.split())


def test_fit_text_keeps_what_fits_and_cuts_wide_tables() -> None:
    table = [
        "  #  name   alpha  beta",
        "  -  -----  -----  ----",
        "  0  conv0     10    20",
    ]
    text = "\n".join(table)
    assert fit_text(text, 80) == text
    cut = fit_text(text, 16).splitlines()
    assert cut == [
        "  #  name   alpha",
        "  -  -----  -----",
        "  0  conv0     10",
        "",
        "  #  name   beta",
        "  -  -----  ----",
        "  0  conv0    20",
    ]
    sentence = "findings    " + "word " * 30
    lines = fit_text(sentence.rstrip(), 40).splitlines()
    assert all(len(line) <= 40 for line in lines) and all(line.startswith(" " * 12) for line in lines[1:])
