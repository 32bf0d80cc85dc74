"""Every key of the app in one table: the bindings, the help screen and the command palette read it."""

from __future__ import annotations

import dataclasses

from textual.binding import Binding


@dataclasses.dataclass(frozen=True)
class Key:
    """One key and what it does.

    Attributes:
        keys: Textual key names (comma-separated alternatives).
        display: How the key is written for people.
        action: The app action it runs.
        title: A short name (footer, command palette).
        help: One line for the help screen and the palette.
        footer: Shown in the footer.
        group: Heading in the help screen.
    """

    keys: str
    display: str
    action: str
    title: str
    help: str
    footer: bool = False
    group: str = "general"


KEYS: tuple[Key, ...] = (
    Key("space", "space", "toggle_pause", "Pause", "pause or resume (replay: feeding stops; live: the screen holds still, recording goes on)", True, "playback"),
    Key("left", "←", "previous_inference", "Prev", "previous inference (timeline, latency plot)", True, "playback"),
    Key("right", "→", "next_inference", "Next", "next inference; paused replay steps to the next inference", True, "playback"),
    Key("f", "f", "follow", "Follow", "follow the newest inference again", False, "playback"),
    Key("plus,equals_sign", "+", "faster", "Faster", "replay faster (×2; past ×64: as fast as possible)", True, "playback"),
    Key("minus", "-", "slower", "Slower", "replay slower (÷2, down to ×1/16)", True, "playback"),
    Key("slash", "/", "filter", "Filter", "filter layers by name, op or engine (enter keeps it, escape clears)", True, "layers"),
    Key("s", "s", "sort_next", "Sort", "sort layers by the next column (#, p50, p99, max, ratio, jitter, name)", False, "layers"),
    Key("S", "S", "sort_reverse", "Reverse", "reverse the sort order", False, "layers"),
    Key("right_square_bracket", "]", "zoom_in", "Zoom in", "timeline: zoom in (also the mouse wheel)", False, "timeline"),
    Key("left_square_bracket", "[", "zoom_out", "Zoom out", "timeline: zoom out", False, "timeline"),
    Key("full_stop", ".", "scroll_later", "Scroll →", "timeline: scroll right (also shift+wheel, the scrollbar)", False, "timeline"),
    Key("comma", ",", "scroll_earlier", "Scroll ←", "timeline: scroll left", False, "timeline"),
    Key("0", "0", "zoom_reset", "Fit", "timeline: fit the whole inference", False, "timeline"),
    Key("1", "1", "show_tab('overview')", "Overview", "overview: latency, memory, layers, detail, findings, console", False, "views"),
    Key("2", "2", "show_tab('timeline')", "Timeline", "timeline of one inference (Gantt)", False, "views"),
    Key("3", "3", "show_tab('findings')", "Findings", "findings (tracer check's rules) with their evidence and fixes", False, "views"),
    Key("4", "4", "show_tab('console')", "Console", "the firmware's console (ITM port 0 / UART text)", False, "views"),
    Key("e", "e", "export", "Export", "write the report JSON (the tracer report contract) to a file", True, "general"),
    Key("question_mark", "?", "help", "Help", "this help", True, "general"),
    Key("q", "q", "quit", "Quit", "quit", True, "general"),
)

MOUSE_HELP: tuple[tuple[str, str], ...] = (
    ("click a layer row", "select the layer (its history, distribution and timeline bars)"),
    ("click a column header", "sort by that column (again: reverse)"),
    ("wheel on the timeline", "zoom in and out around the pointer"),
    ("shift+wheel, scrollbar", "scroll the timeline"),
    ("click a timeline bar", "select that layer"),
    ("click a latency bar", "show that inference on the timeline"),
    ("click a tab", "switch views"),
)


def bindings() -> list[Binding]:
    """The app's bindings (ctrl+c quits with the interrupted exit code; ctrl+p opens the palette)."""
    out = [Binding(k.keys, k.action, k.title, show=k.footer, key_display=k.display) for k in KEYS]
    out.append(Binding("ctrl+c", "interrupt", "Quit", show=False, priority=True))
    out.append(Binding("escape", "escape", "Back", show=False))
    return out
