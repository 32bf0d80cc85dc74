"""Glow bundle headers (NXP eIQ, static bundle API): the memory a compiled model needs.

Grammar of the header (``<NAME>`` is the model name in upper case)::

    #define <NAME>_CONSTANT_MEM_SIZE     216704    weights ("constantWeight", flash)
    #define <NAME>_MUTABLE_MEM_SIZE      352000    inputs and outputs ("mutableWeight", RAM)
    #define <NAME>_ACTIVATIONS_MEM_SIZE  1075200   scratch ("activations", RAM)
    #define <NAME>_MEM_ALIGN             64
    #define <NAME>_<placeholder>         307200    byte offset in the mutable buffer

and a comment block giving ``Model name``, ``Total data size`` and each placeholder's name, type,
size and offset. Glow makes no per-layer cycle prediction: the budget has no layers.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TypedDict

from tracer.budget.model import Budget, Compiler, ModelBudget
from tracer.budget.text import BudgetText
from tracer.limits import MAX_MEMORY_BYTES

# Object-like macros only: ``#define GLOW_MEM_ALIGN(size) ...`` is a function-like helper.
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_][A-Za-z0-9_]*)(?![A-Za-z0-9_(])(.*)$")  # value stripped after
_SIZE_MACRO = re.compile(
    r"^([A-Za-z_][A-Za-z0-9_]*)_(CONSTANT_MEM_SIZE|MUTABLE_MEM_SIZE|ACTIVATIONS_MEM_SIZE|MEM_ALIGN)$"
)
_INT = re.compile(r"^\(?\s*(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*\s*\)?$")
_COMMENT = re.compile(r"^\s*//\s?(.*)$")
_REQUIRED = ("CONSTANT_MEM_SIZE", "MUTABLE_MEM_SIZE", "ACTIVATIONS_MEM_SIZE")


@dataclasses.dataclass(frozen=True, slots=True)
class Placeholder:
    """An input or output of the bundle, inside the mutable buffer."""

    name: str
    offset: int
    size_bytes: int | None = None
    elements: int | None = None
    type: str = ""


def is_glow_header(text: str) -> bool:
    """True if the text defines a Glow bundle's memory sizes."""
    return "_CONSTANT_MEM_SIZE" in text and "_ACTIVATIONS_MEM_SIZE" in text and "#" in text


def read_glow_header(source: BudgetText) -> Budget:
    """Parse a bundle header into a memory-only budget.

    Raises:
        UsageError: A size macro whose value is not an integer, a required size missing, or two
            bundles in one header.
    """
    lines = source.lines
    defines: dict[str, tuple[int, str]] = {}
    sizes: dict[str, dict[str, tuple[int, str]]] = {}  # prefix -> kind -> (line, text)
    comments: list[tuple[int, str]] = []
    for i, text in enumerate(lines, start=1):
        m = _COMMENT.match(text)
        if m:
            comments.append((i, m.group(1).strip()))
            continue
        m = _DEFINE.match(text)
        if not m:
            continue
        name, value = m.group(1), m.group(2).split("//")[0].strip()
        defines[name] = (i, value)
        s = _SIZE_MACRO.match(name)
        if s:
            sizes.setdefault(s.group(1), {})[s.group(2)] = (i, value)
    bundles = {p: k for p, k in sizes.items() if any(r in k for r in _REQUIRED)}
    if len(bundles) > 1:
        names = ", ".join(sorted(bundles))
        raise source.error(1, f"several Glow bundles in one header ({names}); give one header per bundle")
    if not bundles:
        raise source.error(
            len(lines) or 1, "end of file without <NAME>_CONSTANT_MEM_SIZE (expected a Glow bundle header)"
        )
    prefix, texts = next(iter(bundles.items()))
    kinds: dict[str, tuple[int, int]] = {}
    for kind, (line, value) in texts.items():
        number = _int(value)
        if number is None:
            raise source.error(line, f"{prefix}_{kind}: expected a size in bytes (an integer), got {_short(value)}")
        if number > MAX_MEMORY_BYTES:
            raise source.error(line, f"{prefix}_{kind}: expected a size in bytes from 0 to 2**40, got {_short(value)}")
        kinds[kind] = (number, line)
    for required in _REQUIRED:
        if required not in kinds:
            raise source.error(
                len(lines) or 1, f"end of file without {prefix}_{required} (expected a Glow bundle header)"
            )

    constant = kinds["CONSTANT_MEM_SIZE"][0]
    mutable = kinds["MUTABLE_MEM_SIZE"][0]
    activations = kinds["ACTIVATIONS_MEM_SIZE"][0]
    memory = {"constant_weights_bytes": constant, "mutable_weights_bytes": mutable, "activations_bytes": activations}
    if "MEM_ALIGN" in kinds:
        memory["mem_align_bytes"] = kinds["MEM_ALIGN"][0]

    model_name, total, version, described = _comment_facts(comments)
    if total is not None:
        memory["total_data_bytes"] = total
    placeholders = _placeholders(source, prefix, defines, described)
    notes = []
    if total is not None and total != constant + mutable + activations:
        notes.append(
            f"{source.path}: 'Total data size' {total} differs from constant + mutable + activations "
            f"= {constant + mutable + activations}"
        )
    for ph in placeholders:
        if ph.size_bytes is not None and ph.offset + ph.size_bytes > mutable:
            end = ph.offset + ph.size_bytes
            notes.append(f"{source.path}: placeholder {ph.name!r} ends at {end}, past the mutable buffer ({mutable})")
    model = ModelBudget(
        name=model_name or prefix.lower(),
        sram_bytes=mutable + activations,
        arena_bytes=activations,
        flash_bytes=constant,
        memory=memory,
        details={"placeholders": [dataclasses.asdict(p) for p in placeholders]},
        compiler=Compiler("glow", version, {"bundle": prefix}),
    )
    return Budget(model, (), (source.path,), tuple(notes))


def _int(text: str) -> int | None:
    """An integer literal of C, or None; one longer than any size (over 20 digits) is 2**64."""
    m = _INT.match(text.strip())
    if not m:
        return None
    digits = m.group(1)
    return 2**64 if len(digits) > 20 else int(digits, 0)


def _short(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:37] + "...")


class _Described(TypedDict, total=False):
    """What the comment block says of one placeholder."""

    type: str
    elements: int
    size_bytes: int
    offset: int


def _comment_facts(comments: list[tuple[int, str]]) -> tuple[str, int | None, str | None, dict[str, _Described]]:
    """Model name, total size, tool version and per-placeholder facts from the comment block."""
    name = ""
    total = None
    version = None
    described: dict[str, _Described] = {}
    current: _Described | None = None
    for _, text in comments:
        if m := re.match(r'Model name:\s*"([^"]*)"', text):
            name = m.group(1)
        elif m := re.match(r"Total data size:\s*([0-9]{1,15})\b", text):
            total = int(m.group(1))
        elif m := re.match(r"Glow Tools version:\s*(.+)$", text):
            version = m.group(1).strip()
        elif m := re.match(r'Name:\s*"([^"]*)"', text):
            current = described.setdefault(m.group(1), {})
        elif current is not None and (m := re.match(r"Type:\s*(.+)$", text)):
            current["type"] = m.group(1).strip()
        elif current is not None and (m := re.match(r"Size:\s*([0-9]{1,15})\s*\(elements\)", text)):
            current["elements"] = int(m.group(1))
        elif current is not None and (m := re.match(r"Size:\s*([0-9]{1,15})\s*\(bytes\)", text)):
            current["size_bytes"] = int(m.group(1))
        elif current is not None and (m := re.match(r"Offset:\s*([0-9]{1,15})\b", text)):
            current["offset"] = int(m.group(1))
    return name, total, version, described


def _placeholders(
    source: BudgetText, prefix: str, defines: dict[str, tuple[int, str]], described: dict[str, _Described]
) -> list[Placeholder]:
    out = []
    skip = {f"{prefix}_{k}" for k in ("CONSTANT_MEM_SIZE", "MUTABLE_MEM_SIZE", "ACTIVATIONS_MEM_SIZE", "MEM_ALIGN")}
    for macro, (line, value) in defines.items():
        if not macro.startswith(prefix + "_") or macro in skip:
            continue
        offset = _int(value)
        if offset is None:
            continue  # not an offset macro (Glow headers define nothing else with the prefix)
        if offset > MAX_MEMORY_BYTES:
            raise source.error(line, f"{macro}: expected an offset in bytes from 0 to 2**40, got {_short(value)}")
        name = macro[len(prefix) + 1 :]
        facts = described.get(name, {})
        if "offset" in facts and facts["offset"] != offset:
            raise source.error(
                line, f"{macro} is {offset} but the comment block gives offset {facts['offset']} for {name!r}"
            )
        out.append(
            Placeholder(
                name,
                offset,
                size_bytes=facts.get("size_bytes"),
                elements=facts.get("elements"),
                type=str(facts.get("type", "")),
            )
        )
    return out
