"""The layers table: per layer, predicted against measured, coloured by how far off budget."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual.binding import Binding, BindingType

from tracer.power.attribute import LayerEnergy
from tracer.session.energy import EnergyState
from tracer.session.snapshot import LayerRow, SessionSnapshot
from tracer.tui import format as fmt
from tracer.tui import palette as pal
from tracer.tui.state import SORT_KEYS, UiState
from tracer.tui.widgets.base import View
from tracer.tui.widgets.line_table import Cell, Column, LineTable

COLUMNS = (
    Column("index", "#", right=True, keep=True),
    Column("name", "layer", min_width=10, keep=True, max_width=14),
    Column("op", "op"),
    Column("engine", "engine"),
    Column("predicted", "predicted", right=True),
    Column("p50", "p50", right=True),
    Column("p99", "p99", right=True),
    Column("max", "max", right=True),
    Column("time", "p50 time", right=True),
    Column("ratio", "ratio", right=True, keep=True),
    Column("jitter", "jitter", right=True),
    Column("energy", "µJ", right=True),
    Column("power", "mW", right=True),
    Column("base", "base p50", right=True),
    Column("delta", "Δp50", right=True),
    Column("flags", "flags", min_width=8, keep=True, max_width=18),
)
# When the table is narrower than its columns (80x24), these go first (# layer ratio flags stay).
DROP = ("time", "op", "max", "predicted", "p99", "power", "engine", "base", "jitter", "energy", "p50", "delta")
# Every column sorts (its header clicked, or ``s`` going through the columns shown); "time" is p50's.
SORT_OF_COLUMN = {c.key: ("p50" if c.key == "time" else c.key) for c in COLUMNS}
SEVERITY_RANK = {"info": 1, "warning": 2, "error": 3}

Sorter = Callable[[LayerRow, int | None], tuple]
SORTERS: dict[str, Sorter] = {
    "index": lambda r, b: (r.index,),
    "name": lambda r, b: (r.info.label.lower(), r.index),
    "op": lambda r, b: (r.info.op or "", r.index),
    "engine": lambda r, b: (r.info.engine.value, r.index),
    "predicted": lambda r, b: (r.predicted if r.predicted is not None else -1.0, r.index),
    "p50": lambda r, b: (r.cycles.p50 if r.cycles else -1, r.index),
    "p99": lambda r, b: (r.cycles.p99 if r.cycles else -1, r.index),
    "max": lambda r, b: (r.cycles.max if r.cycles else -1, r.index),
    "ratio": lambda r, b: (r.ratio if r.ratio is not None else -1.0, r.index),
    "jitter": lambda r, b: (r.cycles.cv if r.cycles else -1.0, r.index),
    "base": lambda r, b: (b if b is not None else -1, r.index),
    "delta": lambda r, b: (r.cycles.p50 / b - 1 if r.cycles and b else -1e9, r.index),
    "flags": lambda r, b: (SEVERITY_RANK.get(r.severity or "", 0), len(r.flags), r.index),
}
# The energy columns sort by what the recording measured, which the row does not hold.
ENERGY_SORTERS: dict[str, Callable[[LayerRow, LayerEnergy | None], tuple]] = {
    "energy": lambda r, e: (e.energy_uj if e is not None else -1.0, r.index),
    "power": lambda r, e: (e.power_mw if e is not None else -1.0, r.index),
}
# "The slowest (worst, most changed, most spending) first" is what people sort for.
DESCENDING = {"predicted", "p50", "p99", "max", "ratio", "jitter", "base", "delta", "flags", "energy", "power"}


def matches(row: LayerRow, text: str) -> bool:
    """Whether a layer passes the filter (words must all appear in its name, op, engine or index)."""
    haystack = f"{row.index} {row.info.label} {row.info.op} {row.info.engine.value} {' '.join(row.flags)}".lower()
    return all(word in haystack for word in text.lower().split())


def delta_cell(p50: int | None, base: int | None) -> Cell:
    """``+12.3%`` of p50 against the baseline's (red when slower by more than 5%, green when faster)."""
    if p50 is None or not base:
        return ("" if base is None else "-", pal.MUTED)
    change = p50 / base - 1
    colour = pal.BAD if change > 0.05 else pal.GOOD if change < -0.05 else pal.TEXT
    return (f"{change:+.1%}", f"bold {colour}")


def energy_cells(energy: LayerEnergy | None, recorded: bool) -> tuple[Cell, Cell]:
    """``12.3±0.4`` µJ per execution and its mean power in mW (empty without a recording: the
    columns then do not show; ``-`` for a layer the recording did not measure).
    """
    if energy is None:
        return ("-", pal.MUTED) if recorded else ("", pal.MUTED), ("-", pal.MUTED) if recorded else ("", pal.MUTED)
    style = pal.TEXT if energy.method == "integrated" else pal.ACCENT  # fitted across inferences
    return (
        (f"{fmt.energy(energy.energy_uj)}±{fmt.spread(energy.interval_uj)}", f"bold {style}"),
        (fmt.energy(energy.power_mw), pal.TEXT),
    )


def cells(
    row: LayerRow,
    clock_hz: int | None,
    base: int | None = None,
    energy: LayerEnergy | None = None,
    recorded: bool = False,
) -> tuple[Cell, ...]:
    """The cells of one layer, in column order (``base``: the baseline's p50, if any; ``energy``:
    its energy per execution when the session has a power recording, ``recorded``).
    """
    c = row.cycles
    info = row.info
    ratio = row.ratio
    engine_colour = pal.NPU[0] if info.engine.value == "npu" else pal.CPU[0]
    return (
        (str(row.index), pal.MUTED),
        (info.name or info.label, "bold" if info.name else pal.MUTED),
        (info.op or "-", pal.TEXT if info.op else pal.MUTED),
        (info.engine.value.upper(), f"bold {engine_colour}"),
        (fmt.cycles(row.predicted), pal.MUTED if row.predicted is None else pal.TEXT),
        (fmt.cycles(c.p50) if c else "-", f"bold {pal.BRIGHT}"),
        (fmt.cycles(c.p99) if c else "-", pal.TEXT),
        (fmt.cycles(c.max) if c else "-", pal.TEXT),
        (fmt.cycle_time(c.p50, clock_hz) if c else "-", pal.MUTED),
        (f"{ratio:.2f}" if ratio is not None else "-", f"bold {pal.ratio_colour(ratio, row.tolerance_pct)}"),
        (f"±{c.cv:.1%}" if c is not None else "-", pal.WARN if c is not None and c.cv > 0.05 else pal.TEXT),
        *energy_cells(energy, recorded),
        (fmt.cycles(base) if base is not None else "", pal.MUTED),
        delta_cell(c.p50 if c else None, base),
        (" ".join(flag_words(row)), pal.SEVERITY.get(row.severity or "", pal.WARN)),
    )


def flag_words(row: LayerRow) -> tuple[str, ...]:
    """The flags, ``p99 over`` with how far (``p99 over 2.15×``: p99 against the prediction, as the
    ratio column says p50 against it).
    """
    c = row.cycles
    if c is None or not row.predicted:
        return row.flags
    return tuple(f"{word} {c.p99 / row.predicted:.2f}×" if word == "p99 over" else word for word in row.flags)


def energy_subtitle(state: EnergyState) -> str:
    """What the energy columns are: per execution from which recording, or why there are none."""
    name = state.path.replace("\\", "/").rsplit("/", 1)[-1]
    a = state.analysis
    if state.state == "recording" and a is None:
        if not state.following:
            return f"energy: the meter records to {name}; per layer once the run ends"
        why = f" (not yet: {state.message})" if state.message else " …"
        return f"energy: the meter records to {name}; aligning its newest samples{why}"
    if state.state == "reading" and a is None:
        return f"energy: aligning {name} with the capture …"
    if a is None:
        return f"energy: {state.message}"
    simulated = " (SIMULATED)" if a.recording.simulated else ""
    what = f"µJ per execution ±95 %, mW while it ran, from {name}{simulated}"
    if state.state == "reading":
        return f"energy to inference #{state.upto}; aligning the whole of {name} … · {what}"
    if state.state == "recording":
        w = state.window_seconds
        window = "" if w is None else f" (the meter's last {w:.1f} s)" if w < 10 else f" (the meter's last {w:.0f} s)"
        return f"energy of inferences #{state.since}–#{state.upto}{window}, meter recording · {what}"
    return what


class LayersTable(View, LineTable):
    """One row per layer; the cursor row is the selected layer. Left/right stay the app's keys."""

    interval = 0.5
    depends = frozenset({"filter", "sort"})
    COLUMNS = COLUMNS
    DROP = DROP

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "open", "Layer", show=False)]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Layers"

    def action_open(self) -> None:
        """Enter: the selected layer's own view (``backspace`` comes back)."""
        for name, argument in (("remember", None), ("action_show_tab", "layer")):
            action = getattr(self.app, name, None)
            if action is not None:
                action(*(() if argument is None else (argument,)))

    layout_axes = ()  # it arranges its columns for its size itself (``LineTable.on_resize``)

    @property
    def order(self) -> list[int]:
        """Layer indices in display order."""
        return [int(k) for k in self.keys]

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Show the layers of ``snapshot``, filtered and sorted as the user chose."""
        rows = [r for r in snapshot.layers if not ui.filter or matches(r, ui.filter)]
        base = snapshot.baseline
        state = snapshot.energy
        measured = state.analysis.layers if state is not None and state.analysis is not None else {}
        reverse = (ui.sort in DESCENDING) != ui.reverse
        if ui.sort in ENERGY_SORTERS:
            by_energy = ENERGY_SORTERS[ui.sort]
            rows.sort(key=lambda r: by_energy(r, measured.get(r.index)), reverse=reverse)
        else:
            sorter = SORTERS.get(ui.sort, SORTERS["index"])
            rows.sort(key=lambda r: sorter(r, base.get(r.index)), reverse=reverse)
        clock = snapshot.status.clock_hz
        recorded = bool(measured)
        self.set_headers([c.header + self._arrow(c.key, ui) for c in COLUMNS])
        self.set_rows(
            [(str(r.index), cells(r, clock, base.get(r.index), measured.get(r.index), recorded)) for r in rows]
        )
        self.select_layer(ui.layer)
        count = len(snapshot.findings)
        worst = max((f.severity for f in snapshot.findings), key=lambda s: s.rank, default=None)
        self.border_title = "Layers" + (f" · {count} finding{'s' if count != 1 else ''}" if count else "")
        said = [f"Δp50 against {snapshot.baseline_name}"] if snapshot.baseline_name else []
        if state is not None:
            said.append(energy_subtitle(state))
        self.border_subtitle = " · ".join(said)
        self.styles.border_title_color = pal.SEVERITY.get(worst.value, pal.TEXT) if worst is not None else None

    @staticmethod
    def _arrow(column: str, ui: UiState) -> str:
        if SORT_OF_COLUMN.get(column) != ui.sort:
            return ""
        return " ▲" if (ui.sort in DESCENDING) == ui.reverse else " ▼"

    def select_layer(self, index: int | None) -> None:
        """Put the cursor on layer ``index`` (if it is shown)."""
        if index is not None and str(index) in self.keys:
            self.move_cursor(self.keys.index(str(index)), announce=False)

    def layer_at_cursor(self) -> int | None:
        """The layer under the cursor."""
        keys = self.keys
        if not keys or not 0 <= self.cursor_row < len(keys):
            return None
        return int(keys[self.cursor_row])

    def sort_keys(self) -> list[str]:
        """The sort keys of the columns the table has (with something in them), in ``s``'s order."""
        present = [SORT_OF_COLUMN[self.COLUMNS[i].key] for i in sorted(self._present) if self.COLUMNS[i].key != "time"]
        return [k for k in SORT_KEYS if k in present] + [k for k in present if k not in SORT_KEYS]

    def header_sort_key(self, column_key: str) -> str | None:
        """The sort key of a column header, if it sorts."""
        return SORT_OF_COLUMN.get(column_key)

    def cell_text(self, layer: int, column: str) -> str:
        """What a cell shows (tests)."""
        return self.cell(str(layer), column)
