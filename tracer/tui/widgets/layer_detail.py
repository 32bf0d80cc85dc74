"""The selected layer: its statistics, its recent history and the distribution of its cycles."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from rich.text import Text
from textual.widgets import Static

from tracer.analysis.sampling import LayerBreakdown
from tracer.analysis.statistics import histogram
from tracer.session.snapshot import LayerRow, SessionSnapshot
from tracer.tui import format as fmt
from tracer.tui import palette as pal
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


class LayerDetail(View, Static):
    """History and distribution of one layer (the layers table's cursor row)."""

    interval = 0.5
    depends = frozenset({"layer"})

    DEFAULT_CSS = """
    LayerDetail { border: round $primary-darken-2; border-title-color: $text; padding: 0 1; }
    """

    def __init__(self, history: Callable[[int, int | None], np.ndarray], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Layer"
        self._history = history

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Draw the selected layer of ``snapshot``."""
        row = snapshot.layer(ui.layer) if ui.layer is not None else None
        if row is None and snapshot.layers:
            row = snapshot.layers[0]
        if row is None:
            self.border_title = "Layer"
            self.update_if_changed(Text("no layer yet", style=pal.MUTED))
            return
        width = max(10, self.content_size.width)
        height = max(4, self.content_size.height)
        info = row.info
        self.border_title = f"Layer {info.index} · {info.label}"
        self.update_if_changed(self._draw(row, snapshot, width, height))

    def _draw(self, row: LayerRow, snapshot: SessionSnapshot, width: int, height: int) -> Text:
        info, c = row.info, row.cycles
        clock = snapshot.status.clock_hz
        text = Text(overflow="fold")
        engine_colour = pal.NPU[0] if info.engine.value == "npu" else pal.CPU[0]
        text.append(info.engine.value.upper(), style=f"bold {engine_colour}")
        text.append(f"  {info.op or 'op unknown'}", style=pal.TEXT)
        if row.predicted is not None:
            text.append(f"  predicted {fmt.cycles(row.predicted)}", style=pal.MUTED)
            ratio = row.ratio
            if ratio is not None:
                text.append(f"  ratio {ratio:.2f}", style=f"bold {pal.ratio_colour(ratio, row.tolerance_pct)}")
        if row.calibration_status:  # a calibration file was given (docs/calibrate.md)
            if row.calibrated is not None:
                text.append(f"  calibrated {fmt.cycles(row.calibrated)}", style=pal.MUTED)
                if c is not None and row.calibrated:
                    cal_ratio = c.p50 / row.calibrated
                    text.append(f" ratio {cal_ratio:.2f}", style=pal.ratio_colour(cal_ratio, row.tolerance_pct))
            if row.calibration_status != "calibrated":
                text.append(f" [{row.calibration_status}]", style=pal.WARN)
        for word, severity in row.findings:  # the gate's findings about this layer
            text.append(f"  {word}", style=f"bold {pal.SEVERITY.get(severity, pal.MUTED)}")
        text.append("\n")
        if c is None:
            text.append("no complete execution yet", style=pal.MUTED)
            if row.excluded:
                text.append(f" ({row.excluded} left out: their inference lost data)", style=pal.WARN)
            return text
        for label, value in (("min", c.min), ("p50", c.p50), ("p99", c.p99), ("max", c.max)):
            text.append(f"{label} ", style=pal.MUTED)
            text.append(fmt.cycles(value), style="bold" if label == "p50" else pal.TEXT)
            text.append("  ")
        text.append("cycles\n", style=pal.MUTED)
        text.append(f"mean {c.mean:,.1f} ± {c.std:,.1f}", style=pal.TEXT)
        text.append(f"  cv {c.cv:.2%}  n {c.count:,}", style=pal.MUTED)
        if row.excluded:
            text.append(f" (+{row.excluded:,} incomplete)", style=pal.WARN)
        if clock:
            text.append(f"  p50 {fmt.cycle_time(c.p50, clock)}", style=pal.MUTED)
        text.append("\n")
        values = self._history(info.index, None)
        spark_width = max(1, width - 9)
        text.append("history  ", style=pal.MUTED)
        text.append(sparkline(values[-spark_width * 4 :], spark_width), style=engine_colour)
        text.append("\n")
        pmu_lines = 2 if row.pmu_mean else 0
        sampled = snapshot.extra.get("sampling", {}).get(info.index)  # issue 15
        left = height - 4 - pmu_lines - (2 if sampled is not None else 0)
        if left >= 2:
            self._distribution(text, values, min(left, 8), width)
        if row.pmu_mean:
            simulated = snapshot.status.labels.get("npu_pmu") == "simulated"
            text.append(
                "NPU PMU mean" + (" (simulated)" if simulated else "") + ": ",
                style=pal.WARN if simulated else pal.MUTED,
            )
            text.append(" · ".join(f"{name} {value:,.0f}" for name, value in row.pmu_mean.items()), style=pal.TEXT)
        if sampled is not None:
            _sampled(text, sampled)
        return text

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


def _sampled(text: Text, breakdown: LayerBreakdown) -> None:
    """The layer's sampled breakdown: Vela operations of an NPU job, or the CPU's hot functions."""
    if not text.plain.endswith("\n"):
        text.append("\n")
    label = "sampled " + breakdown.kind + (" (simulated NPU)" if breakdown.simulated else "")
    text.append(f"{label}, {breakdown.samples:,} samples: ", style=pal.WARN if breakdown.simulated else pal.MUTED)
    text.append(" · ".join(f"{name} {share:.0%}" for name, share in breakdown.parts[:6]), style=pal.TEXT)
