"""SVG snapshots of the screen, made by the app itself: every view on the shipped demo capture; the
overview, the first finding's evidence (``n``) and the layer's own view (``5``) at 80x24, 120x40
and 200x60 for the demo and every fault scenario of the QEMU demo (``tests/data/scenarios``, see
its README); and a seek into a large capture at each size.

A small fixture on ``App.export_screenshot()`` (pytest-textual-snapshot needs pytest below 9):
the screen is exported as SVG at a fixed size after the replay has ended (no rates, no wall-clock
text), Rich's random ``terminal-NNN`` ids are normalised, and the result is compared with
``tests/__snapshots__/test_tui_snapshots/<name>.svg``. To accept a change after looking at it,
regenerate with ``TRACER_SNAPSHOT_UPDATE=1`` (or pytest's ``--snapshot-update``, registered in
conftest.py)::

    TRACER_SNAPSHOT_UPDATE=1 .venv/bin/pytest tests/test_tui_snapshots.py

On a mismatch the new screenshot is written beside the old one as ``<name>.new.svg``.
Textual is pinned exactly (pyproject), because its releases may change rendering.
"""

from __future__ import annotations

import difflib
import html
import os
import re
from pathlib import Path

import pytest
from session_streams import DEMO_BUDGET, DEMO_CAPTURE, ROOT

from tracer.tui.screenshot import screenshot

SNAPSHOTS = Path(__file__).resolve().parent / "__snapshots__" / "test_tui_snapshots"
SIZE = (160, 48)


def normalise(svg: str) -> str:
    """Remove what changes from run to run (Rich's per-export CSS class prefix)."""
    return re.sub(r"terminal-\d+", "terminal", svg)


def screen_text(svg: str) -> list[str]:
    """The characters on screen, a line per row (to say in words what a mismatch changed)."""
    rows: dict[float, list[tuple[float, str]]] = {}
    for x, y, text in re.findall(r'<text[^>]* x="([\d.]+)" y="([\d.]+)"[^>]*>([^<]*)</text>', svg):
        rows.setdefault(float(y), []).append((float(x), html.unescape(text).replace("\xa0", " ")))
    return ["".join(t for _, t in sorted(cells)) for _, cells in sorted(rows.items())]


def updating(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--snapshot-update", default=False)) or (
        os.environ.get("TRACER_SNAPSHOT_UPDATE") == "1"
    )


def check(request: pytest.FixtureRequest, name: str, svg: str) -> None:
    path = SNAPSHOTS / f"{name}.svg"
    got = normalise(svg)
    if updating(request) or not path.exists():
        SNAPSHOTS.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
        if not updating(request):
            pytest.fail(f"no snapshot yet: wrote {path}; look at it, then run again")
        return
    if path.read_text(encoding="utf-8") != got:
        new = path.with_suffix(".new.svg")
        new.write_text(got, encoding="utf-8")
        old = path.read_text(encoding="utf-8")
        words = difflib.unified_diff(screen_text(old), screen_text(got), "snapshot", "now", n=1, lineterm="")
        said = "\n".join(list(words)[:60]) or "(the same characters: only colours or styles differ)"
        pytest.fail(
            f"{name} differs from {path}; the new screen is {new} (TRACER_SNAPSHOT_UPDATE=1 accepts it)\n{said}"
        )


def shot(
    keys: tuple[str, ...], monkeypatch: pytest.MonkeyPatch, capture: Path = DEMO_CAPTURE, size: tuple[int, int] = SIZE
) -> str:
    """Replay a capture to its end, press ``keys``, export the screen."""
    monkeypatch.chdir(ROOT)  # the screen shows the capture's path as given: keep it relative
    budget = [str(DEMO_BUDGET.relative_to(ROOT))]  # every capture here is of the demo network
    name = capture.relative_to(ROOT)
    return screenshot(str(name), budget, keys, size, title=f"tracer replay {name}")


VIEWS = {
    "overview": (),
    "overview_selected_sorted": ("down", "down", "down", "s"),
    "timeline": ("2",),
    "timeline_zoomed": ("2", "left", "left", "right_square_bracket", "right_square_bracket", "full_stop"),
    "findings": ("3",),
    "console": ("4",),
    "help": ("question_mark",),
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_view_snapshot(view: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    check(request, view, shot(VIEWS[view], monkeypatch))


SCENARIOS = ROOT / "tests" / "data" / "scenarios"
CAPTURES = {"demo": DEMO_CAPTURE, **{p.stem: p for p in sorted(SCENARIOS.glob("*.trace"))}}
SIZES = {"80x24": (80, 24), "120x40": (120, 40), "200x60": (200, 60)}
# The screen as it opens; the first finding's evidence; the selected layer's own view.
TRIAGE = {"overview": (), "finding": ("n",), "layer": ("5",)}


def test_every_fault_scenario_has_a_capture() -> None:
    assert set(CAPTURES) == {"demo", "isr-jitter", "missing-clean", "stack-overflow", "arena-too-small"}


@pytest.mark.parametrize("view", sorted(TRIAGE))
@pytest.mark.parametrize("size", sorted(SIZES))
@pytest.mark.parametrize("capture", sorted(CAPTURES))
def test_sizes_snapshot(
    capture: str, size: str, view: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    svg = shot(TRIAGE[view], monkeypatch, CAPTURES[capture], SIZES[size])
    check(request, f"{capture}-{size}-{view}", svg)


@pytest.mark.parametrize("size", sorted(SIZES))
def test_seek_into_a_large_capture_snapshot(
    size: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``2 g 1500 Enter`` in a capture of 2,000 inferences (a synthetic stream: an interrupt in
    layer 3 of every 5th), with a ring of 256: the inference is read again from the file; no
    stray rows, no stale axis, the header says where it is in the file."""
    from session_streams import build_stream, write_capture

    write_capture(tmp_path / "large.trace", build_stream(2_000, isr_every=5, isr_cycles=3_000).data)
    monkeypatch.chdir(tmp_path)
    svg = screenshot("large.trace", (), ("2", "g", "1", "5", "0", "0", "enter"), SIZES[size])
    check(request, f"seek-large-{size}", svg)


def test_docs_screenshot_is_the_overview_snapshot() -> None:
    """docs/tui.svg is the app's own screenshot of the shipped capture (regenerate both together:
    ``python -m tracer.tui.screenshot docs/tui.svg``)."""
    docs = ROOT / "docs" / "tui.svg"
    assert normalise(docs.read_text(encoding="utf-8")) == (SNAPSHOTS / "overview.svg").read_text(encoding="utf-8")
