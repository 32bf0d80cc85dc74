"""Findings: the CI gate's own (``tracer check``), with their evidence, the inferences they name and
the fix the field uses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from tracer.session.snapshot import SessionSnapshot
from tracer.tui import palette as pal
from tracer.tui.state import UiState
from tracer.tui.widgets.base import View

if TYPE_CHECKING:
    from tracer.analysis.findings import Finding

MAX_NUMBERS = 12  # inference numbers listed before "and N more"
MAX_VALUE = 120  # characters of one evidence value (lists of examples can be long)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    if isinstance(value, (list, tuple)) and any(isinstance(v, (dict, list, tuple)) for v in value):
        return f"[{len(value)} in the report JSON]"  # examples and listings: too long for a line
    text = str(value)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def evidence_text(finding: Finding) -> str:
    """``key=value`` pairs of the finding's evidence (long values cut)."""
    return "  ".join(f"{key}={_value(value)}" for key, value in finding.evidence.items()
                     if value is not None and value != [] and value != {})  # fmt: skip


def inference_numbers(numbers: tuple[int, ...]) -> str:
    """``#1, #5, #9 and 12 more``."""
    shown = ", ".join(f"#{n}" for n in numbers[:MAX_NUMBERS])
    return shown + (f" and {len(numbers) - MAX_NUMBERS} more" if len(numbers) > MAX_NUMBERS else "")


def render_findings(findings: tuple[Finding, ...], snapshot: SessionSnapshot, detailed: bool) -> Text | Table:
    """Findings as text, one line each; ``detailed``: a table that adds the inferences they name,
    the evidence and the fix, wrapped beside the severity."""
    diagnosis = snapshot.diagnosis
    if not findings:
        text = Text()
        if not diagnosis.ran:
            text.append("the findings come with the first inferences", style=pal.MUTED)
            return text
        text.append("✓ nothing to report", style=f"bold {pal.GOOD}")
        text.append(f" over {diagnosis.scope}", style=pal.MUTED)
        return text
    labels = {row.index: row.info.label for row in snapshot.layers}
    if not detailed:
        text = Text(overflow="ellipsis")
        for n, finding in enumerate(findings):
            text.append("\n" if n else "")
            text.append_text(_head(finding, labels))
        return text
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(width=7, no_wrap=True)
    table.add_column(ratio=1, overflow="fold")
    for n, finding in enumerate(findings):
        if n:
            table.add_row("", "")
        severity = finding.severity.value
        body = _head(finding, labels, with_severity=False)
        body.append(f"\n{finding.id}", style=pal.MUTED)
        if finding.inferences:
            body.append("  in inference(s) ", style=pal.MUTED)
            body.append(inference_numbers(finding.inferences), style=pal.ACCENT)
        evidence = evidence_text(finding)
        if evidence:
            body.append("\nevidence: ", style=pal.MUTED)
            body.append(evidence, style=pal.TEXT)
        if finding.fix:
            body.append("\nfix: ", style=pal.INFO)
            body.append(finding.fix, style=pal.TEXT)
        table.add_row(Text(severity.upper(), style=f"bold {pal.SEVERITY.get(severity, pal.MUTED)}"), body)
    return table


def _head(finding: Finding, labels: dict[int, str], with_severity: bool = True) -> Text:
    """``WARNING pw4 <message>``."""
    severity = finding.severity.value
    text = Text()
    if with_severity:
        text.append(f"{severity.upper():<8}", style=f"bold {pal.SEVERITY.get(severity, pal.MUTED)}")
    if finding.layer is not None:
        text.append(f"{labels.get(finding.layer, f'#{finding.layer}')} ", style="bold")
    text.append(finding.message)
    return text


class FindingsView(View, VerticalScroll):
    """A scrolling list of findings (compact in the overview, with evidence in its own tab)."""

    interval = 1.0

    DEFAULT_CSS = """
    FindingsView { border: round $primary-darken-2; border-title-color: $text; border-subtitle-color: $text-muted;
                   padding: 0 1; }
    FindingsView > Static { width: 100%; }
    """

    def __init__(self, detailed: bool = False, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, can_focus=False)
        self.detailed = detailed
        self.border_title = "Findings"
        self._body = Static()
        self._shown: Any = None

    def compose(self):  # noqa: ANN201
        """The text."""
        yield self._body

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Draw the findings of ``snapshot``."""
        diagnosis = snapshot.diagnosis
        key = (diagnosis, tuple(row.info for row in snapshot.layers))
        if key == self._shown:
            return
        self._shown = key
        findings = diagnosis.findings
        counts = {s: sum(f.severity.value == s for f in findings) for s in ("error", "warning", "info")}
        summary = " · ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n)
        self.border_title = f"Findings ({summary})" if summary else "Findings"
        if self.detailed and diagnosis.ran:
            self.border_subtitle = f"tracer check's rules over {diagnosis.scope}"
        self._body.update(render_findings(findings, snapshot, self.detailed))
