"""Findings: the CI gate's own (``tracer check``), with their evidence, how many inferences show
them, and the fix the field uses; a list to go from a finding to the inference and layer that show it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from tracer.session.snapshot import SessionSnapshot
from tracer.tui import palette as pal
from tracer.tui.navigation import finding_index
from tracer.tui.state import UiState
from tracer.tui.widgets.base import View

if TYPE_CHECKING:
    from tracer.analysis.findings import Finding

MAX_NUMBERS = 12  # inference numbers listed before "and N more"
MAX_VALUE = 120  # characters of one evidence value (lists of examples can be long)


ADDRESS_KEYS = ("address", "addr", "pc", "base", "start", "end")  # integers firmware engineers read in hex


def _is_address(key: str) -> bool:
    return key.lower() in ADDRESS_KEYS or key.lower().endswith(("_address", "_addr", "_pc"))


def _buffer(value: dict[str, Any]) -> str:
    """``0x31000000 (3,072 B)`` for a buffer; other mappings as ``key=value`` (addresses in hex)."""
    address, length = value.get("address"), value.get("length", value.get("size"))
    if isinstance(address, int) and set(value) <= {"address", "length", "size", "symbol", "name"}:
        name = value.get("symbol") or value.get("name")
        out = f"{address:#010x}" + (f" {name}" if name else "")
        return out + (f" ({length:,} B)" if isinstance(length, int) else "")
    return ", ".join(f"{k}={_field(k, v)}" for k, v in value.items())


def _field(key: str, value: Any) -> str:
    """One evidence value, an address in hex."""
    if _is_address(key) and isinstance(value, int) and not isinstance(value, bool):
        return f"{value:#010x}"
    return _value(value)


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return _buffer(value)
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
    return "  ".join(
        f"{key}={_field(key, value)}"
        for key, value in finding.evidence.items()
        if value is not None and value != [] and value != {}
    )


def inference_numbers(numbers: tuple[int, ...]) -> str:
    """``#1, #5, #9 and 12 more``."""
    shown = ", ".join(f"#{n}" for n in numbers[:MAX_NUMBERS])
    return shown + (f" and {len(numbers) - MAX_NUMBERS} more" if len(numbers) > MAX_NUMBERS else "")


def finding_body(finding: Finding, labels: dict[int, str], shows: int | None = None) -> Text:
    """One finding in full: message, id and the inferences it names, evidence, fix.

    ``shows``: how many inferences show it (every one, from the analysis; None: not known).
    """
    body = _head(finding, labels, with_severity=False)
    body.append(f"\n{finding.id}", style=pal.MUTED)
    if shows:
        body.append(f"  shows in {shows:,} inference{'s' if shows != 1 else ''}", style=pal.MUTED)
        if finding.inferences:
            body.append(": ", style=pal.MUTED)
            body.append(inference_numbers(finding.inferences), style=pal.ACCENT)
        body.append(" · enter: go to the first · n N: next, previous", style=pal.MUTED)
    elif finding.inferences:
        body.append("  in inference(s) ", style=pal.MUTED)
        body.append(inference_numbers(finding.inferences), style=pal.ACCENT)
    evidence = evidence_text(finding)
    if evidence:
        body.append("\nevidence: ", style=pal.MUTED)
        body.append(evidence, style=pal.TEXT)
    if finding.fix:
        body.append("\nfix: ", style=pal.INFO)
        body.append(finding.fix, style=pal.TEXT)
    return body


def empty_text(snapshot: SessionSnapshot) -> Text:
    """What the findings view says with no finding."""
    diagnosis = snapshot.diagnosis
    text = Text()
    if snapshot.measuring:
        text.append(f"measuring: {snapshot.inferences:,} inferences so far; the rules run again", style=pal.MUTED)
        return text
    if not diagnosis.ran:
        text.append("the findings come with the first inferences", style=pal.MUTED)
        return text
    text.append("✓ nothing to report", style=f"bold {pal.GOOD}")
    text.append(f" over {diagnosis.scope}", style=pal.MUTED)
    return text


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


def summary_text(findings: tuple[Finding, ...]) -> str:
    """``1 error · 2 warnings``."""
    counts = {s: sum(f.severity.value == s for f in findings) for s in ("error", "warning", "info")}
    return " · ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n)


class FindingRow(Static):
    """One finding in the list (its severity in the gutter)."""

    DEFAULT_CSS = """
    FindingRow { width: 100%; height: auto; padding: 0 0 1 0; }
    FindingRow.-selected { background: #0F3A5E; border-left: outer $accent; }
    FindingRow.-compact { padding: 0; }
    """


class FindingsView(View, VerticalScroll):
    """The findings, worst first: compact in the overview, in full in their own tab.

    In full it is a list: up/down choose a finding (it stays chosen for ``n``/``N``), page up/down
    and home/end scroll, enter goes to the first inference and layer that shows it.
    """

    interval = 1.0
    depends = frozenset({"finding"})

    DEFAULT_CSS = """
    FindingsView { border: round $primary-darken-2; border-title-color: $text; border-subtitle-color: $text-muted;
                   padding: 0 1; }
    FindingsView:focus { border: round $primary; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "choose(-1)", "Previous finding", show=False),
        Binding("down,j", "choose(1)", "Next finding", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "scroll_home", "Top", show=False),
        Binding("end", "scroll_end", "Bottom", show=False),
        Binding("enter", "go", "Go to it", show=False),
    ]

    class Chosen(Message):
        """The user chose finding ``index`` (``go``: and asked to go to it)."""

        def __init__(self, index: int, go: bool) -> None:
            super().__init__()
            self.index = index
            self.go = go

    def __init__(self, detailed: bool = False, *, id: str | None = None) -> None:
        super().__init__(id=id, can_focus=detailed)
        self.detailed = detailed
        self.border_title = "Findings"
        self._shown: Any = None
        self.selected: int | None = None
        self._count = 0

    def show_snapshot(self, snapshot: SessionSnapshot, ui: UiState) -> None:
        """Draw the findings of ``snapshot``, the chosen one marked."""
        diagnosis = snapshot.diagnosis
        selected = finding_index(snapshot, ui)
        key = (
            snapshot.findings,
            diagnosis.ran,
            snapshot.measuring,
            tuple(row.info for row in snapshot.layers),
            len(diagnosis.flags),
            selected if not self.detailed else None,
        )
        findings = snapshot.findings
        summary = summary_text(findings)
        self.border_title = f"Findings ({summary})" if summary else "Findings"
        if self.detailed and diagnosis.ran:
            self.border_subtitle = f"tracer check's rules over {diagnosis.scope}"
        if key != self._shown:
            self._shown = key
            if self.detailed:
                self._rebuild(snapshot)
            else:
                self._compact(snapshot, selected)
        if self.detailed and selected != self.selected:
            self._select(selected)

    def _compact(self, snapshot: SessionSnapshot, selected: int | None) -> None:
        """One line per finding in one text (cheap to update every second)."""
        findings = snapshot.findings
        labels = {row.index: row.info.label for row in snapshot.layers}
        text = Text(overflow="ellipsis", no_wrap=True)
        if not findings:
            text = empty_text(snapshot)
        for n, finding in enumerate(findings):
            text.append("\n" if n else "")
            line = _head(finding, labels)
            if n == selected:
                line.stylize("reverse")
            text.append_text(line)
        rows = list(self.query(FindingRow))
        if rows:
            rows[0].update(text)
        else:
            self.mount(FindingRow(text, classes="-compact"))

    def _rebuild(self, snapshot: SessionSnapshot) -> None:
        """One row per finding; rows already there are updated in place (no widgets made or
        removed while the number of findings stays the same).
        """
        findings = snapshot.findings
        self._count = len(findings)
        labels = {row.index: row.info.label for row in snapshot.layers}
        flags = snapshot.diagnosis.flags
        bodies: list[Any] = []
        for n, finding in enumerate(findings):
            table = Table.grid(padding=(0, 1), expand=True)
            table.add_column(width=7, no_wrap=True)
            table.add_column(ratio=1, overflow="fold")
            severity = finding.severity.value
            table.add_row(
                Text(severity.upper(), style=f"bold {pal.SEVERITY.get(severity, pal.MUTED)}"),
                finding_body(finding, labels, len(flags.instances(n)) or None),
            )
            bodies.append(table)
        if not bodies:
            bodies.append(empty_text(snapshot))
        rows = list(self.query(FindingRow))
        for row, body in zip(rows, bodies):
            row.update(body)
        if len(rows) > len(bodies):
            for row in rows[len(bodies) :]:
                row.remove()
        elif len(bodies) > len(rows):
            self.mount_all([FindingRow(body) for body in bodies[len(rows) :]])
        previous, self.selected = self.selected, None
        if self.selected is None and rows:
            for row in rows:
                row.remove_class("-selected")
        self._select(previous)

    def _select(self, index: int | None) -> None:
        rows = list(self.query(FindingRow))
        if self.selected is not None and self.selected < len(rows):
            rows[self.selected].remove_class("-selected")
        self.selected = index if index is not None and index < len(rows) and self._count else None
        if self.selected is not None:
            rows[self.selected].add_class("-selected")
            self.scroll_to_widget(rows[self.selected], animate=False, immediate=True)

    def search(self, words: str, findings: tuple[Finding, ...], labels: dict[int, str]) -> int | None:
        """Choose the next finding (after the chosen one) whose text holds ``words``; its index."""
        needle = words.lower()
        count = len(findings)
        start = self.selected if self.selected is not None else -1
        for step in range(1, count + 1):
            at = (start + step) % count
            finding = findings[at]
            said = f"{finding.id} {finding.message} {evidence_text(finding)} {labels.get(finding.layer or -1, '')}"
            if needle in said.lower():
                self._select(at)
                self.post_message(self.Chosen(at, go=False))
                return at
        return None

    def action_choose(self, step: int) -> None:
        """Choose the next (or previous) finding."""
        if not self._count:
            return
        at = 0 if self.selected is None else max(0, min(self._count - 1, self.selected + step))
        self._select(at)
        self.post_message(self.Chosen(at, go=False))

    def action_go(self) -> None:
        """Go to the first inference and layer that shows the chosen finding."""
        if self._count:
            self.post_message(self.Chosen(self.selected if self.selected is not None else 0, go=True))
