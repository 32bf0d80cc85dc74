"""Findings about the NPU: how busy its PMU says it was, and whether it is the NPU the model was
compiled for.

* ``npu-utilization-low`` (warning): NPU_ACTIVE over the NPU cycle counter below 80 % (option
  ``npu_utilization``), per NPU layer (a capture's per-layer PMU deltas) or per inference (the
  totals a log printed; IDLE = TOTAL - ACTIVE when only two of the three are given);
* ``npu-config-mismatch`` (error): the Ethos-U driver refused the command stream because the model
  was compiled for another NPU configuration (``NPU config mismatch: npu.macs_per_cc=8
  optimizer.macs_per_cc=7``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeGuard

from tracer.analysis.findings.base import Finding, Severity
from tracer.analysis.findings.common import describe, n
from tracer.analysis.pmu import npu_utilization
from tracer.base.timeline import Engine, simulated_npu

if TYPE_CHECKING:
    from tracer.analysis.result import Analysis

KINDS = ("npu-utilization-low", "npu-config-mismatch")

UTILIZATION_FIX = (
    "The NPU is waiting: look at its AXI traffic (weights read over AXI1/EXT from flash or DRAM: move "
    "them to faster memory or enable the flash cache; on Dedicated_Sram a too-small Vela "
    "--arena-cache-size), at CPU work between NPU operators, and compile with the Vela --system-config "
    "of your board so the estimates show the same bottleneck."
)
# Ethos-U configurations by MACs per cycle, for naming the --accelerator-config to use.
ACCELERATORS = {"U55": (32, 64, 128, 256), "U65": (256, 512), "U85": (128, 256, 512, 1024, 2048)}


def utilization(analysis: Analysis) -> Iterable[Finding]:
    """``npu-utilization-low`` per NPU layer, else per inference."""
    timeline = analysis.timeline
    minimum = analysis.settings.npu_utilization
    simulated = simulated_npu(timeline.labels)
    label = " [NPU PMU values simulated: no real NPU]" if simulated else ""
    found_layer = False
    for index, st in analysis.layers.items():
        if timeline.layer(index).engine is not Engine.NPU or not st.pmu_mean:
            continue
        use = npu_utilization({k: round(v) for k, v in st.pmu_mean.items()})
        if use is None or use.ratio >= minimum:
            continue
        found_layer = True
        yield Finding(
            "npu-utilization-low",
            Severity.WARNING,
            index,
            f"{describe(timeline, index)}: the NPU is active {use.ratio:.1%} of its cycles (NPU_ACTIVE "
            f"{n(use.active)} of {n(use.total)}, idle {n(use.idle)} per execution), below {minimum:.0%}{label}",
            {**use.to_json(), "limit": minimum, "simulated": simulated, "per": "layer execution (mean)"},
            UTILIZATION_FIX,
        )
    if found_layer:
        return
    per_inference = analysis.pmu.per_inference
    for i in per_inference.utilization_rows(minimum).tolist():
        row = per_inference[i]
        use = npu_utilization(row.counters)
        if use is None or use.ratio >= minimum:  # the columns' verdict, confirmed on the row
            continue
        yield Finding(
            "npu-utilization-low",
            Severity.WARNING,
            None,
            f"inference {row.number}: the NPU is active {use.ratio:.1%} of its cycles (NPU ACTIVE "
            f"{n(use.active)}, IDLE {n(use.idle)}, TOTAL {n(use.total)}), below {minimum:.0%}{label}",
            {**use.to_json(), "limit": minimum, "simulated": simulated, "inference": row.number, "per": "inference"},
            UTILIZATION_FIX,
            (row.number,),
        )


def config_mismatch(analysis: Analysis) -> Iterable[Finding]:
    """``npu-config-mismatch`` from the driver's lines."""
    rows = analysis.timeline.log_facts.npu_config_mismatches
    if not rows:
        return
    fields = {r.field: r for r in rows}
    parts = [f"{name} compiled {r.optimizer}, NPU {r.npu}" for name, r in fields.items()]
    fix = "Compile the model for the NPU that runs it (Vela --accelerator-config), or run it on the NPU it was compiled for."
    macs = fields.get("macs_per_cc")
    npu_macs, built_macs = (macs.npu, macs.optimizer) if macs else (None, None)
    if _log2_macs(npu_macs) and _log2_macs(built_macs):
        have, built = 2**npu_macs, 2**built_macs  # the driver prints log2 of the MACs per cycle
        parts[list(fields).index("macs_per_cc")] += f" (compiled for {built} MACs/cycle, the NPU has {have})"
        configs = [f"ethos-{f.lower()}-{have}" for f, sizes in ACCELERATORS.items() if have in sizes]
        fix = (
            f"Recompile with Vela --accelerator-config for this NPU ({' or '.join(configs)}: {have} MACs per "
            "cycle), or run the model on the NPU it was compiled for."
        )
    lines = [r.line for r in rows]
    yield Finding(
        "npu-config-mismatch",
        Severity.ERROR,
        None,
        "the Ethos-U driver refused the model: it was compiled for another NPU configuration ("
        + "; ".join(parts)
        + "), so the inference failed",
        {"mismatches": [r.to_json() for r in fields.values()], "lines": lines},
        fix,
    )


def _log2_macs(value: Any) -> TypeGuard[int]:
    """True for a log2 of MACs per cycle some NPU could have (up to 2**16): a log line may say anything."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 16


RULES = (utilization, config_mismatch)
