"""A budget file's text, and errors that point at one of its lines."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from tracer.errors import UsageError, reading_file
from tracer.limits import MAX_BUDGET_FILE_BYTES, read_limited


@dataclasses.dataclass(frozen=True)
class BudgetText:
    """The decoded text of one file given to ``--budget`` or ``tracer budget``.

    Attributes:
        path: The path as the user wrote it (used in every message).
        text: The whole text (UTF-8, a byte-order mark removed).
    """

    path: str
    text: str

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> BudgetText:
        """Read a file.

        Raises:
            UsageError: Missing, a directory, too large, or not UTF-8 text.
        """
        name = str(path)
        with reading_file(name, "a budget file", UsageError):
            blob = read_limited(Path(path), MAX_BUDGET_FILE_BYTES, "a budget file")
        return cls.from_bytes(blob, name)

    @classmethod
    def from_bytes(cls, blob: bytes, name: str) -> BudgetText:
        """Decode bytes read elsewhere.

        Raises:
            UsageError: The bytes are not UTF-8 text.
        """
        try:
            text = blob.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = blob[: exc.start].count(b"\n") + 1
            raise UsageError(
                f"{name}:{line}: not a text file (byte {exc.start} is not UTF-8); expected a Vela "
                "CSV, a Glow bundle header, or a TOML/JSON budget"
            ) from None
        if "\x00" in text:
            line = text[: text.index("\x00")].count("\n") + 1
            raise UsageError(f"{name}:{line}: not a text file (NUL byte)")
        return cls(name, text)

    @property
    def lines(self) -> list[str]:
        """The lines, without line endings."""
        return self.text.splitlines()

    def error(self, line: int, message: str) -> UsageError:
        """An error at ``line`` (1-based) of this file, to raise."""
        return UsageError(f"{self.path}:{line}: {message}")

    def where(self, line: int) -> str:
        """``path:line`` for provenance."""
        return f"{self.path}:{line}"
