"""``load_budget(paths)``: recognise each file by its content and combine them into one budget.

Files that belong together are combined: a Vela per-layer CSV, its summary CSV and its debug
database form one Vela budget (Vela's saved console output gives the summary, and with
``--verbose-performance`` the per-layer table, in one file); a Glow header adds memory sizes; a TOML or JSON file adds (and
overrides) model fields, or gives the layers itself, or, when its layers have no ``cycles``,
overlays per-layer settings (tolerance, data-dependent) on the layers another file predicts.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracer.budget.glow import is_glow_header, read_glow_header
from tracer.budget.model import Budget, BudgetLayer, ModelBudget
from tracer.budget.text import BudgetText
from tracer.budget.user_file import UserBudget, looks_like_json_budget, looks_like_toml, read_json, read_toml
from tracer.budget.vela_budget import vela_budget
from tracer.budget.vela_csv import (
    VelaLayerTable,
    VelaSummary,
    is_per_layer_csv,
    is_summary_csv,
    read_per_layer,
    read_summary,
)
from tracer.budget.vela_debugdb import DebugDb, is_debug_db, read_debug_db
from tracer.budget.vela_stdout import is_vela_stdout, read_vela_stdout
from tracer.errors import UsageError

EXPECTED = (
    "expected a Vela per-layer CSV (header 'Original Operator,...' or 'TFLite_operator,...'), a Vela "
    "summary CSV (header 'experiment,network,...'), a Vela debug database (XML), Vela's console output "
    "('Network summary for ...'), a Glow bundle header "
    "(#define <NAME>_CONSTANT_MEM_SIZE ...), or a TOML/JSON budget ([model] and [[layer]] tables)"
)
_MODEL_NUMBERS = (
    "energy_uj",
    "clock_hz",
    "cycles_total",
    "sram_bytes",
    "arena_bytes",
    "flash_bytes",
    "dram_bytes",
    "sram_available_bytes",
    "tolerance_pct",
    "jitter_threshold_pct",
    "jitter_min_share_pct",
)


def file_kind(source: BudgetText) -> str:
    """What a file is, from its content: ``vela-per-layer``, ``vela-summary``, ``vela-debug-db``,
    ``vela-stdout``, ``glow``, ``toml`` or ``json``.

    Raises:
        UsageError: None of those.
    """
    text = source.text
    if is_per_layer_csv(text):
        return "vela-per-layer"
    if is_summary_csv(text):
        return "vela-summary"
    if is_debug_db(text):
        return "vela-debug-db"
    if is_vela_stdout(text):
        return "vela-stdout"
    if is_glow_header(text):
        return "glow"
    if looks_like_json_budget(text):
        return "json"
    if looks_like_toml(text):
        return "toml"
    if not text.strip():
        raise source.error(1, f"empty file; {EXPECTED}")
    raise source.error(1, f"not a budget file; {EXPECTED}")


def load_budget(paths: Sequence[str | os.PathLike[str]]) -> Budget:
    """Read and combine budget files.

    Raises:
        UsageError: A file is unreadable or unrecognised, has a parse error (file, line and what
            was expected), or two files disagree (two per-layer CSVs, two layer lists, two clocks).
    """
    if not paths:
        raise UsageError("no budget file given")
    return load_budget_texts([BudgetText.read(path) for path in budget_files(paths)])


def budget_files(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """The files of ``paths``, a folder standing for the Vela outputs in it (``vela --output-dir``:
    its ``*_per-layer.csv``, ``*_summary_*.csv`` and ``*_debug.xml``).

    Raises:
        UsageError: A folder without any of them.
    """
    files: list[str] = []
    for item in paths:
        path = Path(item)
        if not path.is_dir():
            files.append(str(item))
            continue
        found = sorted({*path.glob("*_per-layer.csv"), *path.glob("*_summary_*.csv"), *path.glob("*_debug.xml")})
        if not found:
            raise UsageError(f"{item}: a folder without Vela's *_per-layer.csv, *_summary_*.csv or *_debug.xml")
        files += [str(f) for f in found]
    return files


def load_budget_texts(texts: Sequence[BudgetText]) -> Budget:
    """:func:`load_budget` for files already read (tests, budgets that do not live in files)."""
    tables: list[VelaLayerTable] = []
    summaries: list[VelaSummary] = []
    dbs: list[DebugDb] = []
    others: list[Budget] = []
    users: list[UserBudget] = []
    order: list[str] = []
    for source in texts:
        order.append(source.path)
        kind = file_kind(source)
        if kind == "vela-per-layer":
            tables.append(read_per_layer(source))
        elif kind == "vela-summary":
            summaries.append(read_summary(source))
        elif kind == "vela-debug-db":
            dbs.append(read_debug_db(source))
        elif kind == "vela-stdout":
            table, summary = read_vela_stdout(source)
            summaries.append(summary)
            if table is not None:
                tables.append(table)
        elif kind == "glow":
            others.append(read_glow_header(source))
        elif kind == "json":
            users.append(read_json(source))
        else:
            users.append(read_toml(source))
    groups = (
        (tables, "Vela per-layer CSVs/tables"),
        (summaries, "Vela summary CSVs/network summaries"),
        (dbs, "Vela debug databases"),
    )
    for group, what in groups:
        if len(group) > 1:
            names = " and ".join(g.source.path for g in group)
            raise UsageError(f"two {what} given ({names}): give one model's files per budget")
    if dbs and not tables:
        raise UsageError(f"{dbs[0].source.path}: a Vela debug database needs its per-layer CSV beside it")
    parts: list[Budget] = []
    if tables or summaries:
        parts.append(
            vela_budget(tables[0] if tables else None, summaries[0] if summaries else None, dbs[0] if dbs else None)
        )
    parts.extend(others)
    return _combine(parts, users, tuple(order))


def _combine(compiled: list[Budget], users: list[UserBudget], sources: tuple[str, ...]) -> Budget:
    notes: list[str] = []
    model = ModelBudget()
    owner: dict[str, str] = {}
    layers: tuple[BudgetLayer, ...] = ()
    layers_from = ""
    for budget in compiled + [u.budget for u in users]:
        notes.extend(budget.notes)
        src = budget.sources[0] if budget.sources else "?"
        if budget.layers:
            if layers:
                raise UsageError(f"both {layers_from} and {src} give layers: give one file with layers per budget")
            layers, layers_from = budget.layers, src
    for budget in compiled:
        model = _merge_model(
            model, budget.model, owner, budget.sources[0] if budget.sources else "?", notes, strict=True
        )
    for user in users:
        model = _merge_model(
            model, user.budget.model, owner, user.budget.sources[0], notes, strict=False, only=user.explicit
        )
    for user in users:
        if user.overlay:
            if not layers:
                raise UsageError(
                    f"{user.budget.sources[0]}: its layers have no 'cycles' and no other file gives layers to apply them to"
                )
            layers = _apply_overlay(layers, user.overlay, user.budget.sources[0], layers_from)
    if model.cycles_total is None and layers and all(la.predicted_cycles is not None for la in layers):
        model = dataclasses.replace(model, cycles_total=sum(la.predicted_cycles or 0.0 for la in layers))
    streams = next((b.command_streams for b in compiled if b.command_streams), ())
    return Budget(model, layers, sources, tuple(dict.fromkeys(notes)), streams)


def _merge_model(
    into: ModelBudget,
    new: ModelBudget,
    owner: dict[str, str],
    src: str,
    notes: list[str],
    strict: bool,
    only: frozenset[str] | None = None,
) -> ModelBudget:
    """Fill ``into`` from ``new``. Compiler files must agree (``strict``); the user's explicit
    values win, with a note when they change what a compiler file said.
    """
    changes: dict[str, Any] = {}
    for key in ("name", *_MODEL_NUMBERS):
        value = getattr(new, key)
        if value in (None, "") or (only is not None and key not in only):
            continue
        old = getattr(into, key)
        if old in (None, ""):
            changes[key] = value
            owner[key] = src
        elif old != value:
            if key == "name" and strict:
                notes.append(f"model name {old!r} ({owner[key]}) and {value!r} ({src}) differ; using {old!r}")
            elif strict:
                raise UsageError(f"{owner[key]} and {src} disagree on {key}: {old} vs {value}")
            else:
                notes.append(f"{key} {value} from {src} replaces {old} from {owner[key]}")
                changes[key] = value
                owner[key] = src
    if new.memory:
        changes["memory"] = {**into.memory, **new.memory}
    if new.details:
        changes["details"] = {**into.details, **new.details}
    if new.compiler is not None and (into.compiler is None or (not strict and only is not None and "compiler" in only)):
        changes["compiler"] = new.compiler
    return dataclasses.replace(into, **changes)


def _apply_overlay(
    layers: tuple[BudgetLayer, ...], overlay: tuple[BudgetLayer, ...], src: str, layers_from: str
) -> tuple[BudgetLayer, ...]:
    by_index = {la.index: k for k, la in enumerate(layers) if la.index is not None}
    by_name: dict[str, int] = {}
    for k, la in enumerate(layers):
        for name in (la.name, *la.aliases):
            if name:
                by_name.setdefault(name, k)
    out = list(layers)
    for item in overlay:
        at = by_index.get(item.index) if item.index is not None else None
        if at is None and item.name:
            at = by_name.get(item.name)
        if at is None:
            what = f"index {item.index}" if item.index is not None else f"name {item.name!r}"
            raise UsageError(f"{item.origin}: layer with {what} matches no layer of {layers_from}")
        target = out[at]
        out[at] = dataclasses.replace(
            target,
            tolerance_pct=item.tolerance_pct if item.tolerance_pct is not None else target.tolerance_pct,
            data_dependent=item.data_dependent or target.data_dependent,
            energy_uj=item.energy_uj if item.energy_uj is not None else target.energy_uj,
            engine=item.engine or target.engine,
            op=item.op or target.op,
            name=target.name or item.name,
        )
    return tuple(out)
