"""Sequences of records kept as numpy columns, built into objects only when someone looks.

Per-layer records (cache maintenance, NPU jobs) are as frequent as layer spans; turning each into
a Python object would cost more than decoding the capture. A :class:`LazyRecords` behaves like a
read-only list of dataclass objects (``len``, indexing, slicing, iteration) but keeps the columns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

import numpy as np

T = TypeVar("T")


class LazyRecords(Sequence[T], Generic[T]):
    """A read-only sequence of ``factory(*row)`` over numpy columns of equal length.

    Args:
        factory: Builds one object from the Python values of a row.
        columns: The columns, in the factory's argument order.
    """

    def __init__(self, factory: Callable[..., T], columns: Sequence[np.ndarray]) -> None:
        self._factory = factory
        self._columns = tuple(columns)
        self._length = int(self._columns[0].shape[0]) if self._columns else 0

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> LazyRecords[T]: ...

    def __getitem__(self, index: int | slice) -> T | LazyRecords[T]:
        if isinstance(index, slice):
            return LazyRecords(self._factory, [c[index] for c in self._columns])
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(index)
        return self._factory(*(c[index].item() for c in self._columns))

    def __iter__(self) -> Iterator[T]:
        for row in zip(*(c.tolist() for c in self._columns)):
            yield self._factory(*row)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, (list, tuple, LazyRecords)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return f"LazyRecords({len(self)} rows)"

    def column(self, i: int) -> np.ndarray:
        """Column ``i`` (for vectorised consumers)."""
        return self._columns[i]

    def where(self, rows: np.ndarray) -> LazyRecords[T]:
        """The rows ``rows`` selects (a boolean mask or indices), still as columns."""
        return LazyRecords(self._factory, [c[rows] for c in self._columns])

    @staticmethod
    def concat(parts: Sequence[LazyRecords[T]]) -> LazyRecords[T]:
        """The rows of ``parts`` (records of one kind, at least one part) one after another, as columns."""
        first = parts[0]
        if any(p._factory is not first._factory or len(p._columns) != len(first._columns) for p in parts):
            raise ValueError("only records of the same kind are joined")
        return LazyRecords(first._factory, [np.concatenate(c) for c in zip(*(p._columns for p in parts))])


class Column(int):
    """In a :class:`JsonRows` row template, where the scalar of column ``int(self)`` goes."""


class JsonRows(Sequence[Any]):
    """JSON-ready rows made one at a time when iterated, for a report section as long as the
    capture (a writer streams them: :func:`tracer.export.report_json.write_report_json`).

    Args:
        length: How many rows.
        rows: Makes an iterator over the rows (called on every iteration).
        columns: When every row has one shape, may give it and the rows' scalars as columns, for a
            writer that need not make the rows: a template (the row with a :class:`Column` for each
            scalar) and one column per ``Column`` (a list, or a numpy array whose ``tolist`` gives
            the scalars), every row being the template with each ``Column(i)`` replaced by column
            ``i``'s item; or None (then the rows are read).
    """

    def __init__(
        self,
        length: int,
        rows: Callable[[], Iterator[Any]],
        columns: Callable[[], tuple[Any, Sequence[Any]] | None] | None = None,
    ) -> None:
        self._length = length
        self._rows = rows
        self._columns = columns

    def columns(self) -> tuple[Any, Sequence[Any]] | None:
        """The rows' template and scalar columns (see the class), or None."""
        return self._columns() if self._columns is not None else None

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[Any]:
        return self._rows()

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        return list(self)[index]

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, (list, tuple, JsonRows)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return f"JsonRows({len(self)} rows)"
