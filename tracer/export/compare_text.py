"""The comparison as text for a terminal and as Markdown for a pull-request comment.

Both are made from the comparison object (:mod:`tracer.export.compare_json`) and carry the same
content: the verdict, a table of every change (inference latency and layers), why each real
change happened, memory, findings that appeared or went away, and notes.
"""

from __future__ import annotations

from typing import IO, Any

from tracer.export.report_text import _n, _table

SIGNS = {"slower": "SLOWER", "faster": "faster", "changed": "changed", "unchanged": "", "not measured": "not measured"}


def render_text(obj: dict[str, Any]) -> str:
    """The comparison as text."""
    out = [
        f"base        {_side(obj['base'])}",
        f"new         {_side(obj['new'])}",
        (
            f"rule        slower or faster: median change beyond {obj['threshold_pct']:g} % and real "
            f"(Mann-Whitney p < {obj['alpha']:g} and 95 % bootstrap interval excludes 0; exact when a side has no spread)"
        ),
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
    out += ["", "memory      high-water marks"]
    out += [f"  {line}" for line in _memory_lines(obj)] or ["  none reported"]
    out += ["", "findings"] + [f"  {line}" for line in _finding_lines(obj)]
    if obj.get("energy"):  # --base-power/--new-power (docs/energy.md)
        from tracer.export.energy_text import energy_change_lines

        out += ["", *energy_change_lines(obj["energy"])]
    for note in obj["notes"]:
        out.append(f"note        {note}")
    return "\n".join(out) + "\n"


def render_markdown(obj: dict[str, Any]) -> str:
    """The comparison as GitHub-flavoured Markdown."""
    out = [
        f"### tracer compare: {_verdict(obj)}",
        "",
        f"**Base:** {_side(obj['base'], code=True)}  ",
        f"**New:** {_side(obj['new'], code=True)}",
        "",
        (
            f"A change counts when the median moved by more than {obj['threshold_pct']:g} % and it is real: "
            f"Mann-Whitney p < {obj['alpha']:g} and the 95 % bootstrap interval excludes 0 (exact when a side has "
            "no spread)."
        ),
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
    memory = _memory_lines(obj)
    findings = _finding_lines(obj)
    out += ["", "<details><summary>Memory and findings</summary>", ""]
    out += [f"- {line}" for line in memory] or ["- no memory reported"]
    out += [""] + [f"- {line}" for line in findings]
    out += ["", "</details>"]
    if obj["notes"]:
        out += [""] + [f"> {note}" for note in obj["notes"]]
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
        _pct(p99["pct"]),
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


def _verdict(obj: dict[str, Any]) -> str:
    regressions = obj["regressions"]
    if not regressions:
        return f"PASS: no regression beyond {obj['threshold_pct']:g} %"
    return f"FAIL: {len(regressions)} regression(s) beyond {obj['threshold_pct']:g} %: {', '.join(regressions)}"


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
