"""Energy of two builds compared: per inference and per layer, each change with its 95 % interval.

Each side's energy is a mean with a 95 % interval (:mod:`tracer.power.attribute`); the change's
interval is the two half-widths combined (independent runs: root of the sum of squares). A
change is real when its interval excludes 0, and a regression when it is real and above the
threshold (the compare's ``--threshold``). Layers are paired by index and name (both the same).
"""

from __future__ import annotations

import math
from typing import Any

from tracer.base.timeline import InferenceTimeline
from tracer.power.attribute import EnergyAnalysis


def energy_comparison(
    base: EnergyAnalysis,
    new: EnergyAnalysis,
    base_timeline: InferenceTimeline,
    new_timeline: InferenceTimeline,
    threshold_pct: float,
) -> dict[str, Any]:
    """The compare's ``energy`` section: ``inference`` and ``layers`` changes, ``regressions``."""
    inference = _change(
        "inference", base.inference_mean_uj, base.inference_interval_uj, new.inference_mean_uj,
        new.inference_interval_uj, threshold_pct,
    )  # fmt: skip
    layers = []
    for index, b in sorted(base.layers.items()):
        n = new.layers.get(index)
        name = base_timeline.layer(index).label
        if n is None or new_timeline.layer(index).label != name:
            continue
        change = _change(name, b.energy_uj, b.interval_uj, n.energy_uj, n.interval_uj, threshold_pct)
        layers.append({"index": index, **change})
    regressions = [c["label"] for c in [inference, *layers] if c["verdict"] == "more energy"]
    return {
        "simulated": base.recording.simulated or new.recording.simulated,
        "inference": inference,
        "layers": layers,
        "regressions": regressions,
    }


def _change(
    label: str, base: float | None, base_ci: float | None, new: float | None, new_ci: float | None, threshold: float
) -> dict[str, Any]:
    if base is None or new is None or base <= 0:
        return {"label": label, "base_uj": base, "new_uj": new, "change_pct": None, "interval_pct": None,
                "verdict": "not measured"}  # fmt: skip
    diff = new - base
    half = math.hypot(base_ci or 0.0, new_ci or 0.0)
    pct = diff / base * 100
    interval = ((diff - half) / base * 100, (diff + half) / base * 100)
    real = interval[0] > 0 or interval[1] < 0
    verdict = "unchanged"
    if real and pct > threshold:
        verdict = "more energy"
    elif real and pct < -threshold:
        verdict = "less energy"
    return {
        "label": label,
        "base_uj": round(base, 4),
        "new_uj": round(new, 4),
        "change_pct": round(pct, 3),
        "interval_pct": [round(interval[0], 3), round(interval[1], 3)],
        "verdict": verdict,
    }
