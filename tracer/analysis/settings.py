"""The thresholds an analysis uses, in one typed place (defaults are the field's rules of thumb).

``tracer report`` and ``tracer check`` take them from their options; rules read them from
:attr:`tracer.analysis.analysis.Analysis.settings`, never from an untyped dictionary.

The jitter thresholds can also come from the budget file (``[model]`` keys ``jitter_threshold_pct``
and ``jitter_min_share_pct``): the command line wins over the budget, the budget over the default
(:meth:`AnalysisSettings.jitter`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracer.analysis.calibration_file import Calibration
    from tracer.analysis.energy_model import PowerModel
    from tracer.budget.model import ModelBudget

DEFAULT_TOLERANCE_PCT = 10.0
JITTER_THRESHOLD_PCT = 20.0
# A layer whose slowest run takes under 1 % of the inference cannot move the inference's latency
# by more than 1 %, a tenth of the default budget tolerance (10 %): its jitter is information.
JITTER_MIN_SHARE_PCT = 1.0
ARENA_HEADROOM = 0.10
STACK_FRACTION = 0.75
SRAM_FRACTION = 0.75
NPU_UTILIZATION = 0.80
CACHE_LINE_BYTES = 32
# A gate that compares fewer than half of the layers the budget predicts checks too little of the
# model to say it is within budget (a cut capture, firmware that marks a few layers only).
BUDGET_COVERAGE = 0.5

OPTION, BUDGET, DEFAULT = "option", "budget", "default"  # where a threshold came from


@dataclasses.dataclass(frozen=True)
class JitterSettings:
    """The jitter thresholds in force, and where each came from.

    Attributes:
        threshold_pct: Excess over a layer's median that makes an execution an outlier.
        min_share_pct: Share of the inference (the layer's slowest run over the median inference
            latency, in percent) under which a layer's jitter is information, not a warning.
        threshold_from, min_share_from: ``option`` (command line), ``budget`` (the budget file's
            ``[model]``) or ``default``.
    """

    threshold_pct: float = JITTER_THRESHOLD_PCT
    min_share_pct: float = JITTER_MIN_SHARE_PCT
    threshold_from: str = DEFAULT
    min_share_from: str = DEFAULT

    def to_json(self) -> dict[str, Any]:
        """As the report's ``jitter.settings``."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class AnalysisSettings:
    """Thresholds of one analysis.

    Attributes:
        tolerance_pct: ``--tolerance``: allowed excess over a layer's predicted cycles, in percent,
            where the budget sets none (None: not given; then 10 %).
        jitter_threshold_pct: ``--jitter-threshold``: excess over a layer's median that makes an
            execution an outlier (None: not given; then the budget's, else 20 %).
        jitter_min_share_pct: ``--jitter-min-share``: share of the inference under which a layer's
            jitter is information (None: not given; then the budget's, else 1 %).
        arena_headroom: Least share of the tensor arena to keep free at its peak.
        stack_fraction: Most of a stack's size its high-water mark may reach.
        sram_fraction: Most of the part's SRAM the compiler's peak may take.
        npu_utilization: Least share of its cycles the NPU should be active.
        cache_line_bytes: The data cache's line size (coherency rules).
        calibration: ``--calibration``: the planner's calibration to show beside its predictions.
        against: ``--against``: the layer limits are made from the ``planner``'s prediction or the
            ``calibrated`` one.
        budget_coverage: Least share of the budget's predicted layers the gate must have measured.
        power_model: ``--power-model``: estimate each layer's energy from its time and counters
            where no meter was attached (:mod:`tracer.analysis.energy_model`).
    """

    tolerance_pct: float | None = None
    jitter_threshold_pct: float | None = None
    jitter_min_share_pct: float | None = None
    arena_headroom: float = ARENA_HEADROOM
    stack_fraction: float = STACK_FRACTION
    sram_fraction: float = SRAM_FRACTION
    npu_utilization: float = NPU_UTILIZATION
    cache_line_bytes: int = CACHE_LINE_BYTES
    calibration: Calibration | None = None
    against: str = "planner"
    budget_coverage: float = BUDGET_COVERAGE
    power_model: PowerModel | None = None

    @property
    def default_tolerance_pct(self) -> float:
        """The tolerance that applies where neither the budget nor a layer sets one."""
        return DEFAULT_TOLERANCE_PCT if self.tolerance_pct is None else self.tolerance_pct

    def jitter(self, model: ModelBudget | None = None) -> JitterSettings:
        """The jitter thresholds in force: the command line's, else the budget's, else the defaults."""
        threshold, threshold_from = _first(
            (self.jitter_threshold_pct, OPTION),
            (model.jitter_threshold_pct if model is not None else None, BUDGET),
            (JITTER_THRESHOLD_PCT, DEFAULT),
        )
        share, share_from = _first(
            (self.jitter_min_share_pct, OPTION),
            (model.jitter_min_share_pct if model is not None else None, BUDGET),
            (JITTER_MIN_SHARE_PCT, DEFAULT),
        )
        return JitterSettings(threshold, share, threshold_from, share_from)


def _first(*candidates: tuple[float | None, str]) -> tuple[float, str]:
    """The first value given, with where it came from (the last candidate is always given)."""
    for value, source in candidates:
        if value is not None:
            return float(value), source
    raise ValueError("no default given")
