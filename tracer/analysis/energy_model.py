"""Energy estimated from time and the NPU PMU counters, where no meter is attached.

A metered run (``tracer report run.trace --power run.jls --fit-power-model model.json``) fits,
over its layers, one line: a layer execution's energy ``E = a * seconds + b * NPU_ACTIVE + c *
AXI beats`` (microjoules; ``seconds`` the execution's time, ``NPU_ACTIVE`` the NPU's active
cycles, ``AXI beats`` every AXI data beat counter summed: the time-proportional draw of the whole
device, the NPU's compute and its memory traffic). A feature the run never measured (no NPU: no
counter) is left out. The fit weighs each layer by its own energy (relative error), so small
layers count as much as large ones. Its error is said as the leave-one-layer-out RMS: each layer
predicted by the line fitted on the others, in percent of its measured energy.

An unmetered capture of the same device (``tracer report run.trace --power-model model.json``)
then gets each layer's estimated energy per execution from its own time and counters, labelled
an ESTIMATE with the model's fit error: the line holds for the device, clocks and supply it was
fitted on, and only as far as the layers it was fitted on resemble the new ones.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tracer.analysis.layer_stats import LayerStats
from tracer.errors import CaptureError, UsageError, reading_file
from tracer.power.attribute import LayerEnergy

FORMAT = "tracer-power-model"
VERSION = 1
SECONDS, NPU_ACTIVE, AXI_BEATS = "seconds", "NPU_ACTIVE", "AXI_BEATS"
FEATURES = (SECONDS, NPU_ACTIVE, AXI_BEATS)
UNITS = {SECONDS: "uJ per second (uW)", NPU_ACTIVE: "uJ per NPU active cycle", AXI_BEATS: "uJ per AXI data beat"}


@dataclasses.dataclass(frozen=True)
class PowerModel:
    """A fitted line from a layer execution's time and counters to its energy.

    Attributes:
        coefficients: Per feature used (:data:`FEATURES`), microjoules per unit.
        layers: Layers it was fitted on.
        error_pct: Leave-one-layer-out RMS error, percent of a layer's energy.
        worst_pct: The largest of those errors.
        fitted_on: The capture and recording it was fitted on (and whether simulated).
    """

    coefficients: dict[str, float]
    layers: int
    error_pct: float
    worst_pct: float
    fitted_on: dict[str, Any]
    path: str = ""  # the file it was read from (not written to it)

    def to_json(self) -> dict[str, Any]:
        """The model file's content."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "energy_uj": "sum of coefficient x feature per layer execution",
            "coefficients": self.coefficients,
            "units": {k: UNITS[k] for k in self.coefficients},
            "fit": {
                "layers": self.layers,
                "leave_one_out_rms_pct": round(self.error_pct, 3),
                "leave_one_out_worst_pct": round(self.worst_pct, 3),
            },
            "fitted_on": self.fitted_on,
        }


@dataclasses.dataclass(frozen=True)
class EnergyEstimate:
    """Estimated energy of an unmetered capture.

    Attributes:
        model: The model used (its ``path``: the file it was read from).
        layers: Per layer index: estimated microjoules per execution, and mean milliwatts.
        inference_uj: Estimated energy per inference in its layers (None: no layer estimated).
    """

    model: PowerModel
    layers: dict[int, tuple[float, float]]
    inference_uj: float | None


def features(stats: LayerStats, clock_hz: int) -> dict[str, float] | None:
    """A layer's mean features per execution (None: no complete execution)."""
    if stats.cycles is None:
        return None
    pmu = stats.pmu_mean
    return {
        SECONDS: stats.cycles.mean / clock_hz,
        NPU_ACTIVE: float(pmu.get(NPU_ACTIVE, 0.0)),
        AXI_BEATS: float(sum(v for k, v in pmu.items() if _is_axi_beats(k))),
    }


def fit_model(
    layers: Mapping[int, LayerStats], energy: Mapping[int, LayerEnergy], clock_hz: int | None, fitted_on: dict[str, Any]
) -> PowerModel:
    """Fit the line on the layers a recording measured.

    Raises:
        UsageError: The capture's clock is unknown (``--clock``).
        CaptureError: Too few layers measured to fit and test the line (exit 3).
    """
    if not clock_hz:
        raise UsageError("--fit-power-model needs the capture's clock to turn cycles into time: give --clock HZ")
    rows: list[tuple[dict[str, float], float]] = []
    for index, measured in energy.items():
        f = features(layers[index], clock_hz) if index in layers else None
        if f is not None and measured.energy_uj > 0:
            rows.append((f, measured.energy_uj))
    used = [k for k in FEATURES if any(f[k] > 0 for f, _ in rows)]
    if len(rows) < len(used) + 2:
        raise CaptureError(
            f"--fit-power-model: the recording measured {len(rows)} layer(s) with energy; fitting and testing "
            f"{len(used)} coefficients ({', '.join(used)}) needs at least {len(used) + 2}"
        )
    x = np.array([[f[k] for k in used] for f, _ in rows])
    y = np.array([e for _, e in rows])
    coefficients = _solve(x, y)
    errors = []
    for i in range(len(y)):  # each layer predicted by the line fitted on the others
        keep = np.arange(len(y)) != i
        errors.append((x[i] @ _solve(x[keep], y[keep]) - y[i]) / y[i] * 100)
    rel = np.abs(np.array(errors))
    return PowerModel(
        {k: float(c) for k, c in zip(used, coefficients)},
        len(y),
        float(np.sqrt(np.mean(rel**2))),
        float(rel.max()),
        fitted_on,
    )


def _solve(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares of relative error: each row weighed by 1 / its energy."""
    w = 1.0 / y
    solution, *_ = np.linalg.lstsq(x * w[:, None], y * w, rcond=None)
    return np.asarray(solution)


def estimate(
    model: PowerModel, layers: Mapping[int, LayerStats], clock_hz: int | None, inferences: int
) -> EnergyEstimate:
    """Each layer's estimated energy per execution, from its time and counters.

    Args:
        model: The fitted model.
        layers: The capture's per-layer statistics.
        clock_hz: The capture's clock.
        inferences: Complete inferences (the executions per inference of each layer).

    Raises:
        UsageError: The clock is unknown, or the capture measured none of the counters the model uses.
    """
    if not clock_hz:
        raise UsageError("--power-model needs the capture's clock to turn cycles into time: give --clock HZ")
    counters = [k for k in model.coefficients if k != SECONDS]
    measured = {name for st in layers.values() for name in st.pmu_mean}
    if counters and not any(k in measured or (k == AXI_BEATS and any(map(_is_axi_beats, measured))) for k in counters):
        raise UsageError(
            f"--power-model {model.path}: the model uses {', '.join(counters)}, which this capture does not measure "
            "(no NPU PMU counters in it): record them, or fit a model on a run without them"
        )
    out: dict[int, tuple[float, float]] = {}
    total = 0.0
    for index, stats in layers.items():
        f = features(stats, clock_hz)
        if f is None:
            continue
        uj = sum(c * f[k] for k, c in model.coefficients.items())
        out[index] = (uj, uj / f[SECONDS] / 1e3 if f[SECONDS] > 0 else float("nan"))
        assert stats.cycles is not None
        total += uj * stats.cycles.count / max(inferences, 1)
    return EnergyEstimate(model, out, total if out and inferences else None)


def _is_axi_beats(name: str) -> bool:
    """Whether PMU counter ``name`` counts AXI data beats (summed into :data:`AXI_BEATS`)."""
    return name.startswith("AXI") and "BEAT" in name


def read_model(path: str) -> PowerModel:
    """A model file written by ``--fit-power-model`` (exit 2 for one that is not)."""
    with reading_file(path, "a power model (JSON)", UsageError):
        text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{path}: not a power model: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UsageError(f'{path}: not a power model (no "format": "{FORMAT}"; write one with --fit-power-model)')
    if data.get("version") != VERSION:
        raise UsageError(f"{path}: power model version {data.get('version')!r}; this tracer reads version {VERSION}")
    try:
        coefficients = {str(k): float(v) for k, v in data["coefficients"].items()}
        fit = data["fit"]
        model = PowerModel(
            coefficients,
            int(fit["layers"]),
            float(fit["leave_one_out_rms_pct"]),
            float(fit["leave_one_out_worst_pct"]),
            dict(data.get("fitted_on") or {}),
            path,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"{path}: a power model with a missing or bad field ({exc!r})") from None
    unknown = set(coefficients) - set(FEATURES)
    if unknown or SECONDS not in coefficients:
        raise UsageError(
            f"{path}: a power model's coefficients are {', '.join(FEATURES)} (with {SECONDS}); "
            f"this one has {', '.join(sorted(coefficients))}"
        )
    return model


def estimate_json(e: EnergyEstimate, names: Mapping[int, str]) -> dict[str, Any]:
    """The report's ``energy_estimate`` section (docs/energy.md, "Without a meter")."""
    m = e.model
    return {
        "estimate": True,
        "model": m.path,
        "coefficients": m.coefficients,
        "fit_error_pct": round(m.error_pct, 3),
        "fit_worst_pct": round(m.worst_pct, 3),
        "fit_layers": m.layers,
        "fitted_on": m.fitted_on,
        "inference_uj": None if e.inference_uj is None else round(e.inference_uj, 3),
        "layers": [
            {
                "index": i,
                "name": names.get(i, f"#{i}"),
                "energy_uj": round(uj, 4),
                "power_mw": round(mw, 3) if mw == mw else None,
            }
            for i, (uj, mw) in sorted(e.layers.items())
        ],
    }
