"""Our own budget file, for any planner: TOML written by hand, or JSON (``tracer budget --format
json`` writes one, so any budget tracer understood can be saved, edited and read back).

TOML::

    [model]
    name = "kws"
    clock_hz = "400M"          # the clock the cycles below count; default: the capture's
    arena_bytes = 48_000       # planned tensor arena
    sram_bytes = 33_104        # planned SRAM peak
    sram_available_bytes = 2_097_152
    tolerance_pct = 10         # default tolerance of every layer
    jitter_threshold_pct = 20  # excess over a layer's median that makes a run an outlier
    jitter_min_share_pct = 1   # layers under this share of the inference: jitter is information
    energy_uj = 450.0          # energy of one inference in microjoules (tracer check --power)

    [[layer]]
    index = 0                  # or name = "conv1" (or both)
    op = "CONV_2D"
    engine = "npu"             # or "cpu"
    cycles = 14_283
    sram_bytes = 29_440
    tolerance_pct = 20
    data_dependent = true      # its work depends on its input: its spread is expected
    energy_uj = 35.0           # energy per execution, held against a power recording (--power)

A file whose layers give no ``cycles`` at all is an overlay: its layers set ``tolerance_pct``,
``data_dependent``, ``energy_uj`` (and ``engine``, ``op``, ``name``) on the layers another file predicts, matched by
index or name.

One module although over 400 lines: the budget file's grammar, its checks and the positions its
errors name are one reader.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterator
from typing import Any

from tracer.base.timeline import Engine
from tracer.budget.model import Budget, BudgetLayer, BudgetPart, Compiler, ModelBudget
from tracer.budget.text import BudgetText
from tracer.errors import UsageError
from tracer.limits import (
    CLOCK_RANGE,
    MAX_BUDGET_LAYERS,
    MAX_CYCLES,
    MAX_JSON_BUDGET_CHARS,
    MAX_MEMORY_BYTES,
    MAX_TOLERANCE_PCT,
    MAX_TOML_BUDGET_CHARS,
    InputError,
    check_range,
    parse_json,
    parse_toml,
    valid_clock_hz,
)
from tracer.units import parse_clock

MAX_LAYER_INDEX = 2**31  # an operator index of a model (TFLite's are 32-bit)
MAX_ENERGY_UJ = 1e12  # a megajoule: no inference of a microcontroller

MODEL_KEYS = {
    "name": "the model name (text)",
    "clock_hz": 'the clock the cycles count, in Hz (a number or text such as "400M")',
    "cycles_total": "predicted cycles of one inference",
    "arena_bytes": "planned tensor arena in bytes",
    "sram_bytes": "planned SRAM peak in bytes",
    "sram_available_bytes": "SRAM on the part in bytes",
    "flash_bytes": "read-only data in flash in bytes",
    "dram_bytes": "data in DRAM in bytes",
    "tolerance_pct": "default per-layer tolerance in percent",
    "jitter_threshold_pct": "excess over a layer's median that makes a run an outlier, in percent",
    "jitter_min_share_pct": "share of the inference under which a layer's jitter is information, in percent",
    "energy_uj": "energy budget of one inference in microjoules (held against --power)",
    "compiler": "the planner's name (text)",
    "compiler_version": "the planner's version (text)",
}
LAYER_KEYS = {
    "index": "the operator's index in the model (0, 1, ...)",
    "name": "the layer or output tensor name (text)",
    "op": 'the operator type (text, e.g. "CONV_2D")',
    "engine": '"npu" or "cpu"',
    "cycles": "predicted cycles at the model's clock",
    "sram_bytes": "predicted SRAM use in bytes",
    "tolerance_pct": "this layer's tolerance in percent",
    "data_dependent": "true if the layer's work depends on its input (its jitter is then information)",
    "energy_uj": "energy budget of one execution in microjoules (held against --power)",
}
# Keys ``tracer budget --format json`` writes that a reader takes or ignores.
_JSON_MODEL_EXTRA = {"memory", "details", "compiler"}
_JSON_LAYER_EXTRA = {"predicted_cycles", "npu_subgraph", "parts", "origin"}


@dataclasses.dataclass(frozen=True)
class UserBudget:
    """A parsed user file.

    Attributes:
        budget: The budget (layers empty for an overlay).
        overlay: Layer settings to apply to another file's layers (an overlay file), else empty.
        explicit: Model fields the file sets (they win over compiler files).
    """

    budget: Budget
    overlay: tuple[BudgetLayer, ...]
    explicit: frozenset[str]


def looks_like_toml(text: str) -> bool:
    """True if the text has a ``[model]`` or ``[[layer]]`` table header."""
    return re.search(r"^[ \t]*(\[model\]|\[\[layer\]\])[ \t]*(#.*)?$", text, re.MULTILINE) is not None


def looks_like_json_budget(text: str) -> bool:
    """True if the text is a JSON object (a budget is then expected)."""
    return text.lstrip().startswith("{")


def read_toml(source: BudgetText) -> UserBudget:
    """Parse a TOML budget.

    Raises:
        UsageError: Not TOML, an unknown key, a value of the wrong kind (with its line).
    """
    _check_size(source, MAX_TOML_BUDGET_CHARS, "TOML", _TOML_LAYER.finditer(source.text), "[[layer]] tables")
    try:
        data = parse_toml(source.text)
    except InputError as exc:
        raise source.error(exc.line, exc.message) from None
    locate = _TomlLines(source.text)
    unknown = sorted(set(data) - {"model", "layer"})
    if unknown:
        raise source.error(
            locate.key((), unknown[0]), f"unknown table or key {unknown[0]!r}; expected [model] and [[layer]] tables"
        )
    layers = data.get("layer", [])
    if not isinstance(layers, list):
        raise source.error(locate.key((), "layer"), "'layer' must be an array of tables: write each as [[layer]]")
    return _build(source, data.get("model", {}), layers, "layer", locate.line)


def read_json(source: BudgetText) -> UserBudget:
    """Parse a JSON budget (the shape ``tracer budget --format json`` prints).

    Raises:
        UsageError: Not JSON, an unknown key, a value of the wrong kind (with its line).
    """
    _check_size(source, MAX_JSON_BUDGET_CHARS, "JSON", iter(()), "layers")
    try:
        data = parse_json(source.text)
    except InputError as exc:
        raise source.error(exc.line, f"{exc.message} (column {exc.column})") from None
    if isinstance(data, dict) and isinstance(data.get("layers"), list) and len(data["layers"]) > MAX_BUDGET_LAYERS:
        raise source.error(1, f"{len(data['layers']):,} layers: a budget has at most {MAX_BUDGET_LAYERS:,}")
    positions = _json_lines(source.text)
    if not isinstance(data, dict):
        raise source.error(1, "expected a JSON object with 'model' and 'layers'")
    unknown = sorted(set(data) - {"model", "layers", "sources", "notes"})
    if unknown:
        raise source.error(
            positions.get((unknown[0],), 1), f"unknown key {unknown[0]!r}; expected 'model' and 'layers'"
        )
    layers = data.get("layers", [])
    if not isinstance(layers, list):
        raise source.error(positions.get(("layers",), 1), "'layers' must be a list of objects")

    def line(path: tuple[Any, ...]) -> int:
        json_path = tuple("layers" if p == "layer" else p for p in path)
        while json_path and json_path not in positions:
            json_path = json_path[:-1]
        return positions.get(json_path, 1)

    return _build(source, data.get("model", {}), layers, "layers", line, json_shape=True)


_TOML_LAYER = re.compile(r"^[ \t]*\[\[[ \t]*layer[ \t]*\]\]", re.MULTILINE)


def _check_size(source: BudgetText, limit: int, kind: str, layers: Iterator[re.Match[str]], what: str) -> None:
    """Refuse a budget of our own format larger than any model's before parsing it: its parsers
    take seconds per MiB, and a file may be 64 MiB (docs/limits.md).
    """
    if len(source.text) > limit:
        raise source.error(1, f"{len(source.text):,} characters: a {kind} budget has at most {limit:,}")
    for k, m in enumerate(layers):
        if k == MAX_BUDGET_LAYERS:
            line = source.text.count("\n", 0, m.start()) + 1
            raise source.error(line, f"more than {MAX_BUDGET_LAYERS:,} {what}: a budget has at most that many layers")


def _build(
    source: BudgetText,
    model: Any,
    layers: list[Any],
    layer_word: str,
    line_of: Any,
    json_shape: bool = False,
) -> UserBudget:
    if not isinstance(model, dict):
        raise source.error(line_of(("model",)), "'model' must be a table of keys")
    allowed_model = set(MODEL_KEYS) | (_JSON_MODEL_EXTRA if json_shape else set())
    for key in model:
        if key not in allowed_model:
            raise source.error(line_of(("model", key)), _unknown(key, "[model]", MODEL_KEYS))
    get = _Getter(source, line_of)
    if json_shape:
        compiler = get.compiler(("model", "compiler"), model.get("compiler"))
    else:
        compiler_name = get.text(("model", "compiler"), model.get("compiler"))
        version = get.text(("model", "compiler_version"), model.get("compiler_version"))
        compiler = Compiler(compiler_name, version) if compiler_name else None
    memory = get.table(("model", "memory"), model.get("memory")) if json_shape else {}
    details = get.table(("model", "details"), model.get("details")) if json_shape else {}
    mb = ModelBudget(
        name=get.text(("model", "name"), model.get("name")) or "",
        clock_hz=get.clock(("model", "clock_hz"), model.get("clock_hz")),
        cycles_total=get.cycles(("model", "cycles_total"), model.get("cycles_total")),
        sram_bytes=get.size(("model", "sram_bytes"), model.get("sram_bytes")),
        arena_bytes=get.size(("model", "arena_bytes"), model.get("arena_bytes")),
        flash_bytes=get.size(("model", "flash_bytes"), model.get("flash_bytes")),
        dram_bytes=get.size(("model", "dram_bytes"), model.get("dram_bytes")),
        sram_available_bytes=get.size(("model", "sram_available_bytes"), model.get("sram_available_bytes")),
        tolerance_pct=get.percent(("model", "tolerance_pct"), model.get("tolerance_pct")),
        jitter_threshold_pct=get.percent(("model", "jitter_threshold_pct"), model.get("jitter_threshold_pct")),
        jitter_min_share_pct=get.percent(("model", "jitter_min_share_pct"), model.get("jitter_min_share_pct")),
        memory={str(k): get.size(("model", "memory", k), v) or 0 for k, v in memory.items() if v is not None},
        details=dict(details),
        compiler=compiler,
        energy_uj=get.energy(("model", "energy_uj"), model.get("energy_uj")),
    )
    explicit = frozenset(k for k in model if model.get(k) is not None and k in MODEL_KEYS)

    parsed: list[BudgetLayer] = []
    any_cycles = False
    allowed_layer = set(LAYER_KEYS) | (_JSON_LAYER_EXTRA if json_shape else set())
    for k, table in enumerate(layers):
        where = ("layer", k)
        if not isinstance(table, dict):
            raise source.error(line_of(where), f"{layer_word} #{k + 1} must be a table of keys")
        for key in table:
            if key not in allowed_layer:
                raise source.error(line_of((*where, key)), _unknown(key, f"{layer_word} #{k + 1}", LAYER_KEYS))
        cycles_key = "cycles" if "cycles" in table or not json_shape else "predicted_cycles"
        cycles = get.cycles((*where, cycles_key), table.get(cycles_key))
        any_cycles = any_cycles or cycles is not None
        index = get.index((*where, "index"), table.get("index"))
        name = get.text((*where, "name"), table.get("name")) or ""
        if index is None and not name:
            raise source.error(line_of(where), f"{layer_word} #{k + 1}: give 'index' or 'name' (or both)")
        engine = get.engine((*where, "engine"), table.get("engine"))
        parts = get.parts((*where, "parts"), table.get("parts")) if json_shape else ()
        parsed.append(
            BudgetLayer(
                position=k,
                index=index,
                name=name,
                op=get.text((*where, "op"), table.get("op")) or "",
                engine=engine,
                predicted_cycles=cycles,
                sram_bytes=get.size((*where, "sram_bytes"), table.get("sram_bytes")),
                tolerance_pct=get.percent((*where, "tolerance_pct"), table.get("tolerance_pct")),
                data_dependent=get.flag((*where, "data_dependent"), table.get("data_dependent")),
                npu_subgraph=get.index((*where, "npu_subgraph"), table.get("npu_subgraph")),
                energy_uj=get.energy((*where, "energy_uj"), table.get("energy_uj")),
                parts=parts,
                aliases=tuple(dict.fromkeys(p.name for p in parts if p.name and p.name != name)),
                origin=source.where(line_of(where)),
            )
        )
    _check_unique(source, parsed, line_of)
    if parsed and not any_cycles:
        return UserBudget(Budget(mb, (), (source.path,)), tuple(parsed), explicit)
    if mb.cycles_total is None and parsed and all(la.predicted_cycles is not None for la in parsed):
        mb = dataclasses.replace(mb, cycles_total=math.fsum(la.predicted_cycles or 0.0 for la in parsed))
    return UserBudget(Budget(mb, tuple(parsed), (source.path,)), (), explicit)


def _check_unique(source: BudgetText, layers: list[BudgetLayer], line_of: Any) -> None:
    seen_index: dict[int, int] = {}
    seen_name: dict[str, int] = {}
    for k, layer in enumerate(layers):
        if layer.index is not None:
            if layer.index in seen_index:
                raise source.error(
                    line_of(("layer", k, "index")),
                    f"index {layer.index} is already used by layer #{seen_index[layer.index] + 1}; each layer needs its own",
                )
            seen_index[layer.index] = k
        if layer.name:
            if layer.name in seen_name:
                raise source.error(
                    line_of(("layer", k, "name")),
                    f"name {layer.name!r} is already used by layer #{seen_name[layer.name] + 1}; each layer needs its own",
                )
            seen_name[layer.name] = k


class _Getter:
    """Typed values with errors that name the line and what was expected."""

    def __init__(self, source: BudgetText, line_of: Any) -> None:
        self.source = source
        self.line_of = line_of

    def _fail(self, path: tuple[Any, ...], expected: str, value: Any) -> UsageError:
        key = path[-1]
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
        return self.source.error(self.line_of(path), f"{key!r}: expected {expected}, got {shown}")

    def text(self, path: tuple[Any, ...], value: Any) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise self._fail(path, "text in quotes", value)
        return value

    def cycles(self, path: tuple[Any, ...], value: Any) -> float | None:
        if value is None:
            return None
        if not check_range(value, 0, MAX_CYCLES):
            raise self._fail(path, "a number of cycles from 0 to 2**48", value)
        return float(value)

    def percent(self, path: tuple[Any, ...], value: Any) -> float | None:
        if value is None:
            return None
        if not check_range(value, 0, MAX_TOLERANCE_PCT):
            raise self._fail(path, "a percentage from 0 to 10000", value)
        return float(value)

    def energy(self, path: tuple[Any, ...], value: Any) -> float | None:
        if value is None:
            return None
        if not check_range(value, 0, MAX_ENERGY_UJ):
            raise self._fail(path, "microjoules from 0 to 1e12", value)
        return float(value)

    def flag(self, path: tuple[Any, ...], value: Any) -> bool:
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self._fail(path, "true or false", value)
        return value

    def size(self, path: tuple[Any, ...], value: Any) -> int | None:
        if value is None:
            return None
        if not check_range(value, 0, MAX_MEMORY_BYTES, integer=True):
            raise self._fail(path, "a whole number of bytes from 0 to 2**40", value)
        return int(value)

    def index(self, path: tuple[Any, ...], value: Any) -> int | None:
        if value is None:
            return None
        if not check_range(value, 0, MAX_LAYER_INDEX, integer=True):
            raise self._fail(path, "a layer index (0, 1, ... up to 2**31)", value)
        return int(value)

    def engine(self, path: tuple[Any, ...], value: Any) -> Engine | None:
        if value is None:
            return None
        if not isinstance(value, str) or value.lower() not in ("npu", "cpu"):
            raise self._fail(path, '"npu" or "cpu"', value)
        return Engine(value.lower())

    def clock(self, path: tuple[Any, ...], value: Any) -> int | None:
        if value is None:
            return None
        expected = f'a frequency, {CLOCK_RANGE} (e.g. 400000000 or "400M")'
        if isinstance(value, str):
            try:
                return parse_clock(value)
            except UsageError:
                raise self._fail(path, expected, value) from None
        if not check_range(value, 0, float("inf")) or not valid_clock_hz(round(value)):
            raise self._fail(path, expected, value)
        return int(round(value))

    def table(self, path: tuple[Any, ...], value: Any) -> dict[str, Any]:
        """A JSON object of anything (``details``), or of numbers (``memory``), checked by the caller."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self._fail(path, "an object", value)
        return value

    def compiler(self, path: tuple[Any, ...], value: Any) -> Compiler | None:
        """``model.compiler`` of the JSON shape: ``{"name", "version", "config": {text: text}}``."""
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self._fail(path, "an object with 'name', 'version' and 'config'", value)
        name = self.text((*path, "name"), value.get("name")) or "user"
        version = self.text((*path, "version"), value.get("version"))
        config = value.get("config") or {}
        if not isinstance(config, dict) or not all(isinstance(v, (str, int, float)) for v in config.values()):
            raise self._fail((*path, "config"), "an object of text values", config)
        return Compiler(name, version, {str(k): str(v) for k, v in config.items()})

    def parts(self, path: tuple[Any, ...], value: Any) -> tuple[BudgetPart, ...]:
        """``parts`` of a JSON layer: the compiler's operations (as ``tracer budget --parts`` writes)."""
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self._fail(path, "a list of objects", value)
        parts = []
        for k, p in enumerate(value):
            where = (*path, k)
            if not isinstance(p, dict):
                raise self._fail(where, "an object", p)
            engine = self.engine((*where, "engine"), p.get("engine", "npu"))
            detail = {}
            for key, number in p.items():
                if key in ("cycles", "sram_bytes") or isinstance(number, bool) or not isinstance(number, (int, float)):
                    continue
                if not check_range(number, 0, 2**53):
                    raise self._fail((*where, key), "a number from 0 to 2**53", number)
                detail[str(key)] = float(number)
            parts.append(
                BudgetPart(
                    str(p.get("op", "")),
                    str(p.get("name", "")),
                    engine or Engine.NPU,
                    self.cycles((*where, "cycles"), p.get("cycles", 0.0)) or 0.0,
                    self.size((*where, "sram_bytes"), p.get("sram_bytes")),
                    detail,
                    str(p.get("origin", "")),
                )
            )
        return tuple(parts)


def _unknown(key: str, where: str, known: dict[str, str]) -> str:
    listing = "; ".join(f"{k}: {v}" for k, v in known.items())
    return f"unknown key {key!r} in {where}; expected one of: {listing}"


class _TomlLines:
    """Line numbers of tables and keys of a TOML text (tomllib gives values, not positions)."""

    # Table headers: "[name]" and "[[name]]"; the name is stripped after the match (a pattern that
    # took the spaces around it too was cubic in a long run of them).
    _HEADER = re.compile(r"^\s*(\[\[?)([^\[\]#]*)\]\]?\s*(#.*)?$")
    _NAME = re.compile(r"[A-Za-z0-9_.\-\"' ]+")
    _KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*')\s*=")

    def __init__(self, text: str) -> None:
        self.lines: dict[tuple[Any, ...], int] = {}
        table: tuple[Any, ...] = ()
        counts: dict[str, int] = {}
        for no, raw in enumerate(text.splitlines(), start=1):
            h = self._HEADER.match(raw)
            if h and self._NAME.fullmatch(h.group(2).strip()):
                name = h.group(2).strip().strip("\"'")
                if h.group(1) == "[[":
                    k = counts.get(name, 0)
                    counts[name] = k + 1
                    table = (name, k)
                else:
                    table = (name,)
                self.lines.setdefault(table, no)
                continue
            m = self._KEY.match(raw)
            if m:
                self.lines.setdefault((*table, m.group(1).strip("\"'")), no)

    def key(self, table: tuple[Any, ...], key: str) -> int:
        return self.line((*table, key))

    def line(self, path: tuple[Any, ...]) -> int:
        """The line of ``path`` (a key, a table), else of its nearest enclosing table, else 1."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return 1


def _json_lines(text: str) -> dict[tuple[Any, ...], int]:
    """Line of every key and list element of a JSON text, by path (``("layers", 3, "cycles")``)."""
    positions: dict[tuple[Any, ...], int] = {}
    stack: list[list[Any]] = []  # [kind "obj"/"arr", path, index of the array's current element]
    line = 1
    i = 0
    n = len(text)
    pending_key: str | None = None
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
        elif ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            token = text[i + 1 : j]
            line += token.count("\n")
            k = j + 1
            while k < n and text[k] in " \t\r\n":
                k += 1
            if stack and stack[-1][0] == "obj" and k < n and text[k] == ":":
                try:
                    pending_key = json.loads(f'"{token}"')
                except json.JSONDecodeError:
                    pending_key = token
                positions[(*stack[-1][1], pending_key)] = line
            i = j
        elif ch in "{[":
            if stack and stack[-1][0] == "obj":
                path = (*stack[-1][1], pending_key)
            elif stack:
                path = (*stack[-1][1], stack[-1][2])
                positions.setdefault(path, line)
            else:
                path = ()
            stack.append(["obj" if ch == "{" else "arr", path, 0])
        elif ch in "}]":
            if stack:
                stack.pop()
        elif ch == "," and stack and stack[-1][0] == "arr":
            stack[-1][2] += 1
        elif stack and stack[-1][0] == "arr" and ch not in " \t\r":
            positions.setdefault((*stack[-1][1], stack[-1][2]), line)
        i += 1
    return positions
