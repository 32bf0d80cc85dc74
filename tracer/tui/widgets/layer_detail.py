"""The selected layer: its statistics, its recent history and the distribution of its cycles."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from rich.text import Text
from textual.widget import Widget
from textual.widgets import Static

from tracer.analysis.sampling import LayerBreakdown
from tracer.analysis.statistics import histogram
from tracer.base.timeline import simulated_npu
from tracer.session.snapshot import LayerRow, SessionSnapshot
from tracer.tui import format as fmt
from tracer.tui import palette as pal
from tracer.tui.fit import flow
from tracer.tui.state import UiState
from tracer.tui.widgets.base import View

SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: np.ndarray, width: int) -> str:
    """The last ``width`` values as one line of eighth blocks (max per column when there are more)."""
    if width <= 0 or values.shape[0] == 0:
        return ""
    if values.shape[0] > width:
        # Group into ``width`` columns and keep each column's maximum: a spike never disappears.
        edges = np.linspace(0, values.shape[0], width + 1).astype(np.int64)
        values = np.maximum.reduceat(values, edges[:-1])
    lo, hi = int(values.min()), int(values.max())
    # Draw at least 5% of the peak as the range: a one-cycle wobble must not look like jitter.
    lo = min(lo, hi - max(1, hi // 20))
    levels = ((values - lo) * (len(SPARK) - 1) // (hi - lo)).astype(np.int64)
    return "".join(SPARK[int(v)] for v in levels)


def _piece(*parts: tuple[str, str]) -> Text:
    text = Text()
    for words, style in parts:
        text.append(words, style=style)
    return text


def calibrated_pieces(row: LayerRow) -> list[Text]:
    """``calibrated 23,012`` ``ratio 0.89`` and, when it does not apply, why (docs/calibrate.md)."""
    if not row.calibration_status:
        return []
    out = []
    if row.calibrated is not None:
        out.append(_piece(("calibrated ", pal.MUTED), (fmt.cycles(row.calibrated), pal.TEXT)))
        c = row.cycles
        if c is not None and row.calibrated:
            ratio = c.p50 / row.calibrated
            out.append(_piece(("cal. ratio ", pal.MUTED), (f"{ratio:.2f}", pal.ratio_colour(ratio, row.tolerance_pct))))
    if row.calibration_status != "calibrated":
        out.append(_piece((f"[{row.calibration_status}]", pal.WARN)))
    return out


def energy_pieces(snapshot: SessionSnapshot, layer: int) -> list[Text]:
    """``energy 62.4 ±0.11 µJ`` ``60.0 mW`` ``18.8 % of the energy, 21.6 % of the time``
    ``integrated, 260 samples`` (``--power``: docs/energy.md), when the recording measured it.
    """
    state = snapshot.energy
    measured = state.analysis.layers.get(layer) if state is not None and state.analysis is not None else None
    if measured is None:
        return []
    return [
        _piece(
            ("energy ", pal.MUTED),
            (f"{fmt.energy(measured.energy_uj)} ±{fmt.spread(measured.interval_uj)} µJ", f"bold {pal.WARN}"),
        ),
        _piece((f"{fmt.energy(measured.power_mw)} mW", pal.TEXT)),
        _piece((f"{measured.energy_share:.1%} of the energy, {measured.time_share:.1%} of the time", pal.MUTED)),
        _piece((f"{measured.method}, {measured.samples:,.1f} samples", pal.MUTED)),
    ]


def budget_pieces(row: LayerRow, clock_hz: int | None) -> list[Text]:
    """``budget 20,381`` ``limit 23,438 (+15%)`` ``p50 1.02×`` ``p99 2.15× over by 20,319``."""
    c = row.cycles
    if row.predicted is None:
        return []
    limit = row.predicted * (1 + row.tolerance_pct / 100)
    out = [
        _piece(("budget ", pal.MUTED), (fmt.cycles(row.predicted), pal.TEXT)),
        _piece(("limit ", pal.MUTED), (fmt.cycles(limit), pal.TEXT), (f" (+{row.tolerance_pct:g}%)", pal.MUTED)),
    ]
    if c is None:
        return out
    for label, value in (("p50", c.p50), ("p99", c.p99)):
        ratio = value / row.predicted
        piece = _piece(
            (f"{label} ", pal.MUTED), (f"{ratio:.2f}×", f"bold {pal.ratio_colour(ratio, row.tolerance_pct)}")
        )
        if value > limit:
            over = value - limit
            piece.append(f" over by {fmt.cycles(over)}", style=f"bold {pal.BAD}")
            if clock_hz:
                piece.append(f" ({fmt.cycle_time(over, clock_hz)})", style=pal.BAD)
        out.append(piece)
    return out


class LayerDetail(View, Static):
    """One layer (the layers table's cursor row): statistics, budget, findings, history,
    distribution, NPU PMU, and what the samples say inside it.

    In the overview it sits in a scrolling box (``#detail-box``); ``detailed`` (its own pane, key
    ``5`` or enter on a layer) it says everything: the findings in full and the sampled
    per-operator table with Vela's prediction.
    """

    interval = 0.5
    depends = frozenset({"layer"})

    DEFAULT_CSS = """
    LayerDetail { height: auto; padding: 0 1; }
    """

    def __init__(
        self, history: Callable[[int, int | None], np.ndarray], detailed: bool = False, *, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.detailed = detailed
        self._history = history

    def _box(self) -> Widget:
        return self.parent if isinstance(self.parent, Widget) else self

    def layout_size(self) -> tuple[int, ...]:
        """Its box's size (its own height follows its text)."""
        size = self._box().content_size
        return (size.width, size.height)

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Draw the selected layer of ``snapshot``."""
        row = snapshot.layer(ui.layer) if ui.layer is not None else None
        if row is None and snapshot.layers:
            row = snapshot.layers[0]
        box = self._box()
        if row is None:
            box.border_title = self.border_title = "Layer"
            self._show(Text("no layer yet", style=pal.MUTED))
            return
        width = max(10, self.content_size.width or box.content_size.width - 3)
        height = 60 if self.detailed else max(4, box.content_size.height)
        info = row.info
        box.border_title = self.border_title = f"Layer {info.index} · {info.label}"
        self._show(self._draw(row, snapshot, width, height))

    def _show(self, text: Text) -> None:
        last = getattr(self, "_last_text", None)
        if text != last:
            self._last_text = text
            # Its height follows its text: laid out again only when the number of lines changed
            # (a layout in a tab switch's answer costs a second paint of the screen).
            lines = text.plain.count("\n")
            self.update(text, layout=last is None or lines != last.plain.count("\n"))

    def _draw(self, row: LayerRow, snapshot: SessionSnapshot, width: int, height: int) -> Text:
        info, c = row.info, row.cycles
        clock = snapshot.status.clock_hz
        text = Text()
        engine_colour = pal.NPU[0] if info.engine.value == "npu" else pal.CPU[0]
        head = [
            _piece((info.engine.value.upper(), f"bold {engine_colour}")),
            _piece((info.op or "op unknown", pal.TEXT)),
        ]
        head += [
            _piece((word, f"bold {pal.SEVERITY.get(severity, pal.MUTED)}"))  # the gate's findings about it
            for word, severity in row.findings
        ]
        text.append_text(flow(head, width))
        text.append("\n")
        budget = budget_pieces(row, clock) + calibrated_pieces(row)
        if budget:
            text.append_text(flow(budget, width))
            text.append("\n")
        if c is None:
            text.append("no complete execution yet", style=pal.MUTED)
            if row.excluded:
                text.append(f" ({row.excluded} left out: their inference lost data)", style=pal.WARN)
            return text
        stats = [
            _piece((f"{label} ", pal.MUTED), (fmt.cycles(value), "bold" if label == "p50" else pal.TEXT))
            for label, value in (("min", c.min), ("p50", c.p50), ("p99", c.p99), ("max", c.max))
        ]
        stats.append(_piece(("cycles", pal.MUTED)))
        stats.append(_piece((f"mean {c.mean:,.1f} ± {c.std:,.1f}", pal.TEXT)))
        stats.append(_piece((f"cv {c.cv:.2%}", pal.MUTED)))
        stats.append(_piece((f"n {c.count:,}", pal.MUTED)))
        if row.excluded:
            stats.append(_piece((f"+{row.excluded:,} incomplete", pal.WARN)))
        if clock:
            stats.append(_piece(("p50 ", pal.MUTED), (fmt.cycle_time(c.p50, clock), pal.TEXT)))
        text.append_text(flow(stats, width))
        text.append("\n")
        energy = energy_pieces(snapshot, info.index)
        if energy:
            text.append_text(flow(energy, width))
            text.append("\n")
        lines = text.plain.count("\n")
        if self.detailed:
            lines += self._findings(text, snapshot, info.index, width)
        values = self._history(info.index, None)
        spark_width = max(1, width - 9)
        text.append("history  ", style=pal.MUTED)
        text.append(sparkline(values[-spark_width * 4 :], spark_width), style=engine_colour)
        text.append("\n")
        pmu_lines = 2 if row.pmu_mean else 0
        sampled = snapshot.extra.get("sampling", {}).get(info.index)  # issue 15
        left = height - lines - 1 - pmu_lines - (2 if sampled is not None else 0)
        # The distribution in the room left, at least a few rows (the panel scrolls to them).
        self._distribution(text, values, max(3, min(left, 8)), width)
        if row.pmu_mean:
            simulated = simulated_npu(snapshot.status.labels)
            pmu = [
                _piece(
                    ("NPU PMU mean" + (" (simulated)" if simulated else "") + ":", pal.WARN if simulated else pal.MUTED)
                )
            ]
            pmu += [_piece((f"{name} {value:,.0f}", pal.TEXT)) for name, value in row.pmu_mean.items()]
            text.append_text(flow(pmu, width))
        operators = _operators(snapshot, info.index)
        if operators is not None and (self.detailed or sampled is None):
            _operator_table(text, operators, width)
        elif sampled is not None:
            _sampled(text, sampled, self._symbol)
        return text

    def _symbol(self, label: str) -> str:
        """A raw address of a hot spot named from the ELF the app was given (``--elf``), if any."""
        name = getattr(getattr(self, "app", None), "symbol_of", None)
        return name(label) if name is not None else label

    def _findings(self, text: Text, snapshot: SessionSnapshot, layer: int, width: int) -> int:
        """The gate's findings about the layer, in full; the lines they took."""
        mine = [f for f in snapshot.findings if f.layer == layer]
        before = text.plain.count("\n")
        for finding in mine:
            severity = finding.severity.value
            text.append(f"{severity.upper()} ", style=f"bold {pal.SEVERITY.get(severity, pal.MUTED)}")
            text.append(f"{finding.id}: ", style=pal.MUTED)
            text.append(finding.message + "\n", style=pal.TEXT)
        return text.plain.count("\n") - before

    def _distribution(self, text: Text, values: np.ndarray, rows: int, width: int) -> None:
        if not len(values):
            return
        edges, counts = histogram(values, rows)
        label_width = max(len(fmt.cycles(e)) for e in edges[:-1])
        bar_width = max(1, width - label_width - 10)
        peak = max(counts) or 1
        for count, lo in zip(counts, edges[:-1]):
            filled = count * bar_width / peak
            full = int(filled)
            bar = "█" * full + (SPARK[int((filled - full) * 8) - 1] if filled - full >= 0.125 else "")
            text.append(f"{fmt.cycles(lo):>{label_width}} ", style=pal.MUTED)
            text.append(f"{bar:<{bar_width}}", style=pal.INFO)
            text.append(f" {count:,}\n", style=pal.MUTED)


def _operators(snapshot: SessionSnapshot, layer: int) -> tuple[Any, ...] | None:
    """The sampled NPU operators of the layer's job (with Vela's prediction), if sampled."""
    analysis = snapshot.diagnosis.analysis
    npu = getattr(getattr(analysis, "sampling", None), "npu", None)
    if npu is None or not npu.mapped:
        return None
    job = next((j for j in npu.jobs if j.layer == layer), None)
    return tuple(sorted(job.operators, key=lambda op: -op.share)) if job is not None and job.operators else None


def _operator_table(text: Text, operators: tuple[Any, ...], width: int) -> None:
    """Per sampled NPU operator: share, capture cycles, NPU cycles against Vela's estimate."""
    if not text.plain.endswith("\n"):
        text.append("\n")
    name_width = max(8, min(24, width - 50))
    text.append(
        f"{'sampled operator':<{name_width}} {'share':>6} {'cycles':>9} {'NPU cyc':>9} {'Vela NPU':>9} {'ratio':>6}\n",
        style=pal.MUTED,
    )
    for op in operators[:12]:
        name = op.name if len(op.name) <= name_width else op.name[: name_width - 1] + "…"
        npu, vela, ratio = op.npu_cycles, op.predicted_npu_cycles, op.ratio
        text.append(f"{name:<{name_width}} {op.share:>6.0%} {fmt.cycles(op.cycles):>9} ", style=pal.TEXT)
        text.append(f"{fmt.cycles(npu) if npu is not None else '-':>9} ", style=pal.TEXT)
        text.append(f"{fmt.cycles(vela) if vela else '-':>9} ", style=pal.MUTED)
        text.append(f"{ratio:>5.2f}×\n" if ratio is not None else f"{'-':>6}\n", style="bold" if ratio else pal.MUTED)


def _sampled(text: Text, breakdown: LayerBreakdown, symbol: Callable[[str], str] = str) -> None:
    """The layer's sampled breakdown: Vela operations of an NPU job, or the CPU's hot functions."""
    if not text.plain.endswith("\n"):
        text.append("\n")
    label = "sampled " + breakdown.kind + (" (simulated NPU)" if breakdown.simulated else "")
    text.append(f"{label}, {breakdown.samples:,} samples: ", style=pal.WARN if breakdown.simulated else pal.MUTED)
    text.append(" · ".join(f"{symbol(name)} {share:.0%}" for name, share in breakdown.parts[:6]), style=pal.TEXT)
