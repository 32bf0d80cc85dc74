"""The decoding process takes its fresh memory in small pages (tracer.pipeline.memory)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import tracer.pipeline.windows as windows
from tracer.pipeline.capture import decode_capture
from tracer.pipeline.memory import HUGEPAGE_ENV, prefer_small_pages

DEMO = Path(__file__).resolve().parent.parent / "captures" / "demo.trace"
try:
    multiarray = importlib.import_module("numpy._core.multiarray")
except ImportError:  # numpy 1.26
    multiarray = importlib.import_module("numpy.core.multiarray")
toggle = getattr(multiarray, "_set_madvise_hugepage", None)
pytestmark = pytest.mark.skipif(toggle is None, reason="this numpy has no huge-page switch")


@pytest.fixture
def hint_on() -> Iterator[None]:
    """numpy's huge-page hint on for the test, put back as it was after."""
    before = toggle(True)
    yield
    toggle(before)


def hinting() -> bool:
    """Whether numpy hints huge pages now (reading the switch sets it: put it back)."""
    state = bool(toggle(True))
    toggle(state)
    return state


def test_decoding_a_capture_turns_the_hint_off(hint_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(HUGEPAGE_ENV, raising=False)
    assert hinting()
    decoded = decode_capture(DEMO)
    assert decoded.timeline.inferences.number.size > 0
    assert not hinting()


def test_reading_in_windows_turns_the_hint_off(hint_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A capture read in windows makes fresh columns for every window: small pages too."""
    monkeypatch.delenv(HUGEPAGE_ENV, raising=False)
    monkeypatch.setattr(windows, "WHOLE_BYTES", 0)
    assert hinting()
    assert len(list(windows.read_windows(DEMO))) >= 1
    assert not hinting()


def test_the_users_numpy_setting_wins(hint_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HUGEPAGE_ENV, "1")
    assert prefer_small_pages() is True
    assert hinting()
