"""Findings about energy, from a power recording held against the timeline (``--power``).

* ``layer-energy-over-budget`` (error): a layer's mean energy per execution is above its
  ``energy_uj`` in the budget by more than its tolerance (the same tolerance as its cycles) and
  beyond the measurement's 95 % interval;
* ``inference-energy-over-budget`` (error): the mean energy of an inference is above the model's
  ``energy_uj`` by more than the budget's tolerance, beyond its interval;
* ``energy-share-above-time-share`` (info): a layer takes a far larger share of the inference's
  energy than of its time (at least :data:`SHARE_RATIO` times, and :data:`MIN_SHARE` of the
  energy): it draws more power than the rest, the layer to look at first for energy.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from tracer.analysis.findings.base import Finding, Severity

if TYPE_CHECKING:
    from tracer.analysis.result import Analysis

KINDS = ("layer-energy-over-budget", "inference-energy-over-budget", "energy-share-above-time-share")
SHARE_RATIO = 1.5
MIN_SHARE = 0.05
DEFAULT_TOLERANCE_PCT = 10.0


def over_budget(analysis: Analysis) -> Iterable[Finding]:
    """``layer-energy-over-budget`` and ``inference-energy-over-budget``."""
    energy, comparison = analysis.energy, analysis.comparison
    if energy is None or comparison is None:
        return
    timeline = analysis.timeline
    for index, plan in sorted(comparison.plans.items()):
        layer = energy.layers.get(index)
        if plan.energy_uj is None or layer is None:
            continue
        limit = plan.energy_uj * (1 + plan.tolerance_pct / 100)
        if layer.energy_uj - layer.interval_uj > limit:
            yield Finding(
                "layer-energy-over-budget",
                Severity.ERROR,
                index,
                f"layer {index} ({timeline.layer(index).label}) spends {layer.energy_uj:,.3f} uJ per execution "
                f"(+- {layer.interval_uj:,.3f}), over its budget of {plan.energy_uj:,.3f} uJ by "
                f"{(layer.energy_uj / plan.energy_uj - 1):.1%} (tolerance {plan.tolerance_pct:g} %)",
                {
                    "energy_uj": round(layer.energy_uj, 4),
                    "interval_uj": round(layer.interval_uj, 4),
                    "budget_uj": plan.energy_uj,
                    "limit_uj": round(limit, 4),
                    "power_mw": round(layer.power_mw, 3),
                    "method": layer.method,
                },
            )
    model = comparison.budget.model
    mean, interval = energy.inference_mean_uj, energy.inference_interval_uj or 0.0
    if model.energy_uj is not None and mean is not None:
        tolerance = comparison.tolerance_pct
        if tolerance is None:
            tolerance = model.tolerance_pct if model.tolerance_pct is not None else DEFAULT_TOLERANCE_PCT
        limit = model.energy_uj * (1 + tolerance / 100)
        if mean - interval > limit:
            yield Finding(
                "inference-energy-over-budget",
                Severity.ERROR,
                None,
                f"an inference spends {mean:,.2f} uJ (+- {interval:,.2f}), over the budget of "
                f"{model.energy_uj:,.2f} uJ by {(mean / model.energy_uj - 1):.1%} (tolerance {tolerance:g} %)",
                {"energy_uj": round(mean, 3), "interval_uj": round(interval, 3), "budget_uj": model.energy_uj,
                 "limit_uj": round(limit, 3)},
            )  # fmt: skip


def share(analysis: Analysis) -> Iterable[Finding]:
    """``energy-share-above-time-share``."""
    energy = analysis.energy
    if energy is None:
        return
    for index, layer in sorted(energy.layers.items()):
        if layer.energy_share >= MIN_SHARE and layer.energy_share >= SHARE_RATIO * max(layer.time_share, 1e-12):
            yield Finding(
                "energy-share-above-time-share",
                Severity.INFO,
                index,
                f"layer {index} ({analysis.timeline.layer(index).label}) takes {layer.energy_share:.1%} of an "
                f"inference's energy in {layer.time_share:.1%} of its time: it draws {layer.power_mw:,.1f} mW, "
                f"{layer.energy_share / max(layer.time_share, 1e-12):.1f}x the inference's mean power",
                {
                    "energy_share": round(layer.energy_share, 4),
                    "time_share": round(layer.time_share, 4),
                    "power_mw": round(layer.power_mw, 3),
                    "energy_uj": round(layer.energy_uj, 4),
                },
                "the layer to look at first for energy: its data movement (weights read from flash or DRAM "
                "cost more than compute), or a lower clock or voltage for it where the part allows",
            )


RULES = (over_budget, share)
