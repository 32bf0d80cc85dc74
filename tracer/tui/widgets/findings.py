"""Findings: what looks wrong, how sure, the numbers behind it and what the field does about it."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from tracer.session.findings import LiveFinding
from tracer.session.snapshot import SessionSnapshot
from tracer.tui import palette as pal
from tracer.tui.state import UiState
from tracer.tui.widgets.base import View


def _evidence(finding: LiveFinding) -> str:
    parts = []
    for key, value in finding.evidence.items():
        if value is None:
            continue
        shown = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
        parts.append(f"{key}={shown}")
    return "  ".join(parts)


def render_findings(findings: tuple[LiveFinding, ...], snapshot: SessionSnapshot, detailed: bool) -> Text:
    """Findings as text; ``detailed`` adds evidence and fixes."""
    text = Text(overflow="fold" if detailed else "ellipsis", no_wrap=not detailed)
    if not findings:
        text.append("✓ nothing to report", style=f"bold {pal.GOOD}")
        if snapshot.inferences:
            text.append(f" over {snapshot.inferences:,} inferences", style=pal.MUTED)
        return text
    labels = {row.index: row.info.label for row in snapshot.layers}
    for n, finding in enumerate(findings):
        colour = pal.SEVERITY.get(finding.severity, pal.MUTED)
        if n:
            text.append("\n\n" if detailed else "\n")
        text.append(f"{finding.severity.upper():<7}", style=f"bold {colour}")
        if finding.layer is not None:
            text.append(f" {labels.get(finding.layer, f'#{finding.layer}')}", style="bold")
        text.append(f" {finding.message}")
        if detailed:
            text.append(f"\n        {finding.id}  ", style=pal.MUTED)
            text.append(_evidence(finding), style=pal.TEXT)
            if finding.fix:
                text.append("\n        fix: ", style=pal.INFO)
                text.append(finding.fix, style=pal.TEXT)
    return text


class FindingsView(View, VerticalScroll):
    """A scrolling list of findings (compact in the overview, with evidence in its own tab)."""

    interval = 1.0

    DEFAULT_CSS = """
    FindingsView { border: round $primary-darken-2; border-title-color: $text; padding: 0 1; }
    FindingsView > Static { width: 100%; }
    """

    def __init__(self, detailed: bool = False, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, can_focus=False)
        self.detailed = detailed
        self.border_title = "Findings"
        self._body = Static()
        self._shown: tuple | None = None

    def compose(self):  # noqa: ANN201
        """The text."""
        yield self._body

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Draw the findings of ``snapshot``."""
        findings = snapshot.findings
        key = (findings, snapshot.inferences if not findings else 0)
        if key == self._shown:
            return
        self._shown = key
        counts = {s: sum(f.severity == s for f in findings) for s in ("error", "warning", "info")}
        summary = " · ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n)
        self.border_title = f"Findings ({summary})" if summary else "Findings"
        self._body.update(render_findings(findings, snapshot, self.detailed))
