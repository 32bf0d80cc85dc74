"""An NPU command stream as Vela compiled it: its operations and where their kernel commands sit
(read from Vela's debug database by :mod:`tracer.budget.vela_debugdb`, held by the budget model).
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class StreamOperation:
    """An operation of a command stream, where its kernel command sits.

    Attributes:
        offset: Byte offset of its kernel command in the stream (QREAD's unit).
        name: Its output tensor (regor ``perf.name``), or ``""`` (legacy).
        operator: The operation (``Conv2D``, ``AvgPool`` ...).
        model_index: The model operator it belongs to (``source.ext_key``), if known.
        model_operator: That operator's type (``source.operator``).
        op_cycles: Vela's estimate (``perf.op_cycles``: the bottleneck of compute and memory), if given.
        npu_cycles: Vela's compute-only estimate (``perf.npu_cycles``), if given.
    """

    offset: int
    name: str
    operator: str
    model_index: int | None
    model_operator: str
    op_cycles: float | None
    npu_cycles: float | None

    @property
    def label(self) -> str:
        """A short name: the tensor name, else ``operator@offset``."""
        return self.name or f"{self.operator or 'op'}@{self.offset}"


@dataclasses.dataclass(frozen=True, slots=True)
class CommandStream:
    """One command stream (one ``ethos-u`` operator of the compiled model) and its operations.

    Attributes:
        id: ``cmdstream_id`` (numbered in the order of the ``ethos-u`` operators).
        operations: Its operations in stream order (ascending offsets).
        source: The debug database it came from (for messages).
    """

    id: int
    operations: tuple[StreamOperation, ...]
    source: str

    @property
    def offsets(self) -> list[int]:
        """The kernel-command offsets, ascending."""
        return [op.offset for op in self.operations]
