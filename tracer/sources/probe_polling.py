"""What a probe source (J-Link, pyOCD) adds to read the target's memory and NPU while it streams.

Both probe sources poll the same way: arena and stack words (:class:`~tracer.sources.polling.
MemoryPoller`) and the NPU's registers (:class:`~tracer.sources.npu_polling.NpuPoller`), each when
due, in their read loops, through the probe's own memory read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracer.sources.npu_polling import NpuPoller, NpuPollSpec, NpuPollSummary
from tracer.sources.polling import MemoryPoller, PollSpec, ReadWords


class ProbePolling:
    """Mixed into ``JLinkSource`` and ``PyocdSource``.

    The source calls :meth:`_start_polling` once open, :meth:`_poll` in its read loop, waits at
    most :meth:`_idle` between reads, and adds :meth:`_npu_notes` to its drained events.
    """

    _poller: MemoryPoller | None = None
    _npu: NpuPoller | None = None

    @property
    def npu_sampling(self) -> NpuPollSummary | None:
        """The NPU polling's rate asked for and achieved (None when not sampling the NPU)."""
        return self._npu.summary if self._npu is not None else None

    def _start_polling(
        self, memory: PollSpec, npu: NpuPollSpec | None, read_words: ReadWords, clock: Callable[[], float]
    ) -> None:
        self._poller = MemoryPoller(memory, read_words, clock=clock) if memory.active else None
        self._npu = NpuPoller(npu, read_words, clock=clock) if npu is not None else None

    def _poll(self, events: list[dict[str, Any]]) -> None:
        """Read what is due: memory samples go to ``events``; NPU samples wait for :meth:`_npu_notes`."""
        if self._poller is not None and self._poller.due():
            events.extend(self._poller.poll())
        if self._npu is not None and self._npu.due():
            self._npu.poll()

    def _idle(self, default: float) -> float:
        """Seconds to wait between empty reads: short enough for the NPU polling rate."""
        return min(default, self._npu.period) if self._npu is not None else default

    def _npu_notes(self) -> list[dict[str, Any]]:
        return self._npu.drain() if self._npu is not None else []
