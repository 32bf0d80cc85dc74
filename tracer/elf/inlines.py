"""Which function's code a PC is in, inlined functions included (DWARF ``DW_TAG_inlined_subroutine``).

An optimising compiler folds small static functions into their callers: the symbol table then
names only the caller (``net_run_layer``), while the debug information still records, for each
inlined call, the address ranges of the inlined code and the function it came from. Like
``addr2line -i``, :class:`CodeLocator` names a PC by its function symbol and, when the PC lies in
inlined code, by the outermost function inlined there (what the caller's source calls).

pyelftools reads the DWARF (versions 2 to 5: ``DW_AT_low_pc``/``DW_AT_high_pc`` pairs, and
``DW_AT_ranges`` lists in ``.debug_ranges`` or ``.debug_rnglists``); it is imported only here.
"""

from __future__ import annotations

import bisect
import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np

from tracer.elf.image import ElfImage, checked_elf, damaged_elf, read_elf
from tracer.errors import UsageError, reading_file
from tracer.limits import MAX_ELF_FILE_BYTES, read_limited

ADDRESS_FORMS = (
    "DW_FORM_addr",
    "DW_FORM_addrx",
    "DW_FORM_addrx1",
    "DW_FORM_addrx2",
    "DW_FORM_addrx3",
    "DW_FORM_addrx4",
)


@dataclasses.dataclass(frozen=True, slots=True)
class InlinedRange:
    """Code of an inlined call.

    Attributes:
        low, high: Its addresses ``[low, high)``.
        depth: 1 for a function inlined into a real function, 2 for one inlined into that ...
        name: The inlined function.
    """

    low: int
    high: int
    depth: int
    name: str


@dataclasses.dataclass
class CodeLocator:
    """Names code addresses: the function symbol and the outermost function inlined there.

    Attributes:
        image: The firmware image (symbols).
        ranges: The inlined calls' address ranges (empty when the image has no DWARF).
    """

    image: ElfImage
    ranges: list[InlinedRange] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        self._outer = sorted((r for r in self.ranges if r.depth == 1), key=lambda r: r.low)
        self._lows = [r.low for r in self._outer]

    @property
    def has_inlines(self) -> bool:
        """True when the image's debug information records inlined code."""
        return bool(self.ranges)

    def locate(self, pc: int) -> tuple[str | None, str | None]:
        """(function symbol, outermost inlined function) at ``pc``; either may be None."""
        pc &= ~1
        found = self.image.function_at(pc)
        function = found[0] if found else None
        at = bisect.bisect_right(self._lows, pc)
        inlined = None
        # Ranges at depth 1 do not overlap each other; the one starting last at or before pc.
        for k in range(at - 1, max(at - 8, -1), -1):
            r = self._outer[k]
            if r.low <= pc < r.high:
                inlined = r.name
                break
        return function, inlined

    def locate_all(self, pcs: np.ndarray) -> dict[int, tuple[str | None, str | None]]:
        """:meth:`locate` for each distinct value of ``pcs``."""
        return {int(pc): self.locate(int(pc)) for pc in np.unique(pcs).tolist()}


def open_locator(path: str | os.PathLike[str]) -> CodeLocator:
    """Read an ELF file's symbols and inlined-code ranges.

    Raises:
        UsageError: The file is not a readable ELF image.
    """
    p = Path(path)
    with reading_file(f"--elf {p}", "an ELF file", UsageError):
        data = read_limited(p, MAX_ELF_FILE_BYTES, "an ELF file")  # bounded, as open_elf reads it
    return CodeLocator(read_elf(data, name=str(p)), read_inlined_ranges(data, str(p)))


def read_inlined_ranges(data: bytes, name: str = "<elf>") -> list[InlinedRange]:
    """Every inlined call's address ranges in an ELF file's DWARF (empty without DWARF)."""
    with damaged_elf(name, "cannot read its DWARF debug information"):
        elf = checked_elf(data, name)
        if not elf.has_dwarf_info():
            return []
        dwarf = elf.get_dwarf_info()
        lists = dwarf.range_lists()
        out: list[InlinedRange] = []
        for cu in dwarf.iter_CUs():
            top = cu.get_top_DIE()
            base = _attr(top, "DW_AT_low_pc") or 0
            _walk(top, 0, cu, lists, base, out)
        return out
    return []  # (not reached: damaged_elf raises)


def _walk(die: Any, depth: int, cu: Any, lists: Any, base: int, out: list[InlinedRange]) -> None:
    for child in die.iter_children():
        child_depth = depth
        if child.tag == "DW_TAG_inlined_subroutine":
            child_depth = depth + 1
            name = _origin_name(child)
            if name:
                for low, high in _ranges(child, cu, lists, base):
                    out.append(InlinedRange(low, high, child_depth, name))
        elif child.tag == "DW_TAG_subprogram":
            child_depth = 0  # a real function: inlining depth counts from here
        if child.has_children:
            _walk(child, child_depth, cu, lists, base, out)


def _attr(die: Any, name: str) -> Any:
    attr = die.attributes.get(name)
    return attr.value if attr is not None else None


def _origin_name(die: Any) -> str | None:
    seen = 0
    while die is not None and seen < 8:
        name = _attr(die, "DW_AT_name")
        if name is not None:
            return name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
        for link in ("DW_AT_abstract_origin", "DW_AT_specification"):
            if link in die.attributes:
                die = die.get_DIE_from_attribute(link)
                break
        else:
            return None
        seen += 1
    return None


def _ranges(die: Any, cu: Any, lists: Any, base: int) -> list[tuple[int, int]]:
    low = die.attributes.get("DW_AT_low_pc")
    high = die.attributes.get("DW_AT_high_pc")
    if low is not None and high is not None:
        end = high.value if high.form in ADDRESS_FORMS else low.value + high.value
        return [(low.value, end)] if end > low.value else []
    ranges = die.attributes.get("DW_AT_ranges")
    if ranges is None or lists is None or ranges.form != "DW_FORM_sec_offset":
        return []
    out = []
    current = base
    for entry in lists.get_range_list_at_offset(ranges.value, cu=cu):
        if hasattr(entry, "base_address"):
            current = entry.base_address
            continue
        begin, end = entry.begin_offset, entry.end_offset
        if not getattr(entry, "is_absolute", False):
            begin, end = begin + current, end + current
        if end > begin:
            out.append((begin, end))
    return out
