"""The comparison as text for a terminal and as Markdown for a pull-request comment.

Both are made from the comparison object (:mod:`tracer.export.compare_json`) and carry the same
content: the verdict, a table of every change (inference latency and layers), why each real
change happened, memory, findings that appeared or went away, and notes.
"""

from __future__ import annotations

from typing import IO, Any

from tracer.export.report_text import _n, _table

SIGNS = {
    "slower": "SLOWER",
    "faster": "faster",
    "changed": "changed",
    "inconclusive": "inconclusive",
    "unchanged": "",
    "not measured": "not measured",
}


def render_text(obj: dict[str, Any]) -> str:
    """The comparison as text."""
    out = [
        f"base        {_side(obj['base'])}",
        f"new         {_side(obj['new'])}",
        f"rule        {_rule(obj)}",
        f"verdict     {_verdict(obj)}",
        "",
    ]
    rows = [_row(ch, text=True) for ch in _changes(obj)]
    headers = [
        "#",
        "layer",
        "op",
        "count",
        "base p50",
        "new p50",
        "change",
        "95 % interval",
        "p99 change",
        "p",
        "verdict",
    ]
    out += _table(headers, rows, right={0, 3, 4, 5, 6, 7, 8, 9})
    why = [f"  {ch['label']}: {explain(ch)}" for ch in _changes(obj) if ch["significant"]]
    if why:
        out += ["", "why", *why]
    undecided = [f"  {line}" for line in _undecided_lines(obj)]
    if undecided:
        out += ["", "inconclusive", *undecided]
    out += ["", "plan", *(f"  {line}" for line in plan_lines(obj))]
    out += ["", "memory      high-water marks"]
    out += [f"  {line}" for line in _memory_lines(obj)] or ["  none reported"]
    out += ["", "findings"] + [f"  {line}" for line in _finding_lines(obj)]
    if obj.get("energy"):  # --base-power/--new-power (docs/energy.md)
        from tracer.export.energy_text import energy_change_lines

        out += ["", *energy_change_lines(obj["energy"])]
    if obj.get("planner"):  # --budget [--calibration] (docs/calibrate.md)
        from tracer.export.compare_planner_text import planner_text

        out += ["", *planner_text(obj["planner"])]
    for note in obj["notes"] + interval_notes(obj):
        out.append(f"note        {note}")
    return "\n".join(out) + "\n"


def interval_notes(obj: dict[str, Any]) -> list[str]:
    """Why quantiles have no interval, once per reason, with the changes it applies to."""
    reasons: dict[str, list[str]] = {}
    for ch in _changes(obj):
        for key in ("p50", "p99"):
            q = ch[key]
            if q and q.get("note"):
                reasons.setdefault(f"{'median' if key == 'p50' else 'p99'}: {q['note']}", []).append(ch["label"])
    return [f"{reason} ({_few(labels)})" for reason, labels in reasons.items()]


def _few(labels: list[str]) -> str:
    return ", ".join(labels[:4]) + (f" and {len(labels) - 4} more" if len(labels) > 4 else "")


def render_markdown(obj: dict[str, Any]) -> str:
    """The comparison as GitHub-flavoured Markdown."""
    out = [
        f"### tracer compare: {_verdict(obj)}",
        "",
        f"**Base:** {_side(obj['base'], code=True)}  ",
        f"**New:** {_side(obj['new'], code=True)}",
        "",
        f"Rule: {_rule(obj)}.",
        "",
        "| # | layer | op | count | base p50 | new p50 | change | 95 % interval | p99 change | p | verdict |",
        "|--:|---|---|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for ch in _changes(obj):
        cells = _row(ch, text=False)
        cells[-1] = f"**{cells[-1]}**" if ch["verdict"] == "slower" else cells[-1]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    why = [f"- **{ch['label']}**: {explain(ch)}" for ch in _changes(obj) if ch["significant"]]
    if why:
        out += ["", "**Why**", "", *why]
    undecided = _undecided_lines(obj)
    if undecided:
        out += ["", "**Inconclusive**", "", *(f"- {line}" for line in undecided)]
    out += ["", "**Plan**", "", *(f"- {line}" for line in plan_lines(obj))]
    if obj.get("planner"):  # --budget [--calibration] (docs/calibrate.md)
        from tracer.export.compare_planner_text import planner_markdown

        out += ["", *planner_markdown(obj["planner"])]
    memory = _memory_lines(obj)
    findings = _finding_lines(obj)
    out += ["", "<details><summary>Memory and findings</summary>", ""]
    out += [f"- {line}" for line in memory] or ["- no memory reported"]
    out += [""] + [f"- {line}" for line in findings]
    out += ["", "</details>"]
    notes = obj["notes"] + interval_notes(obj)
    if notes:
        out += [""] + [f"> {note}" for note in notes]
    return "\n".join(out) + "\n"


def write_text(obj: dict[str, Any], out: IO[str]) -> None:
    """Write :func:`render_text` to ``out``."""
    out.write(render_text(obj))


def write_markdown(obj: dict[str, Any], out: IO[str]) -> None:
    """Write :func:`render_markdown` to ``out``."""
    out.write(render_markdown(obj))


def explain(ch: dict[str, Any]) -> str:
    """Why a change happened, in one sentence (what moved: own time, interrupts, counters, engine)."""
    p50 = ch["p50"]
    parts = [f"median {_n(p50['base'])} -> {_n(p50['new'])} cycles ({_signed(p50['delta'])}, {_pct(p50['pct'])})"]
    why = ch.get("why")
    if why is None:
        return parts[0]
    own, isr = why["own"], why["interrupts"]
    parts.append(f"own time {_signed(own['delta'])} cycles, interrupts {_signed(isr['delta'])} cycles per execution")
    if abs(isr["delta"] or 0) > abs(own["delta"]):
        parts.append("mostly interrupt time: look at what preempts this layer")
    moved = [c for c in why["counters"] if c["name"] in why["moved"]]
    if moved:
        listed = ", ".join(f"{c['name']} {_pct(c['pct'])}" for c in moved)
        bound = {"memory": "memory traffic grew: memory-bound", "compute": "compute grew: compute-bound"}.get(
            why["bound"] or "", ""
        )
        parts.append(f"PMU {listed}" + (f" ({bound})" if bound else ""))
    elif why["counters"]:
        parts.append("no PMU counter moved beyond the threshold")
    if why["engine"]:
        parts.append(f"ran on the {why['engine']['base']}, now on the {why['engine']['new']}")
    return "; ".join(parts)


def _changes(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return ([obj["inference"]] if obj["inference"] else []) + obj["layers"]


def _row(ch: dict[str, Any], text: bool) -> list[str]:
    index = ch["new_index"] if ch["new_index"] is not None else ch["base_index"]
    p50, p99, test = ch["p50"], ch["p99"], ch["test"]
    count = f"{ch['base_count']:,}/{ch['new_count']:,}"
    if p50 is None:
        return [
            "-" if index is None else str(index),
            ch["label"],
            ch["op"],
            count,
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            ch["verdict"],
        ]
    ci = p50["ci"]
    interval = "exact" if ch["exact"] else "-" if ci is None else f"{_pct(ci['low_pct'])} .. {_pct(ci['high_pct'])}"
    p99_change = _pct(p99["pct"]) if p99["ci"] or ch["exact"] else f"{_pct(p99['pct'])} (no interval)"
    p = "-" if test is None else f"{test['p_value']:.2g}"
    verdict = SIGNS[ch["verdict"]] if text else ch["verdict"]
    return [
        "-" if index is None else str(index),
        ch["label"],
        ch["op"],
        count,
        _n(p50["base"]),
        _n(p50["new"]),
        f"{_signed(p50['delta'])} ({_pct(p50['pct'])})",
        interval,
        p99_change,
        p,
        verdict,
    ]


def _side(side: dict[str, Any], code: bool = False) -> str:
    inputs = side["inputs"]
    shown = inputs[0] if len(inputs) == 1 else f"{len(inputs)} captures ({inputs[0]}, ...)"
    if code:
        shown = f"`{shown}`"
    labels = side["labels"]
    build = labels.get("elf_build_id") or labels.get("git_revision") or labels.get("firmware_hash")
    extra = f"; build {build[:19]}" if build else ""
    return f"{shown}: {side['complete']:,} of {side['inferences']:,} inferences complete{extra}"


def _rule(obj: dict[str, Any]) -> str:
    threshold = f"{obj['threshold_pct']:g} %"
    return (
        f"slower or faster: the 95 % interval of the median's change lies beyond {threshold} and the change "
        f"is real (p < {obj['alpha']:g}; over captures when there are three or more, else over executions); "
        f"inconclusive: the interval straddles {threshold}; exact when a side has no spread"
    )


def _verdict(obj: dict[str, Any]) -> str:
    regressions = obj["regressions"]
    undecided = obj.get("inconclusive") or []
    more = f"; {len(undecided)} inconclusive, more runs needed: {', '.join(undecided)}" if undecided else ""
    if not regressions:
        return f"PASS: no regression beyond {obj['threshold_pct']:g} %{more}"
    return f"FAIL: {len(regressions)} regression(s) beyond {obj['threshold_pct']:g} %: {', '.join(regressions)}{more}"


def _undecided_lines(obj: dict[str, Any]) -> list[str]:
    """Each inconclusive change: its interval, what it straddles, and the runs that would decide it."""
    lines = []
    for ch in _changes(obj):
        if ch["verdict"] != "inconclusive":
            continue
        ci = ch["p50"]["ci"]
        decide = ch["decide"] or {}
        per_side = decide.get("per_side")
        runs = (
            f"about {per_side:,} {decide.get('unit', 'runs')} a side would decide it"
            if per_side
            else "its estimate sits on the threshold: no number of runs promises a decision"
        )
        lines.append(
            f"{ch['label']}: median change {_pct(ch['p50']['pct'])}, interval {_pct(ci['low_pct'])} .. "
            f"{_pct(ci['high_pct'])} against {obj['threshold_pct']:g} %: {runs}"
        )
    return lines


def plan_lines(obj: dict[str, Any]) -> list[str]:
    """What it takes to detect the planned change: for the inference and the layer that needs most."""
    plan = obj.get("plan") or {}
    planned = [ch for ch in _changes(obj) if ch.get("plan")]
    if not planned:
        return ["nothing to plan: no change has noise to measure (exact, or not measured)"]
    head = f"to detect {plan['change_pct']:g} % at alpha {plan['alpha']:g} with power {100 * plan['power']:.0f} %, a side needs"
    chosen = [ch for ch in planned if ch["label"] == "inference" and ch["base_index"] is None]
    layers = [ch for ch in planned if ch not in chosen]
    if layers:
        chosen.append(max(layers, key=_plan_size))
    lines = []
    for ch in chosen:
        p, v = ch["plan"], ch["variance"] or {}
        spread = f"within a capture {v.get('within_pct', 0):.2f} % per execution"
        if p["assumes_no_run_to_run"]:
            lines.append(
                f"{head} for {ch['label']}: {p['executions']:,} executions ({spread}; run-to-run variance not "
                "measured with one capture a side, so this is a lower bound)"
            )
        else:
            spread += f", run to run {v.get('run_to_run_pct') or 0:.2f} %"
            lines.append(
                f"{head} for {ch['label']}: {p['captures_per_side']:,} captures of {p['executions']:,} executions"
                f" ({spread})"
            )
    return lines


def _plan_size(ch: dict[str, Any]) -> tuple[int, int]:
    p = ch["plan"]
    return (p["captures_per_side"] or 0, p["executions"] or 0)


def _memory_lines(obj: dict[str, Any]) -> list[str]:
    lines = []
    for m in obj["memory"]:
        size = f" of {_n(m['size'])} bytes" if m["size"] else " bytes"
        delta = "" if m["delta"] is None else f" ({_signed(m['delta'])})"
        flag = f"  GREW beyond {obj['threshold_pct']:g} %" if m["grew"] else ""
        lines.append(f"{m['name']}: {_n(m['base'])} -> {_n(m['new'])}{size}{delta}{flag}")
    return lines


def _finding_lines(obj: dict[str, Any]) -> list[str]:
    lines = [f"appeared: [{f['severity']}] {f['id']}{_at(f)}: {f['message']}" for f in obj["findings"]["appeared"]]
    lines += [f"gone: [{f['severity']}] {f['id']}{_at(f)}: {f['message']}" for f in obj["findings"]["gone"]]
    return lines or ["none appeared or went away"]


def _at(finding: dict[str, Any]) -> str:
    return "" if finding["layer"] is None else f" (layer {finding['layer']})"


def _signed(value: float | int | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:+,.1f}"
    return f"{int(value):+,}"


def _pct(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value + 0.0 if round(value, 2) else 0.0:+.2f} %"  # no "-0.00 %"
