r"""``--help`` fitted to the terminal, at most 80 columns, keeping the texts' layout.

The verbs' descriptions are laid out by hand: paragraphs, two-column lists (``  input     the
input measured ...``) and example command lines. argparse either keeps them as written
(``RawDescriptionHelpFormatter``: lines as wide as they were typed) or flows everything into
one paragraph. :class:`FittedHelpFormatter` keeps every line that fits, and re-flows only the
parts with a line that does not: a paragraph as a paragraph, a list entry under its own
description column, and an example command broken with a trailing ``\\`` (still one command when
pasted into a shell).
"""

from __future__ import annotations

import argparse
import re
import shutil
import textwrap

MAX_COLUMNS = 80  # the project's rule for --help, whatever the terminal's width
_COMMAND = re.compile(r"^\s*(\$ )?(tracer|python3?|\.venv/bin/\S+|pip)\s")
_ENTRY = re.compile(r"^(\s+)(\S+(?: \S+)?\s{2,})(?=\S)")  # "  name    description"


class FittedHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The description and epilog as written where they fit, re-flowed where they do not."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24) -> None:
        columns = min(shutil.get_terminal_size().columns, MAX_COLUMNS)
        super().__init__(prog, indent_increment, max_help_position, width=columns - 2)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines = super()._fill_text(text, width, indent).splitlines()
        return "\n".join(fit_lines(lines, width)) + ("\n" if text.endswith("\n") else "")


def fit_lines(lines: list[str], width: int) -> list[str]:
    """``lines`` with every part holding a line wider than ``width`` re-flowed (module docstring)."""
    out: list[str] = []
    for part in _parts(lines):
        if all(len(line) <= width for line in part.lines):
            out += part.lines
        else:
            out += part.fit(width)
    return out


class _Part:
    """A paragraph, a list entry with its continuation lines, or one command line."""

    def __init__(self, kind: str, first: str, hang: int) -> None:
        self.kind = kind
        self.lines = [first]
        self.hang = hang

    @property
    def indent(self) -> int:
        return len(self.lines[0]) - len(self.lines[0].lstrip())

    def takes(self, line: str) -> bool:
        """True when ``line`` continues this part."""
        if not line.strip() or not self.lines[0].strip() or self.kind == "command" or _COMMAND.match(line):
            return False
        heading = len(self.lines) == 1 and len(self.lines[0].strip()) < 40
        if heading and self.lines[0].rstrip().endswith(":"):  # "examples:" stands on its own
            return False
        lead = len(line) - len(line.lstrip())
        return lead == self.hang and (self.kind != "paragraph" or not _ENTRY.match(line))

    def fit(self, width: int) -> list[str]:
        first = self.lines[0]
        if self.kind == "command":
            return _fit_command(first, width)
        text = " ".join(line.strip() for line in self.lines)
        if self.kind == "entry":
            head = _ENTRY.match(first)
            assert head is not None
            text = " ".join(line.strip() for line in [first[head.end() :], *self.lines[1:]])
            start = head.group(1) + head.group(2)
            if len(start) > width // 2:  # a long name: its description on the lines below it
                lead = head.group(1) + "    "
                return [start.rstrip(), *textwrap.wrap(text, width, initial_indent=lead, subsequent_indent=lead)]
        else:
            start = " " * self.indent
        return textwrap.wrap(
            text,
            width,
            initial_indent=start,
            subsequent_indent=" " * self.hang,
            break_long_words=False,
            break_on_hyphens=False,
        ) or [first]


def _parts(lines: list[str]) -> list[_Part]:
    parts: list[_Part] = []
    for line in lines:
        if parts and parts[-1].takes(line):
            parts[-1].lines.append(line)
            continue
        lead = len(line) - len(line.lstrip())
        entry = _ENTRY.match(line)
        if _COMMAND.match(line):
            parts.append(_Part("command", line, lead + 4))
        elif entry and lead:
            parts.append(_Part("entry", line, entry.end()))
        else:
            parts.append(_Part("paragraph", line, lead))
    return parts


def _fit_command(line: str, width: int) -> list[str]:
    r"""An example command broken between words, each line but the last ending in `` \\``."""
    lead = len(line) - len(line.lstrip())
    code, hash_, comment = line.partition("  #")
    wrapped = textwrap.wrap(
        code.strip(),
        width - 2,
        initial_indent=" " * lead,
        subsequent_indent=" " * (lead + 4),
        break_long_words=False,
        break_on_hyphens=False,
    )
    out = [w + " \\" for w in wrapped[:-1]] + [wrapped[-1]]
    if hash_:
        note = f"  #{comment}"
        if len(out[-1]) + len(note) <= width:
            out[-1] += note
        else:  # the comment on a line of its own, before the command, still a comment
            out.insert(0, " " * lead + "#" + comment)
    return out
