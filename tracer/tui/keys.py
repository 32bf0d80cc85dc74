"""Every key of the app in one table: the bindings, the help screen and the command palette read it."""

from __future__ import annotations

import dataclasses

from textual.binding import Binding, BindingType


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
    Key(
        "space",
        "space",
        "toggle_pause",
        "Pause",
        "pause or resume (replay: feeding stops; live: the screen holds still, recording goes on)",
        True,
        "playback",
    ),
    Key(
        "left",
        "←",
        "previous_inference",
        "Prev",
        "previous inference (anywhere in the capture, live too)",
        True,
        "playback",
    ),
    Key(
        "right",
        "→",
        "next_inference",
        "Next",
        "next inference; at the newest of a paused replay, step to the next one",
        True,
        "playback",
    ),
    Key("f", "f", "follow", "Follow", "follow the newest inference again", False, "playback"),
    Key("g", "g", "goto", "Go to", "go to an inference by number (any in the capture, live too)", False, "playback"),
    Key(
        "plus,equals_sign",
        "+",
        "faster",
        "Faster",
        "replay faster (×2; past ×64: as fast as possible)",
        True,
        "playback",
    ),
    Key("minus", "-", "slower", "Slower", "replay slower (÷2, down to ×1/16)", True, "playback"),
    Key(
        "n",
        "n",
        "next_finding",
        "Next finding",
        "next inference and layer that shows the chosen finding (none chosen: any finding), on the timeline",
        True,
        "findings",
    ),
    Key("N", "N", "previous_finding", "Prev finding", "previous inference and layer that shows it", False, "findings"),
    Key(
        "slash",
        "/",
        "filter",
        "Filter",
        "filter layers by name, op or engine (enter keeps it, escape clears); findings, console: search",
        True,
        "layers",
    ),
    Key(
        "s",
        "s",
        "sort_next",
        "Sort",
        "sort layers by the next column (#, p50, p99, max, ratio, jitter, name)",
        False,
        "layers",
    ),
    Key("S", "S", "sort_reverse", "Reverse", "reverse the sort order", False, "layers"),
    Key("h", "h", "cursor(-1)", "Cursor ←", "timeline: move the time cursor left (l: right)", False, "timeline"),
    Key("l", "l", "cursor(1)", "Cursor →", "timeline: move the time cursor right", False, "timeline"),
    Key(
        "H",
        "H",
        "cursor_edge(-1)",
        "Edge ←",
        "timeline: cursor to the previous edge of a layer, handler or inference",
        False,
        "timeline",
    ),
    Key("L", "L", "cursor_edge(1)", "Edge →", "timeline: cursor to the next edge", False, "timeline"),
    Key(
        "m",
        "m",
        "mark",
        "Mark",
        "timeline: mark a range from the cursor (measured in cycles and time); again: clear it",
        False,
        "timeline",
    ),
    Key(
        "right_square_bracket",
        "]",
        "zoom_in",
        "Zoom in",
        "timeline: zoom in around the cursor (also the mouse wheel, around the pointer)",
        False,
        "timeline",
    ),
    Key(
        "left_square_bracket",
        "[",
        "zoom_out",
        "Zoom out",
        "timeline: zoom out (past the inference: its neighbours)",
        False,
        "timeline",
    ),
    Key(
        "full_stop",
        ".",
        "scroll_later",
        "Scroll →",
        "timeline: scroll right, into the next inferences (also shift+wheel)",
        False,
        "timeline",
    ),
    Key("comma", ",", "scroll_earlier", "Scroll ←", "timeline: scroll left", False, "timeline"),
    Key(
        "c",
        "c",
        "compare",
        "Compare",
        "mark the shown inference to compare with: the spans table then says, per layer, its cycles "
        "there, the difference and the interrupts or tasks that explain it (again: clear)",
        False,
        "timeline",
    ),
    Key("0", "0", "zoom_reset", "Fit", "timeline: fit the whole inference", False, "timeline"),
    Key(
        "1",
        "1",
        "show_tab('overview')",
        "Overview",
        "overview: latency, memory, layers, detail, findings, console",
        False,
        "views",
    ),
    Key(
        "2",
        "2",
        "show_tab('timeline')",
        "Timeline",
        "timeline: a Gantt across inferences, with interrupts and gaps",
        False,
        "views",
    ),
    Key(
        "3",
        "3",
        "show_tab('findings')",
        "Findings",
        "findings (tracer check's rules): up/down choose, enter goes to the evidence",
        False,
        "views",
    ),
    Key(
        "4",
        "4",
        "show_tab('console')",
        "Console",
        "the firmware's console (ITM port 0 / UART text), errors in red",
        False,
        "views",
    ),
    Key(
        "5",
        "5",
        "show_tab('layer')",
        "Layer",
        "the selected layer: statistics, budget, findings, history, sampled operators (also enter on a layer)",
        False,
        "views",
    ),
    Key(
        "backspace",
        "backspace",
        "go_back",
        "Back",
        "back to where you were before the last jump (enter, n N, g, a click on a bar)",
        False,
        "views",
    ),
    Key(
        "tab",
        "tab",
        "focus_next",
        "Next pane",
        "move the keys to the next pane of the view (shift+tab: back)",
        False,
        "views",
    ),
    Key("e", "e", "export", "Export", "write the report JSON (the tracer report contract) to a file", True, "general"),
    Key("p", "p", "screenshot", "Screenshot", "write the screen as SVG to the current folder", False, "general"),
    Key("question_mark", "?", "help", "Help", "this help", True, "general"),
    Key("q", "q", "quit", "Quit", "quit", True, "general"),
)

# Keys of one view only (written in the help, bound by the view itself).
VIEW_KEYS: tuple[tuple[str, str, str], ...] = (
    ("↑ ↓ j k", "layers table, spans table: select a layer; findings: choose a finding; help: scroll", "views"),
    ("enter", "layers table: the layer's own view (5)", "layers"),
    ("enter", "findings: go to the first inference and layer that shows the chosen finding", "findings"),
    ("< >", "layers and spans tables: scroll the columns that do not fit", "layers"),
    ("pgup pgdn", "scroll the table, the findings or the console", "views"),
    ("escape", "clear the filter, else the range, else the chosen finding", "general"),
)

MOUSE_HELP: tuple[tuple[str, str], ...] = (
    ("click a layer row", "select the layer (its history, distribution and timeline bars)"),
    ("click a column header", "sort by that column (again: reverse)"),
    ("wheel on the timeline", "zoom in and out around the pointer"),
    ("shift+wheel, scrollbar", "scroll the timeline"),
    ("click the timeline", "place the cursor; on a bar: select that layer (or inference)"),
    ("click a latency bar", "select that inference (amber); 2 shows it on the timeline"),
    ("click a tab", "switch views"),
)


def bindings() -> list[BindingType]:
    """The app's bindings (ctrl+c quits with the interrupted exit code; ctrl+p opens the palette)."""
    out: list[BindingType] = [Binding(k.keys, k.action, k.title, show=k.footer, key_display=k.display) for k in KEYS]
    out.append(Binding("ctrl+c", "interrupt", "Quit", show=False, priority=True))
    out.append(Binding("escape", "escape", "Back", show=False))
    return out
