"""Shared fixtures: run the CLI in-process, find test data."""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tracer.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


@dataclass
class CliResult:
    """What a ``tracer`` run returned and printed."""

    code: int
    out: str
    err: str


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """Run ``tracer ARGS`` in-process (like west's ``cmd()``) and capture stdout/stderr."""

    def run(*args: str) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        code = main([str(a) for a in args])
        monkeypatch.undo()
        return CliResult(code, out.getvalue(), err.getvalue())

    return run


@pytest.fixture
def data_dir() -> Path:
    """The test data folder."""
    return DATA
