"""A budget from Vela's outputs: the per-layer CSV's operations grouped into model operators, the
summary's clock, totals and memory, and (when given) the debug database's exact mapping.
"""

from __future__ import annotations

import math
from pathlib import Path

from tracer.base.timeline import Engine
from tracer.budget.model import Budget, BudgetLayer, Compiler, ModelBudget
from tracer.budget.ops import normalize_op
from tracer.budget.vela_csv import VelaLayerTable, VelaRow, VelaSummary
from tracer.budget.vela_debugdb import DebugDb, map_rows

# Memory modes whose SRAM peak is the tensor arena (Dedicated_Sram keeps the arena in DRAM and uses
# SRAM as a cache; its size then says nothing about the arena).
_ARENA_IN_SRAM = ("shared_sram", "sram_only")
_DETAIL_KEYS = (
    "cycles_npu",
    "cycles_sram_access",
    "cycles_dram_access",
    "cycles_on_chip_flash_access",
    "cycles_off_chip_flash_access",
    "inference_time",
    "inferences_per_second",
    "batch_size",
    "nn_macs",
    "nn_tops",
    "passes_before_fusing",
    "passes_after_fusing",
    "sram_bandwidth",
    "dram_bandwidth",
    "on_chip_flash_bandwidth",
    "off_chip_flash_bandwidth",
)
# Rounding of the legacy core's float cycles may leave the sum this far from the total.
SUM_SLACK_CYCLES = 0.5


def vela_budget(table: VelaLayerTable | None, summary: VelaSummary | None, db: DebugDb | None) -> Budget:
    """Build the budget from whichever of the three files were given (at least one CSV).

    The layers' predicted cycles add up to the per-layer CSV's total, which Vela makes equal to the
    summary's ``cycles_total``; a difference is reported in ``notes`` (files of different runs).
    """
    notes: list[str] = []
    sources = [t.source.path for t in (table, summary, db) if t is not None]
    layers: tuple[BudgetLayer, ...] = ()
    if table is not None:
        layers = _layers(table, db, notes)
        cpu = [la for la in layers if la.engine is Engine.CPU]
        if cpu:
            names = ", ".join(la.label for la in cpu)
            notes.append(
                f"Vela makes no estimate for CPU operators: {len(cpu)} CPU layer(s) without prediction ({names})"
            )
    model = _model(table, summary, notes)
    if summary is not None and summary.printed:
        notes.append(
            f"{summary.source.path}: Vela's console output prints sizes to 0.01 KiB, so its byte counts are "
            "within 5 bytes of Vela's (the summary CSV has them exactly)"
        )
    if summary is not None and summary.cycles_total is None and table is None:
        notes.append(
            f"{summary.source.path}: Vela printed no cycle estimate (run it with --verbose-performance for "
            "the per-layer table, --verbose-cycle-estimate for the totals)"
        )
    if table is not None and summary is not None and summary.cycles_total is not None:
        total = table.cycles_total
        # A printed table rounds each row's cycles to a whole number: up to half a cycle per row.
        slack = SUM_SLACK_CYCLES * len(table.rows) if table.source is summary.source else SUM_SLACK_CYCLES
        if abs(total - summary.cycles_total) > slack:
            notes.append(
                f"per-layer cycles add up to {total:g} but {summary.source.path} gives cycles_total "
                f"{summary.cycles_total:g}: are the two files from the same Vela run?"
            )
        stem = _network_of(table.source.path)
        if stem and stem != summary.network:
            notes.append(f"{table.source.path} looks like network {stem!r}, the summary is for {summary.network!r}")
    return Budget(model, layers, tuple(sources), tuple(notes), db.streams if db is not None else ())


def _network_of(path: str) -> str:
    name = Path(path).name
    return name[: -len("_per-layer.csv")] if name.endswith("_per-layer.csv") else ""


def _model(table: VelaLayerTable | None, summary: VelaSummary | None, notes: list[str]) -> ModelBudget:
    config = {"core": table.dialect} if table is not None else {}
    if summary is None:
        assert table is not None
        notes.append(
            f"no Vela summary CSV given: the NPU clock is unknown, so {table.source.path}'s cycles are "
            "compared as if counted at the capture's clock (give <model>_summary_<config>.csv too)"
        )
        return ModelBudget(
            name=_network_of(table.source.path),
            cycles_total=table.cycles_total,
            compiler=Compiler("vela", None, config),
        )
    v = summary.values
    for key in (
        "accelerator_configuration",
        "system_config",
        "memory_mode",
        "weights_storage_area",
        "feature_map_storage_area",
    ):
        if isinstance(v.get(key), str):
            config[key] = str(v[key])
    memory = {k: int(x) for k, x in v.items() if k.endswith("_memory_used_bytes") or k == "arena_cache_size_bytes"}
    for key in ("total_original_weights", "total_npu_encoded_weights"):
        if isinstance(v.get(key), float):
            memory[key + "_bytes"] = int(v[key])
    sram = memory.get("sram_memory_used_bytes")
    flash_parts = [
        memory[k] for k in ("on_chip_flash_memory_used_bytes", "off_chip_flash_memory_used_bytes") if k in memory
    ]
    mode = str(v.get("memory_mode", "")).lower()
    arena = sram if mode in _ARENA_IN_SRAM else None
    if arena is None and mode:
        notes.append(
            f"memory mode {v.get('memory_mode')}: Vela's SRAM figure is the NPU cache, not the tensor arena "
            "(the arena is counted in dram_bytes with the constants); no arena prediction"
        )
    details = {k: v[k] for k in _DETAIL_KEYS if k in v}
    # Traffic per inference (bytes read/written per memory), not sizes.
    details.update(
        {k: v[k] for k in v if k.endswith("_bytes") and k not in memory and k not in ("total_original_weights",)}
    )
    if "inference_time" in details:
        details["inference_time_s"] = details.pop("inference_time")
    return ModelBudget(
        name=summary.network,
        clock_hz=summary.clock_hz,
        cycles_total=summary.cycles_total
        if summary.cycles_total is not None
        else (table.cycles_total if table else None),
        sram_bytes=sram,
        arena_bytes=arena,
        flash_bytes=sum(flash_parts) if flash_parts else None,
        dram_bytes=memory.get("dram_memory_used_bytes"),
        memory=memory,
        details=details,
        compiler=Compiler("vela", None, config),
    )


def _layers(table: VelaLayerTable, db: DebugDb | None, notes: list[str]) -> tuple[BudgetLayer, ...]:
    if db is not None:
        mapping = map_rows(db, table)
        if isinstance(mapping, str):
            notes.append(
                f"{db.source.path} does not fit {table.source.path} ({mapping}); grouping inferred from the order"
            )
        else:
            return _layers_by_index(table, db, mapping.indices, mapping.operators, notes)
    notes.append(
        f"layers grouped from the operation order of {table.source.path} and model indices unknown "
        "(give Vela's <model>_debug.xml from --enable-debug-db for the exact mapping)"
    )
    groups = _group_by_order(table.rows)
    return tuple(_layer(k, None, g) for k, g in enumerate(groups))


def _layers_by_index(
    table: VelaLayerTable, db: DebugDb, indices: list[int], operators: dict[int, str], notes: list[str]
) -> tuple[BudgetLayer, ...]:
    groups: dict[int, list[VelaRow]] = {}
    for row, index in zip(table.rows, indices):
        groups.setdefault(index, []).append(row)
    layers = [_layer(0, index, rows) for index, rows in groups.items()]
    if table.dialect == "legacy":
        # The legacy core leaves CPU operators out of its CSV; the database still lists them as
        # operations that no command stream runs.
        queued = {o for _, o in db.queue}
        cpu = sorted(
            {
                db.sources[src].index
                for oid, (src, _) in db.optimised.items()
                if oid not in queued and src in db.sources and db.sources[src].index not in groups
            }
        )
        for index in cpu:
            layers.append(BudgetLayer(0, index, "", operators.get(index, ""), Engine.CPU, None, origin=db.source.path))
        if cpu:
            notes.append(f"CPU operators taken from {db.source.path} (the legacy core's CSV omits them): indices {cpu}")
    layers.sort(key=lambda la: la.index if la.index is not None else -1)
    return tuple(_renumber(la, k) for k, la in enumerate(layers))


def _renumber(layer: BudgetLayer, position: int) -> BudgetLayer:
    from dataclasses import replace

    return replace(layer, position=position)


def _group_by_order(rows: tuple[VelaRow, ...]) -> list[list[VelaRow]]:
    """Rows of one model operator are consecutive and share ``Original Operator``; a second operator
    of the same type starts where its first operation's type comes round again.
    """
    groups: list[list[VelaRow]] = []
    for row in rows:
        current = groups[-1] if groups else None
        if current is None or _starts_new_group(current, row):
            groups.append([row])
        else:
            current.append(row)
    return groups


def _starts_new_group(group: list[VelaRow], row: VelaRow) -> bool:
    first, last = group[0], group[-1]
    if row.part.engine is Engine.CPU or last.part.engine is Engine.CPU:
        return True
    if row.block != last.block or row.subgraph != last.subgraph:
        return True
    if normalize_op(row.original_op) != normalize_op(first.original_op):
        return True
    if row.part.name == last.part.name:
        return False  # a fused sub-operation (Relu, LUT) of the operation before
    return normalize_op(row.part.op) == normalize_op(first.part.op)


def _layer(position: int, index: int | None, rows: list[VelaRow]) -> BudgetLayer:
    parts = tuple(r.part for r in rows)
    npu = [p for p in parts if p.engine is Engine.NPU]
    engine = Engine.NPU if npu else Engine.CPU
    usage = [p.sram_bytes for p in parts if p.sram_bytes is not None]
    name = parts[-1].name
    subgraphs = {r.subgraph for r in rows if r.subgraph is not None}
    return BudgetLayer(
        position=position,
        index=index,
        name=name,
        op=rows[0].original_op,
        engine=engine,
        predicted_cycles=math.fsum(p.cycles for p in npu) if npu else None,
        sram_bytes=max(usage) if usage else None,
        npu_subgraph=min(subgraphs) if subgraphs else None,
        parts=parts,
        aliases=tuple(dict.fromkeys(p.name for p in parts if p.name and p.name != name)),
        origin=parts[0].origin,
    )
