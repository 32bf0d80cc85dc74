"""The selected inference's layers, in time order (the timeline's table), and the comparison with
the inference marked by ``c``: per layer its cycles there, the difference, and the interrupt
handlers and tasks that ran inside it in one and not the other.
"""

from __future__ import annotations

from typing import Any

from tracer.analysis.settings import DEFAULT_TOLERANCE_PCT
from tracer.session.held import Stretch
from tracer.session.ring import InferenceRecord
from tracer.session.snapshot import SessionSnapshot
from tracer.tui import format as fmt
from tracer.tui import palette as pal
from tracer.tui.navigation import shown
from tracer.tui.state import UiState
from tracer.tui.widgets.base import View
from tracer.tui.widgets.line_table import Cell, Column, LineTable


class SpansTable(View, LineTable):
    """The layers of the selected inference, in time order; the cursor row is the selected layer."""

    interval = 0.5
    depends = frozenset({"inference", "layer", "finding", "compare"})
    COLUMNS = (
        Column("index", "#", right=True, keep=True),
        Column("name", "layer", min_width=10, keep=True),
        Column("engine", "engine"),
        Column("start", "start", right=True),
        Column("cycles", "cycles", right=True, keep=True),
        Column("time", "time", right=True),
        Column("share", "share", right=True),
        Column("ratio", "ratio", right=True, keep=True),
        Column("flags", "findings", min_width=8, keep=True),
        Column("ref", "vs #", right=True),
        Column("delta", "Δ cycles", right=True),
        Column("why", "interrupts, tasks in it", min_width=8),
    )
    DROP = ("time", "start", "engine", "share")

    layout_axes = ()  # it arranges its columns for its size itself (``LineTable.on_resize``)

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """List the spans of the selected inference."""
        found = shown(snapshot, ui)
        if found is None:
            self.set_rows([])
            return
        record = found[1]
        inf = record.inference
        rows = {row.index: row for row in snapshot.layers}
        clock = snapshot.status.clock_hz
        total = inf.latency_cycles or sum(s.cycles for s in inf.layers) or 1
        t0 = inf.start if inf.start is not None else (inf.layers[0].start if inf.layers else 0)
        flagged = snapshot.diagnosis.flags.at(inf.number)
        findings = snapshot.findings
        reference = compared(snapshot, ui, record)
        ref_spans = {s.layer: s for s in reference[1].inference.layers} if reference is not None else {}
        here_events = found[0].events.of(record)
        ref_events = reference[0].events.of(reference[1]) if reference is not None else None
        self.set_headers(
            [
                f"vs #{reference[1].number}" if c.key == "ref" and reference is not None else c.header
                for c in self.COLUMNS
            ]
        )
        out = []
        for span in inf.layers:
            indices, severity = flagged.get(span.layer, ((), ""))
            ids = " ".join(dict.fromkeys(findings[i].id for i in indices if i < len(findings)))
            flags = " ".join(filter(None, ("" if span.complete else "lost", ids)))
            row = rows.get(span.layer)
            label = row.info.label if row else f"#{span.layer}"
            engine = row.info.engine.value if row else "cpu"
            ratio = span.cycles / row.predicted if row is not None and row.predicted else None
            tolerance = row.tolerance_pct if row else DEFAULT_TOLERANCE_PCT
            out.append(
                (
                    str(span.layer),
                    (
                        (str(span.layer), pal.MUTED),
                        (label, "bold" if span.layer == ui.layer else pal.TEXT),
                        (engine.upper(), f"bold {pal.NPU[0] if engine == 'npu' else pal.CPU[0]}"),
                        (f"+{fmt.cycles(span.start - t0)}", pal.MUTED),
                        (fmt.cycles(span.cycles), f"bold {pal.BRIGHT}"),
                        (fmt.cycle_time(span.cycles, clock), pal.MUTED),
                        (f"{span.cycles / total:.1%}", pal.TEXT),
                        (f"{ratio:.2f}" if ratio is not None else "-", f"bold {pal.ratio_colour(ratio, tolerance)}"),
                        (flags, pal.SEVERITY.get(severity, pal.WARN)),
                        *_compare_cells(
                            span, ref_spans.get(span.layer), here_events, ref_events, reference is not None
                        ),
                    ),
                )
            )
        self.set_rows(out)
        if ui.layer is not None and str(ui.layer) in self.keys:
            self.move_cursor(self.keys.index(str(ui.layer)), announce=False)


def compared(snapshot: SessionSnapshot, ui: UiState, record: InferenceRecord) -> tuple[Stretch, InferenceRecord] | None:
    """The inference marked to compare with (``c``), when it is held and not the one shown."""
    if ui.compare is None:
        return None
    number, ordinal = ui.compare
    found = snapshot.locate(ordinal=ordinal) if ordinal is not None else None
    if found is None or found[1].number != number:
        found = snapshot.locate(number=number)
    if found is None or found[1] is record:
        return None
    return found


def _inside(events: Any, start: int, end: int) -> dict[str, int]:
    """Cycles of each interrupt handler and task (by name) that ran inside [start, end)."""
    out: dict[str, int] = {}
    for isr in events.isrs:
        cycles = min(end, isr.end) - max(start, isr.start)
        if cycles > 0:
            out[isr.name] = out.get(isr.name, 0) + cycles
    for task in events.tasks:
        cycles = min(end, task.end) - max(start, task.start)
        name = task.name or f"task {task.task:#x}"
        if cycles > 0 and name != "inference":
            out[name] = out.get(name, 0) + cycles
    return out


def _compare_cells(span: Any, ref: Any, here: Any, there: Any, comparing: bool) -> tuple[Cell, Cell, Cell]:
    """``vs #N`` cycles, the difference, and what ran inside the layer in one and not the other."""
    if not comparing:
        return ("", ""), ("", ""), ("", "")
    if ref is None:
        return ("-", pal.MUTED), ("-", pal.MUTED), ("", "")
    delta = span.cycles - ref.cycles
    big = abs(delta) > 0.05 * max(1, ref.cycles)
    colour = (pal.BAD if delta > 0 else pal.GOOD) if big else pal.TEXT
    mine, theirs = _inside(here, span.start, span.end), _inside(there, ref.start, ref.end)
    why = []
    for name in sorted(set(mine) | set(theirs), key=lambda k: -abs(mine.get(k, 0) - theirs.get(k, 0))):
        more = mine.get(name, 0) - theirs.get(name, 0)
        if more:
            why.append(f"{'+' if more > 0 else '-'}{name} {fmt.cycles(abs(more))}")
    return (
        (fmt.cycles(ref.cycles), pal.MUTED),
        (f"{delta:+,}", f"bold {colour}"),
        (" ".join(why), pal.ISR if why else pal.MUTED),
    )
