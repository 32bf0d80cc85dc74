"""The report as text for a terminal: the same content as the JSON, laid out in tables.

One module although over 400 lines: its sections share the report's column layout and number
formats; each section is a short function.
"""

from __future__ import annotations

from typing import IO, Any

from tracer.base.timeline import simulated_npu
from tracer.export.fit_width import fit_text
from tracer.export.sampling_text import sampling_text

LAYERS_PER_BLOCK = 10  # columns of the per-inference table before it wraps
CALIBRATION_MARKS = {"outside": "*", "partial": "~"}  # after a calibrated prediction, by its status


def _n(value: Any) -> str:
    """A number with thousands separators, or "-" for none."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return f"{value:,}"


def _bytes(value: int | None) -> str:
    if value is None:
        return "-"
    if value >= 1 << 20:
        return f"{value / (1 << 20):.1f} MiB"
    if value >= 1 << 10:
        return f"{value / (1 << 10):.1f} KiB"
    return f"{value} B"


def _table(headers: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


def render_report(report: dict[str, Any]) -> str:
    """The whole report as text."""
    out: list[str] = []
    out += _capture(report["capture"])
    out.append("")
    out += _inferences(report["inferences"], report["capture"].get("clock_hz"))
    out.append("")
    out += _layers(report["layers"], report["capture"])
    out.append("")
    out += _memory(report["memory"])
    out.append("")
    if report.get("budget"):
        out += _budget(report["budget"])
        out.append("")
    if report.get("pmu", {}).get("counters"):
        out += _pmu(report["pmu"])
        out.append("")
    if report.get("interrupts"):
        out += _interrupts(report["interrupts"], {layer["index"]: layer["name"] for layer in report["layers"]})
        out.append("")
    if report.get("tasks"):
        out += _tasks(report["tasks"], {layer["index"]: layer["name"] for layer in report["layers"]})
        out.append("")
    if report.get("jitter"):
        out += _jitter(report["jitter"])
        out.append("")
    if report.get("sampling"):  # issue 15: per-operator NPU time, CPU hot spots
        out += sampling_text(report, _table)
        out.append("")
    if report.get("energy"):  # issue 28: a power recording held against the timeline
        from tracer.export.energy_text import energy_text

        out += energy_text(report["energy"], _table)
        out.append("")
    if report.get("energy_estimate"):  # issue 28: no meter, a model fitted on a metered run
        from tracer.export.energy_text import estimate_text

        out += estimate_text(report["energy_estimate"], _table)
        out.append("")
    if report.get("log"):
        out += _log(report["log"])
        out.append("")
    out += _findings(report["findings"])
    if "per_inference" in report:
        out.append("")
        out += _per_inference(report["per_inference"], report["layers"])
    return "\n".join(out) + "\n"


def write_report_text(report: dict[str, Any], out: IO[str], width: int | None = None) -> None:
    """Write :func:`render_report` to ``out``; fitted to ``width`` columns when given (a terminal:
    :func:`tracer.export.fit_width.fit_text`), else as wide as its lines are.
    """
    text = render_report(report)
    out.write(text if width is None else fit_text(text, width))


def _capture(c: dict[str, Any]) -> list[str]:
    clock = f"{c['clock_hz'] / 1e6:g} MHz" if c.get("clock_hz") else "unknown clock"
    duration = "-" if c.get("duration") is None else f"{c['duration']:.4f} s ({c.get('duration_source')} time)"
    lines = [
        f"capture     {c.get('path') or c['source']}",
        f"source      {c['source']}",
        f"stream      {_bytes(c['bytes'])} ({c['bytes']:,} bytes), {_n(c.get('records'))} records, duration {duration}",
        f"clock       {clock}, cycles from {c['clock_source']}",
    ]
    if c.get("marker_cost_cycles") is not None:
        lines.append(f"markers     {c['marker_cost_cycles']:g} cycles per layer begin/end pair (measured on target)")
    for key, label in sorted(c.get("labels", {}).items()):
        lines.append(f"note        {key}: {label}")
    restarts = c.get("restarts") or []
    if restarts:
        shown = ", ".join(
            f"byte {r['offset']:,} (cycle {r['cycle']:,}, {r['reason'].replace('_', ' ')})" for r in restarts[:3]
        )
        more = f" and {len(restarts) - 3} more" if len(restarts) > 3 else ""
        lines.append(f"sessions    {c['sessions']}: the target restarted at {shown}{more}")
    loss = c["loss"]
    lost = {k: v for k, v in loss.items() if v}
    if lost:
        lines.append(
            "loss        "
            + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in lost.items())
            + "  (inferences touched are marked incomplete)"
        )
    else:
        lines.append("loss        none")
    for warning in c.get("warnings", []):
        lines.append(f"warning     {warning}")
    return lines


def _inferences(inf: dict[str, Any], clock_hz: int | None) -> list[str]:
    lines = [f"inferences  {inf['count']} ({inf['complete']} complete, {inf['count'] - inf['complete']} incomplete)"]
    lat = inf.get("latency_cycles")
    if lat:
        ms = f"  (p50 {1e3 * lat['p50'] / clock_hz:.3f} ms)" if clock_hz else ""
        lines.append(
            f"latency     cycles  min {_n(lat['min'])}  p50 {_n(lat['p50'])}  p99 {_n(lat['p99'])}  "
            f"max {_n(lat['max'])}  mean {_n(lat['mean'])}  std {_n(lat['std'])}{ms}"
        )
    elif inf["complete"]:
        lines.append("latency     not measured (no start and end time per inference)")
    else:
        lines.append("latency     no complete inference")
    for bad in inf.get("incomplete", [])[:20]:
        lines.append(f"incomplete  #{bad['number']}: {'; '.join(bad['problems'])}")
    if len(inf.get("incomplete", [])) > 20:
        lines.append(f"incomplete  ... and {len(inf['incomplete']) - 20} more (see --format json)")
    return lines


def _layers(layers: list[dict[str, Any]], capture: dict[str, Any]) -> list[str]:
    if not layers:
        return ["layers      none (no layer records in this capture)"]
    headers = ["#", "name", "op", "engine", "count", "min", "p50", "p99", "max", "mean", "std", "predicted", "ratio"]
    calibrated = any("calibrated_cycles" in layer for layer in layers)
    if calibrated:
        headers += ["calibrated", "cal.ratio"]
    rows = []
    has_pmu = False
    for layer in layers:
        c = layer["cycles"] or {}
        count = str(layer["count"]) + (f" (+{layer['excluded']} excl.)" if layer.get("excluded") else "")
        rows.append(
            [
                str(layer["index"]),
                layer["name"] or "-",
                layer["op"] or "-",
                layer["engine"],
                count,
                _n(c.get("min")),
                _n(c.get("p50")),
                _n(c.get("p99")),
                _n(c.get("max")),
                _n(c.get("mean")),
                _n(c.get("std")),
                _n(layer["predicted_cycles"]),
                "-" if layer["ratio"] is None else f"{layer['ratio']:.2f}",
            ]
        )
        if calibrated:
            rows[-1] += _calibrated_cells(layer)
        has_pmu = has_pmu or bool(layer.get("pmu_mean"))
    lines = ["layers      cycles per layer over complete inferences"]
    lines += ["  " + row for row in _table(headers, rows, right={0, *range(4, len(headers))})]
    if calibrated:
        lines.append(
            "  calibrated: the planner's prediction corrected by the calibration file (budget section); "
            "* outside what it has seen, ~ partly calibrated, - its operator type not calibrated"
        )
    if has_pmu:
        simulated = simulated_npu(capture.get("labels", {}))
        lines.append("")
        lines.append("npu pmu     mean counter values per layer" + ("  [SIMULATED: no real NPU]" if simulated else ""))
        names: list[str] = []
        for layer in layers:
            names += [n for n in layer.get("pmu_mean", {}) if n not in names]
        pmu_rows = [
            [str(layer["index"]), layer["name"] or "-"] + [_n(layer["pmu_mean"].get(n)) for n in names]
            for layer in layers
            if layer.get("pmu_mean")
        ]
        lines += [
            "  " + row for row in _table(["#", "name", *names], pmu_rows, right=set(range(2, 2 + len(names))) | {0})
        ]
    return lines


def _memory(memory: dict[str, Any]) -> list[str]:
    arena = memory["arena"]
    lines = []
    if arena["used"] is None:
        lines.append("arena       not reported")
    else:
        share = f" ({100 * arena['used'] / arena['size']:.1f}% of the arena)" if arena.get("size") else ""
        planned = f", planned {_n(arena['planned'])}" if arena.get("planned") is not None else ""
        lines.append(f"arena       used {_n(arena['used'])} of {_n(arena['size'])} bytes{share}{planned}")
    if not memory["stacks"]:
        lines.append("stacks      not reported")
    for stack in memory["stacks"]:
        share = f" ({100 * stack['high_water'] / stack['size']:.1f}%)" if stack.get("size") else ""
        canary = "canary intact" if stack["canary_ok"] else "CANARY OVERWRITTEN"
        lines.append(
            f"stack       {stack['name']}: high-water {_n(stack['high_water'])} of {_n(stack['size'])} bytes"
            f"{share}, {canary}"
        )
    sram = memory.get("sram") or {}
    if sram.get("planned_peak") is not None or sram.get("available") is not None:
        parts = [
            f"{label} {_n(sram[key])} bytes"
            for key, label in (("planned_peak", "compiler's peak"), ("available", "available on the part"))
            if sram.get(key) is not None
        ]
        lines.append("sram        " + ", ".join(parts))
    for failure in memory.get("allocation_failures", []):
        where = f" (line {failure['line']})" if failure.get("line") else ""
        lines.append(
            f"allocation  FAILED {failure['kind']}: requested {_n(failure['requested'])}, available "
            f"{_n(failure['available'])}, missing {_n(failure['missing'])} bytes{where}"
        )
    return lines


def _calibrated_cells(layer: dict[str, Any]) -> list[str]:
    """The calibrated prediction and ratio, marked by the calibration's status."""
    c = (layer.get("budget") or {}).get("calibrated") or {}
    mark = CALIBRATION_MARKS.get(c.get("status", ""), "")
    ratio = layer.get("calibrated_ratio")
    return [_n(layer.get("calibrated_cycles")) + mark, "-" if ratio is None else f"{ratio:.2f}"]


def _budget(budget: dict[str, Any]) -> list[str]:
    sources = ", ".join(budget.get("sources", []))
    lines = [f"budget      {budget.get('name') or '(unnamed)'} from {sources}", f"            {budget.get('units')}"]
    if budget.get("predicted_cycles_per_inference") is not None:
        lines.append(
            f"            predicted per inference: {_n(budget['predicted_cycles_per_inference'])} cycles "
            "(capture clock)"
        )
    unmatched = budget.get("unmatched_budget_layers") or []
    if unmatched:
        names = ", ".join(u.get("name") or f"{u.get('op')}#{u.get('index')}" for u in unmatched[:10])
        lines.append(f"            not measured: {names}")
    for note in budget.get("notes", []):
        lines.append(f"            note: {note}")
    calibration = budget.get("calibration")
    if calibration:
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(calibration["layers_by_status"].items()))
        lines.append(
            f"            calibration: {calibration['source']} ({len(calibration['operators'])} operator types, "
            f"{calibration['models']} models); limits from the {calibration['against']} prediction; layers: {statuses}"
        )
        if calibration.get("planner_difference"):
            lines.append(
                f"            calibration learnt with another planner setup: {calibration['planner_difference']}"
            )
    return lines


def _pmu(pmu: dict[str, Any]) -> list[str]:
    simulated = "  [SIMULATED: no real NPU]" if pmu.get("simulated") else ""
    lines = [
        f"pmu         counters per inference, totals over {pmu.get('totals_over', 0)} complete inference(s){simulated}"
    ]
    rows = []
    # One walk over the inferences' rows (made as they are read: one per inference of the capture).
    seen: dict[str, list[Any]] = {name: [] for name in pmu["counters"]}
    for row in pmu.get("per_inference", []):
        if row["complete"]:
            for name, value in row["counters"].items():
                if name in seen:
                    seen[name].append(value)
    for name in pmu["counters"]:
        values = seen[name]
        mean = sum(values) / len(values) if values else None
        rows.append(
            [
                name,
                pmu.get("units", {}).get(name) or "-",
                _n(pmu.get("totals", {}).get(name)),
                _n(min(values) if values else None),
                _n(mean),
                _n(max(values) if values else None),
            ]
        )
    lines += [
        "  " + row for row in _table(["counter", "unit", "total", "min", "mean", "max"], rows, right={2, 3, 4, 5})
    ]
    use = pmu.get("npu_utilization")
    if use:
        lines.append(f"  NPU active {use['ratio']:.1%} of its cycles ({_n(use['active'])} of {_n(use['total'])})")
    for name, stat in pmu.get("summaries", {}).items():
        lines.append(
            f"  {name}: {_n(stat.get('total'))} {stat.get('unit')} over {_n(stat.get('samples'))} samples "
            f"(mean {_n(stat.get('mean'))}, min {_n(stat.get('min'))}, max {_n(stat.get('max'))})"
        )
    return lines


def _log(log: dict[str, Any]) -> list[str]:
    keys = [k for k in log if k not in ("warnings", "per_inference")]
    lines = [f"log         {log.get('lines', '-')} lines; facts: {', '.join(keys)} (every number: --format json)"]
    for error in (log.get("errors") or [])[:5]:
        lines.append(f"  error at line {error.get('line')}: {error.get('text')}")
    return lines


def _findings(findings: list[dict[str, Any]]) -> list[str]:
    if not findings:
        return ["findings    none"]
    lines = [f"findings    {len(findings)}"]
    for f in findings:
        where = f" layer {f['layer']}" if f.get("layer") is not None else ""
        lines.append(f"  [{f.get('severity', 'info')}] {f.get('id', '')}{where}: {f.get('message', '')}")
        if f.get("evidence"):
            lines += _evidence(f["evidence"])
        if f.get("fix"):
            lines.append(f"      fix: {f['fix']}")
    return lines


def _evidence(evidence: dict[str, Any]) -> list[str]:
    """The numbers behind a finding, ``name value`` pairs wrapped at about 100 columns; nested
    lists and objects are counted (every value is in ``--format json``).
    """
    parts = [f"{key.replace('_', ' ')} {_evidence_value(value)}" for key, value in evidence.items()]
    lines, line = [], "      evidence:"
    for part in parts:
        if len(line) + len(part) + 3 > 100 and not line.endswith(":"):
            lines.append(line)
            line = "               "
        line += (" " if line.endswith(":") or not line.strip() else " · ") + part
    lines.append(line)
    return lines


def _evidence_value(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}"
    if isinstance(value, int):
        return _n(value)
    if isinstance(value, float):
        return f"{value:,.2f}".rstrip("0").rstrip(".") if abs(value) >= 1 else f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in value):
            shown = ", ".join(_evidence_value(v) for v in value[:10])
            return f"[{shown}{f', ... {len(value) - 10} more' if len(value) > 10 else ''}]"
        return f"{len(value)} (in --format json)"
    if isinstance(value, dict):
        return f"{len(value)} values (in --format json)"
    return str(value)


def _per_inference(listing: list[dict[str, Any]], layers: list[dict[str, Any]]) -> list[str]:
    indices = [layer["index"] for layer in layers]
    lines = ["per inference: cycles of every layer (layer index in the header)"]
    cycles: list[dict[int, int]] = []  # per inference: layer index -> its cycles (summed over executions)
    for inf in listing:
        by_layer: dict[int, int] = {}
        for span in inf["layers"]:
            by_layer[span["index"]] = by_layer.get(span["index"], 0) + span["cycles"]
        cycles.append(by_layer)
    for block in range(0, max(len(indices), 1), LAYERS_PER_BLOCK):
        cols = indices[block : block + LAYERS_PER_BLOCK]
        headers = ["inference", "status", "latency", *[f"L{i}" for i in cols]]
        rows = []
        for inf, by_layer in zip(listing, cycles):
            status = "ok" if inf["complete"] else "INCOMPLETE"
            rows.append([str(inf["number"]), status, _n(inf["latency_cycles"]), *[_n(by_layer.get(i)) for i in cols]])
        if block:
            lines.append("")
        lines += ["  " + row for row in _table(headers, rows, right={0, *range(2, 3 + len(cols))})]
    return lines


def _interrupts(section: dict[str, Any] | None, layer_names: dict[int, str]) -> list[str]:
    """The ``interrupts`` section as text lines."""
    if not section:
        return []
    lines = [
        f"interrupts  {section['count']} handler runs"
        + (f"  ({section['time']})" if section["time"] != "cycles" else "")
    ]
    time = section["time"]
    unit = "bytes apart" if "byte offsets" in time else ("timestamp ticks" if "timestamp ticks" in time else "cycles")
    for e in section["by_exception"]:
        c = e["cycles"] or {}
        repaired = f", {e['repaired']} with the exit lost and repaired" if e["repaired"] else ""
        lines.append(
            f"  {e['name']} (exception {e['exception']}): {e['count']} runs, {unit} min {_n(c.get('min'))} "
            f"p50 {_n(c.get('p50'))} max {_n(c.get('max'))}; "
            f"{e['in_layers']} inside layers{repaired}"
        )
    for h in section["by_layer"]:
        label = layer_names.get(h["layer"], "")
        lines.append(
            f"  in layer {h['layer']}{f' ({label})' if label else ''}: {h['name']} {h['hits']} times in "
            f"{h['inferences_hit']} of {h['spans']} runs, {h['cycles_per_hit']:,.0f} cycles per run "
            f"(max {h['cycles_max']:,})"
        )
    return lines


def _tasks(section: dict[str, Any], layer_names: dict[int, str]) -> list[str]:
    """The ``tasks`` section as text lines: CPU share per task, loss, time taken from layers."""
    time = section["time"]
    unit = "cycles" if time == "cycles" else "ticks"
    lost = (
        f"; {section['incomplete']} may hide a lost switch ({section['incomplete_cycles']:,} {unit}), left out "
        "of the shares"
        if section["incomplete"]
        else ""
    )
    lines = [f"tasks       {section['slices']} task slice(s){lost}" + (f"; {time}" if time != "cycles" else "")]
    for t in section["by_task"]:
        lines.append(f"  {t['name']}: {t['share']:.2%} of the CPU, {t['cycles']:,} {unit} in {t['slices']} slices")
    for h in section["by_layer"]:
        label = layer_names.get(h["layer"], "")
        lines.append(
            f"  in layer {h['layer']}{f' ({label})' if label else ''}: task {h['name']} took "
            f"{h['cycles_total']:,} {unit} from {h['hits']} of its {h['spans']} runs (max {h['cycles_max']:,})"
        )
    return lines


def _outlier_why(o: dict[str, Any]) -> str:
    """What an outlier's evidence names: handlers, tasks, the work measure."""
    parts = [f"{i['name']} {i['cycles']:,} cycles" for i in o.get("isrs", [])]
    parts += [f"task {t['name']} {t['cycles']:,} cycles" for t in o.get("tasks", [])]
    name = o.get("explained_by")
    if name is None and o.get("work"):
        name = next(iter(o["work"]))
    if name is not None:
        parts.append(f"{name} {o['work'][name]:,} vs {o['work_median'][name]:,}")
    return f" ({', '.join(parts)})" if parts else ""


def _jitter(section: dict[str, Any] | None) -> list[str]:
    """The ``jitter`` section as text lines: per layer spread, and the outliers with their causes."""
    if not section:
        return []
    lat = section.get("latency") or {}
    settings = section.get("settings") or {}
    origin = {"option": " (command line)", "budget": " (budget)"}
    threshold = f"{section['threshold_pct']:g}%{origin.get(settings.get('threshold_from', ''), '')}"
    share = (
        f"; layers under {settings['min_share_pct']:g}%{origin.get(settings.get('min_share_from', ''), '')} of "
        "the inference: information only"
        if "min_share_pct" in settings
        else ""
    )
    lines = [
        f"jitter      outliers: more than {threshold} above the median{share}"
        + (f"; latency cv {lat['cv']:.4f}, {lat['outliers']} slow inference(s)" if lat else "")
    ]
    for layer in section["layers"]:
        label = f"layer {layer['index']}" + (f" ({layer['name']})" if layer["name"] else "")
        head = f"  {label}: cv {layer['cv']:.4f}, p50 {layer['p50']:,} p99 {layer['p99']:,} max {layer['max']:,}"
        if layer.get("share") is not None:
            head += f", up to {layer['share']:.2%} of the inference"
        if layer.get("data_dependent"):
            head += ", data-dependent (budget)"
        if not layer["outliers"]:
            continue
        causes = ", ".join(f"{n} {c}" for c, n in layer["causes"].items())
        lines.append(f"{head}; {layer['outliers']} outlier(s): {causes}")
        for o in layer["listed"][:5]:
            lines.append(
                f"      inference {o['inference']}: {o['cycles']:,} cycles ({o['ratio']:.2f}x), {o['cause']}"
                + _outlier_why(o)
            )
    if len(lines) == 1:
        lines.append("  no layer has outliers")
    return lines
