"""The report's ``energy`` section as text: made from the report object, the same numbers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Table = Callable[[list[str], list[list[str]], set[int]], list[str]]


def energy_text(section: dict[str, Any], table: Table) -> list[str]:
    """Energy per inference, idle and per layer, with how the recording was tied to the capture."""
    rec, sync, inf, idle = section["recording"], section["sync"], section["inference"], section["idle"]
    title = "Energy (SIMULATED meter)" if section.get("simulated") else "Energy"
    drift = "-" if sync["drift_ppm"] is None else f"{sync['drift_ppm']:+.1f} ppm"
    lines = [
        f"{title}: {rec['meter']} {rec['path']}, {rec['sample_rate']:,.0f} samples/s",
        (
            f"  aligned by {sync['method']} on digital input {sync['meter_input']}: {sync['pairs']} edges, "
            f"meter clock {drift}, residuals {sync['residual_rms_samples']:.2f} samples RMS"
        ),
    ]
    if inf["mean_uj"] is not None:
        engines = ", ".join(f"{k.upper()} {v:,.2f}" for k, v in inf["engines_uj"].items())
        lines.append(
            f"  per inference: {inf['mean_uj']:,.2f} uJ +- {inf['interval_uj'] or 0:,.2f} (95%, {inf['count']} inferences; "
            f"min {inf['min_uj']:,.2f}, max {inf['max_uj']:,.2f}); layers: {engines}; outside layers {inf['other_uj']:,.2f}"
        )
    if idle["power_mw"] is not None:
        lines.append(
            f"  between inferences: {idle['power_mw']:,.3f} mW for {idle['seconds']:.4f} s ({idle['energy_uj']:,.1f} uJ)"
        )
    left = {k: v for k, v in section["left_out"].items() if v}
    if left:
        lines.append("  not measured: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in left.items()))
    rows = [
        [
            str(la["index"]),
            la["name"],
            la["engine"],
            f"{la['energy_uj']:,.3f}",
            f"{la['interval_uj']:,.3f}",
            f"{la['power_mw']:,.2f}",
            f"{la['samples']:,.1f}",
            f"{la['energy_share']:.1%}",
            f"{la['time_share']:.1%}",
            la["method"],
        ]
        for la in section["layers"]
    ]
    lines += ["", *table(
        ["#", "layer", "engine", "uJ", "+- (95%)", "mW", "samples", "energy", "time", "method"],
        rows,
        {0, 3, 4, 5, 6, 7, 8},
    )]  # fmt: skip
    lines += [f"  note: {note}" for note in section["notes"]]
    return lines


def estimate_text(section: dict[str, Any], table: Table) -> list[str]:
    """The ``energy_estimate`` section (``--power-model``): labelled an estimate, with its fit error."""
    fitted = section.get("fitted_on") or {}
    simulated = " (fitted on a SIMULATED meter)" if fitted.get("simulated") else ""
    lines = [
        f"Energy ESTIMATE, no meter: from each layer's time and NPU PMU counters by {section['model']}{simulated}",
        (
            f"  fit error +-{section['fit_error_pct']:.1f} % per layer (leave-one-layer-out RMS over "
            f"{section['fit_layers']} layers of {fitted.get('capture', 'the metered run')}; worst "
            f"{section['fit_worst_pct']:.1f} %); valid for the device, clock and supply it was fitted on"
        ),
    ]
    if section["inference_uj"] is not None:
        lines.append(f"  per inference, in its layers: {section['inference_uj']:,.2f} uJ (estimate)")
    rows = [
        [str(la["index"]), la["name"], f"{la['energy_uj']:,.3f}", f"{la['power_mw']:,.2f}"] for la in section["layers"]
    ]
    return [*lines, "", *table(["#", "layer", "uJ (est.)", "mW (est.)"], rows, {0, 2, 3})]


def energy_change_lines(section: dict[str, Any]) -> list[str]:
    """The compare's ``energy`` section as text lines (:mod:`tracer.power.compare`)."""
    title = "energy      (SIMULATED meter)" if section["simulated"] else "energy"
    lines = [title]
    for c in [section["inference"], *section["layers"]]:
        if c["change_pct"] is None:
            lines.append(f"  {c['label']}: not measured on both sides")
            continue
        lo, hi = c["interval_pct"]
        lines.append(
            f"  {c['label']}: {c['base_uj']:,.3f} -> {c['new_uj']:,.3f} uJ, {c['change_pct']:+.2f} % "
            f"(95 % interval {lo:+.2f} to {hi:+.2f} %): {c['verdict']}"
        )
    return lines
