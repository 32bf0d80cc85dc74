"""The report's sampling sections as text: sampler, per-operator NPU time, CPU hot spots.

Rendered from the report object's ``sampling``, ``npu_operators`` and ``cpu_hotspots`` sections
(:meth:`tracer.analysis.sampling.SamplingAnalysis.report_sections`), so text and JSON carry the
same numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Table = Callable[[list[str], list[list[str]], set[int]], list[str]]
HOT_FUNCTIONS_SHOWN = 4


def sampling_text(report: dict[str, Any], table: Table) -> list[str]:
    """The three sections as lines (empty when the report has no ``sampling`` section)."""
    section = report.get("sampling")
    if not section:
        return []
    clock = report.get("capture", {}).get("clock_hz")
    lines = [_sampler_line(section, clock)]
    if report.get("npu_operators"):
        lines += _npu_operators(report["npu_operators"], table)
    if report.get("cpu_hotspots"):
        lines += _hotspots(report["cpu_hotspots"])
    return lines


def _sampler_line(section: dict[str, Any], clock: int | None) -> str:
    parts = []
    for info in section["sampler"]:
        rate = f"{clock / info['period_cycles']:,.0f} Hz nominal" if clock and info["period_cycles"] else "rate unknown"
        what = "+".join(w for w, on in (("NPU", info["npu"]), ("PC", info["pc"])) if on)
        text = f"{what} by {info['how']}, {rate} (period {info['period_cycles']:,} +- {info['dither_cycles'] // 2:,} cycles)"
        if info["cost_cycles"] is not None:
            text += f", cost {info['cost_cycles']:,.1f} cycles per interrupt"
        parts.append(text)
    if section["overhead_share"] is not None:
        parts.append(f"{100 * section['overhead_share']:.2f}% of the target's time")
    parts.append(f"{section['npu_samples']:,} NPU and {section['pc_samples']:,} PC samples")
    return "sampling    " + "; ".join(parts)


def _npu_operators(section: dict[str, Any], table: Table) -> list[str]:
    flag = "  [SIMULATED NPU]" if section["simulated"] else ""
    rate = f", {section['achieved_hz']:,.0f} samples/s of job time" if section["achieved_hz"] else ""
    lines = [
        f"npu ops     {section['samples']:,} NPU samples, {section['samples_outside_jobs']:,} outside NPU jobs{rate}{flag}"
    ]
    if section["message"]:
        lines.append(f"  per-job view only: {section['message']}")
    for job in section["jobs"]:
        stream = f", debug-database stream {job['stream']}" if job["stream"] is not None else ""
        size = f", {job['qsize']:,}-byte command stream" if job["qsize"] is not None else ""
        npu = f", {job['npu_cycles_mean']:,.0f} NPU cycles (PMU)" if job["npu_cycles_mean"] is not None else ""
        lines.append(
            f"  layer {job['layer']} ({job['label']}): {job['jobs']} jobs, {job['samples']:,} samples, "
            f"{job['cycles_mean']:,.0f} cycles per job{npu}{stream}{size}; NPU idle {100 * job['idle_share']:.2f}%"
        )
        if not job["operators"]:
            continue
        level = f"{100 * section['confidence']:g}%"
        rows = []
        for op in job["operators"]:
            rows.append(
                [
                    str(op["position"]),
                    op["name"],
                    op["operator"],
                    f"{op['offset']:,}",
                    f"{op['samples']:,}",
                    f"{100 * op['share']:.2f}%",
                    f"{100 * op['share_low']:.2f}-{100 * op['share_high']:.2f}%",
                    f"{op['cycles']:,.0f}",
                    _opt(op["npu_cycles"]),
                    _opt(op["predicted_npu_cycles"]),
                    "-" if op["ratio"] is None else f"{op['ratio']:.2f}",
                ]
            )
        headers = [
            "#",
            "operation",
            "op",
            "offset",
            "samples",
            "share",
            f"{level} interval",
            "cycles/inf",
            "npu cycles",
            "vela",
            "ratio",
        ]
        lines += ["  " + line for line in table(headers, rows, {0, 3, 4, 5, 6, 7, 8, 9, 10})]
    lines += [f"  note: {note}" for note in section["notes"]]
    return lines


def _hotspots(section: dict[str, Any]) -> list[str]:
    how = (
        "named from the ELF" + (" (inlined functions named)" if section["inlines"] else "")
        if section["symbolised"]
        else "not symbolised"
    )
    lines = [
        (
            f"hot spots   {section['source']}: {section['samples']:,} ({section['outside_layers']:,} outside layers, "
            f"{section['in_handlers']:,} in interrupt handlers), {how}"
        )
    ]
    if section["message"]:
        lines.append(f"  note: {section['message']}")
    for layer in section["layers"]:
        shown = layer["functions"][:HOT_FUNCTIONS_SHOWN]
        funcs = ", ".join(
            f"{f['name']}{' [in ' + f['inlined_in'] + ']' if f['inlined_in'] else ''} {100 * f['share']:.1f}%"
            for f in shown
        )
        more = len(layer["functions"]) - len(shown)
        lines.append(
            f"  layer {layer['layer']} ({layer['label']}, {layer['engine']}): {layer['samples']:,} samples: {funcs}"
            + (f" (+{more} more)" if more > 0 else "")
        )
    return lines


def _opt(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"
