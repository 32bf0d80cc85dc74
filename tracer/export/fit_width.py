"""A text report fitted to a terminal's width (``tracer report`` on a terminal; piped: as is).

Two kinds of lines are wider than a terminal: tables (the layer statistics, PMU counters ...)
and sentences (findings, notes, evidence). A table too wide is cut into column groups, each
repeating the table's first two columns (``#`` and the name) so that a row can be followed; a
sentence is wrapped under its own text (a report line ``label       text`` under the text, an
indented line four columns further in).
"""

from __future__ import annotations

import re
import textwrap

_LABEL = re.compile(r"^[a-z][\w ]{0,10}\s+(?=\S)")  # "findings    4", "latency     cycles ..."
_RULE = re.compile(r"^\s*-+(  +-+)+\s*$")  # a table's line of dashes under its header
KEY_COLUMNS = 2  # repeated in every column group: "#" and the name


def fit_text(text: str, width: int) -> str:
    """``text`` with its tables and sentences fitted to ``width`` columns (module docstring)."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i + 1 < len(lines) and _RULE.match(lines[i + 1]) and lines[i].strip():
            end = i + 2
            while end < len(lines) and lines[end].strip() and len(lines[end]) > 0 and not _ends_table(lines[end]):
                end += 1
            out += _fit_table(lines[i:end], width)
            i = end
            continue
        out += _fit_line(lines[i], width)
        i += 1
    return "\n".join(out)


def _ends_table(line: str) -> bool:
    """A line after a table that is not a row of it (a note under it, the next section)."""
    return bool(_LABEL.match(line)) or line.lstrip().startswith(("note:", "[", "evidence", "fix:"))


def _fit_line(line: str, width: int) -> list[str]:
    if len(line) <= width:
        return [line]
    label = _LABEL.match(line)
    lead = len(line) - len(line.lstrip())
    if label and not lead:
        first, hang = line[: label.end()], label.end()
        text = line[label.end() :]
    else:
        first, hang = line[:lead], lead + 4
        text = line[lead:]
    wrapped = textwrap.wrap(
        text,
        width,
        initial_indent=first,
        subsequent_indent=" " * min(hang, width // 2),
        break_long_words=False,
        break_on_hyphens=False,
    )
    return wrapped or [line]


def _columns(rule: str) -> list[tuple[int, int]]:
    """The (start, end) of each column, from the line of dashes."""
    return [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]


def _fit_table(table: list[str], width: int) -> list[str]:
    if all(len(line) <= width for line in table):
        return table
    spans = _columns(table[1])
    if len(spans) <= KEY_COLUMNS + 1:
        return table
    indent = " " * spans[0][0]
    width -= len(indent)
    cells = [[_cell(line, spans, k) for k in range(len(spans))] for line in table]
    key = list(range(KEY_COLUMNS))
    groups: list[list[int]] = []
    current: list[int] = []
    for k in range(KEY_COLUMNS, len(spans)):
        trial = key + current + [k]
        if current and _width(cells, trial) > width:
            groups.append(current)
            current = [k]
        else:
            current.append(k)
    groups.append(current)
    widths = [max(len(row[k]) for row in cells) for k in range(len(spans))]
    right = [_right_aligned(table, spans, k) for k in range(len(spans))]
    out: list[str] = []
    for n, group in enumerate(groups):
        if n:
            out.append("")
        for row in cells:
            parts = [row[k].rjust(widths[k]) if right[k] else row[k].ljust(widths[k]) for k in key + group]
            out.append(indent + "  ".join(parts).rstrip())
    return out


def _cell(line: str, spans: list[tuple[int, int]], k: int) -> str:
    """Column ``k`` of ``line``: from the end of the column before to the start of the next."""
    start = spans[k - 1][1] if k else 0
    end = spans[k + 1][0] if k + 1 < len(spans) else len(line)
    return line[start:end].strip()


def _width(cells: list[list[str]], columns: list[int]) -> int:
    return sum(max(len(row[k]) for row in cells) for k in columns) + 2 * (len(columns) - 1)


def _right_aligned(table: list[str], spans: list[tuple[int, int]], k: int) -> bool:
    """True when the column's cells end where its dashes end (numbers)."""
    start, end = spans[k]
    rows = [line for line in table[2:] if len(line) >= end]
    return (
        bool(rows)
        and all(line[end - 1] != " " for line in rows)
        and any(line[start] == " " for line in rows if line[start:end].strip())
    )
