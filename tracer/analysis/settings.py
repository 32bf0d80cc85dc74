"""The thresholds an analysis uses, in one typed place (defaults are the field's rules of thumb).

``tracer report`` and ``tracer check`` take them from their options; rules read them from
:attr:`tracer.analysis.analysis.Analysis.settings`, never from an untyped dictionary.
"""

from __future__ import annotations

import dataclasses

DEFAULT_TOLERANCE_PCT = 10.0
JITTER_THRESHOLD_PCT = 20.0
ARENA_HEADROOM = 0.10
STACK_FRACTION = 0.75
SRAM_FRACTION = 0.75
NPU_UTILIZATION = 0.80
CACHE_LINE_BYTES = 32


@dataclasses.dataclass(frozen=True)
class AnalysisSettings:
    """Thresholds of one analysis.

    Attributes:
        tolerance_pct: ``--tolerance``: allowed excess over a layer's predicted cycles, in percent,
            where the budget sets none (None: not given; then 10 %).
        jitter_threshold_pct: Excess over a layer's median that makes an execution an outlier.
        arena_headroom: Least share of the tensor arena to keep free at its peak.
        stack_fraction: Most of a stack's size its high-water mark may reach.
        sram_fraction: Most of the part's SRAM the compiler's peak may take.
        npu_utilization: Least share of its cycles the NPU should be active.
        cache_line_bytes: The data cache's line size (coherency rules).
    """

    tolerance_pct: float | None = None
    jitter_threshold_pct: float = JITTER_THRESHOLD_PCT
    arena_headroom: float = ARENA_HEADROOM
    stack_fraction: float = STACK_FRACTION
    sram_fraction: float = SRAM_FRACTION
    npu_utilization: float = NPU_UTILIZATION
    cache_line_bytes: int = CACHE_LINE_BYTES

    @property
    def default_tolerance_pct(self) -> float:
        """The tolerance that applies where neither the budget nor a layer sets one."""
        return DEFAULT_TOLERANCE_PCT if self.tolerance_pct is None else self.tolerance_pct
