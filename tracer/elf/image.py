"""Reading an ELF file: its symbols, vector table, build ID and initialised memory."""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import hashlib
import io
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from tracer.base.exceptions import FIRST_IRQ, exception_label
from tracer.errors import UsageError, reading_file
from tracer.limits import MAX_ELF_FILE_BYTES, MAX_ELF_SECTION_BYTES, InputError, inflate_limited, read_limited

if TYPE_CHECKING:
    from elftools.elf.elffile import ELFFile

# Where toolchains and CMSIS startup files put the vector table: symbol names, then section names.
VECTOR_SYMBOLS = (
    "__Vectors",
    "__isr_vector",
    "g_pfnVectors",
    "__vector_table",
    "_vector_table",
    "vector_table",
    "__VECTOR_TABLE",
    "_vectors",
)
VECTOR_SECTIONS = (".isr_vector", ".vectors", ".vector_table", "RESET", ".intvecs")
MAX_VECTORS = FIRST_IRQ + 496  # Armv8-M allows up to 496 external interrupts


@dataclasses.dataclass(frozen=True, slots=True)
class ElfSymbol:
    """A symbol of the image.

    Attributes:
        name: The symbol name.
        address: Its address (the Thumb bit cleared for functions).
        size: Its size in bytes (0 when the toolchain did not record one).
        kind: ``"func"``, ``"object"`` or ``"other"``.
    """

    name: str
    address: int
    size: int
    kind: str

    def contains(self, address: int) -> bool:
        """True if ``address`` falls inside the symbol (or is its address, when unsized)."""
        return self.address <= address < self.address + max(self.size, 1)


@dataclasses.dataclass
class ElfImage:
    """What tracer needs from a firmware image.

    Attributes:
        name: How to name the file in messages.
        build_id: Hex of ``.note.gnu.build-id``, or None if the image has none.
        content_hash: SHA-256 of the loadable sections' bytes (a fallback identity).
        symbols: Named function and object symbols, by name.
        vectors: Handler name by exception number, from the vector table (empty if none found).
    """

    name: str
    build_id: str | None
    content_hash: str
    symbols: dict[str, ElfSymbol]
    vectors: dict[int, str]
    _memory: list[tuple[int, bytes]] = dataclasses.field(default_factory=list, repr=False)
    _funcs: SymbolIndex = dataclasses.field(default_factory=lambda: SymbolIndex([]), repr=False)
    _objs: SymbolIndex = dataclasses.field(default_factory=lambda: SymbolIndex([]), repr=False)

    def index_symbols(self) -> None:
        """Build the address indexes of functions and data objects from ``symbols``."""
        by_address = sorted(self.symbols.values(), key=lambda s: s.address)
        self._funcs = SymbolIndex([s for s in by_address if s.kind == "func"])
        self._objs = SymbolIndex([s for s in by_address if s.kind == "object"])

    # -- lookups -----------------------------------------------------------------------------
    def function_at(self, pc: int) -> tuple[str, int] | None:
        """The function containing ``pc`` and the offset into it, or None."""
        return self._funcs.lookup(pc & ~1)

    def object_at(self, address: int) -> tuple[str, int] | None:
        """The data object containing ``address`` and the offset into it, or None."""
        return self._objs.lookup(address)

    def exception_name(self, number: int) -> str:
        """The handler's name for an exception number, else the architecture's name (``IRQ5``)."""
        return self.vectors.get(number) or exception_label(number)

    def symbol(self, name: str) -> ElfSymbol | None:
        """A symbol by name."""
        return self.symbols.get(name)

    def read(self, address: int, size: int) -> bytes | None:
        """Initialised bytes at ``address`` from the image, or None if not in a loaded section."""
        for start, data in self._memory:
            if start <= address and address + size <= start + len(data):
                return data[address - start : address - start + size]
        return None

    def read_word(self, address: int) -> int | None:
        """A little-endian 32-bit word from the image, or None."""
        data = self.read(address, 4)
        return None if data is None else int.from_bytes(data, "little")

    @property
    def identity(self) -> dict[str, str]:
        """The capture metadata that names this image."""
        meta = {"elf": self.name, "firmware_hash": f"sha256:{self.content_hash}"}
        if self.build_id:
            meta["elf_build_id"] = self.build_id
        return meta


def open_elf(path: str | os.PathLike[str]) -> ElfImage:
    """Read an ELF file.

    Raises:
        UsageError: The file is missing or not an ELF image.
    """
    p = Path(path)
    with reading_file(f"--elf {p}", "an ELF file", UsageError):
        blob = read_limited(p, MAX_ELF_FILE_BYTES, "an ELF file")
    return read_elf(blob, name=str(p))


def read_elf(stream: BinaryIO | bytes, name: str = "<elf>") -> ElfImage:
    """Read an ELF image from a stream or bytes (the stream need not be seekable).

    Raises:
        UsageError: Not an ELF image, or one pyelftools cannot read.
    """
    blob = stream if isinstance(stream, bytes) else stream.read(MAX_ELF_FILE_BYTES + 1)
    if len(blob) > MAX_ELF_FILE_BYTES:
        raise UsageError(f"{name}: more than {MAX_ELF_FILE_BYTES:,} bytes: too large for an ELF file")
    if not blob.startswith(b"\x7fELF"):
        raise UsageError(f"{name}: not an ELF file (expected the bytes 7f 45 4c 46 at offset 0)")
    with damaged_elf(name, "damaged ELF file"):
        return _build(checked_elf(blob, name), name)


@contextlib.contextmanager
def damaged_elf(name: str, what: str) -> Iterator[None]:
    """Turn what pyelftools raises on a damaged file (its own errors, failed assertions, struct
    and index errors) into a :class:`UsageError` saying ``what`` (the one list of them, for every
    reader of ELF files).
    """
    try:
        from elftools.common.exceptions import DWARFError, ELFError  # lazy, like all parsers
        from elftools.construct.core import ConstructError  # its structures' own (a missing terminator)
    except ImportError:  # pragma: no cover - a core dependency
        raise UsageError("reading ELF files needs pyelftools: pip install pyelftools") from None
    try:
        yield
    except (
        ELFError,
        DWARFError,
        ConstructError,
        ValueError,
        KeyError,
        IndexError,
        AttributeError,
        AssertionError,
        struct.error,
        OverflowError,
        RecursionError,
    ) as exc:
        said = f"a value it cannot take: {exc}" if isinstance(exc, AssertionError) else str(exc)
        raise UsageError(f"{name}: {what} ({said})") from None


def checked_elf(blob: bytes, name: str) -> ELFFile:
    """An ``ELFFile`` over ``blob`` whose every section pyelftools may read is of a size the file
    can justify: a compressed section inflates to at most ``MAX_ELF_SECTION_BYTES`` (checked
    before it inflates), and a debug section has bits in the file (a NOBITS one would be read as
    its declared size of zeros, 8 GB from a few bytes).

    Raises:
        UsageError: A section beyond these bounds (or pyelftools' errors, through the caller's
            :func:`damaged_elf`).
    """
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(blob))
    for index, section in enumerate(elf.iter_sections()):
        where = f"{name}: section {index} ({section.name or 'unnamed'})"
        debug = section.name.startswith((".debug", ".zdebug"))
        if section["sh_type"] == "SHT_NOBITS":
            if debug:
                raise UsageError(f"{where} is a debug section with no bits in the file (NOBITS): damaged ELF file")
            continue
        if section.compressed and section.data_size > MAX_ELF_SECTION_BYTES:
            raise UsageError(
                f"{where} inflates to {section.data_size:,} bytes: expected at most {MAX_ELF_SECTION_BYTES:,}"
            )
        if section.name.startswith(".zdebug"):  # GNU's "ZLIB" + size: pyelftools inflates it all
            start = int(section["sh_offset"]) + 12
            packed = blob[start : start + max(0, int(section["sh_size"]) - 12)]
            try:
                inflate_limited(packed, MAX_ELF_SECTION_BYTES, "a debug section")
            except InputError as exc:
                raise UsageError(f"{where}: {exc.message}") from None
    return elf


# -- building -----------------------------------------------------------------------------------
def _build(elf: ELFFile, name: str) -> ElfImage:
    symbols = _symbols(elf)
    memory = _memory(elf)
    digest = hashlib.sha256()
    for start, data in memory:
        digest.update(start.to_bytes(8, "little") + data)
    image = ElfImage(name, _build_id(elf), digest.hexdigest(), symbols, {}, memory)
    image.index_symbols()
    image.vectors = _vector_names(elf, image)
    return image


def _symbols(elf: ELFFile) -> dict[str, ElfSymbol]:
    out: dict[str, ElfSymbol] = {}
    symtab = elf.get_section_by_name(".symtab")
    if symtab is None or not hasattr(symtab, "iter_symbols"):  # missing, or not a symbol table (damaged type)
        return out
    for sym in symtab.iter_symbols():
        kind_raw = sym["st_info"]["type"]
        if not sym.name or kind_raw in ("STT_FILE", "STT_SECTION") or sym.name.startswith("$"):
            continue  # mapping symbols ($t, $d) and file names name nothing the user wrote
        kind = {"STT_FUNC": "func", "STT_OBJECT": "object"}.get(kind_raw, "other")
        address = int(sym["st_value"])
        if kind == "func":
            address &= ~1  # Thumb functions carry bit 0 in their symbol value
        symbol = ElfSymbol(sym.name, address, int(sym["st_size"]), kind)
        # A global definition wins over a local one of the same name.
        if sym.name not in out or sym["st_info"]["bind"] == "STB_GLOBAL":
            out[sym.name] = symbol
    return out


def _memory(elf: ELFFile) -> list[tuple[int, bytes]]:
    regions = []
    for section in elf.iter_sections():
        flags = section["sh_flags"]
        if flags & 0x2 and section["sh_type"] != "SHT_NOBITS" and section["sh_size"]:  # SHF_ALLOC
            regions.append((int(section["sh_addr"]), bytes(section.data())))
    return sorted(regions)


def _build_id(elf: ELFFile) -> str | None:
    for section in elf.iter_sections():
        if section["sh_type"] != "SHT_NOTE":
            continue
        for note in section.iter_notes():  # type: ignore[attr-defined]  # elftools makes SHT_NOTE a NoteSection
            if note["n_type"] == "NT_GNU_BUILD_ID":
                desc = note["n_desc"]
                return desc if isinstance(desc, str) else bytes(desc).hex()
    return None


def _vector_table(elf: ELFFile, image: ElfImage) -> tuple[int, int] | None:
    """(address, number of entries) of the vector table, or None."""
    for sym_name in VECTOR_SYMBOLS:
        sym = image.symbols.get(sym_name)
        if sym is not None:
            return sym.address, (sym.size // 4 if sym.size else MAX_VECTORS)
    for sec_name in VECTOR_SECTIONS:
        section = elf.get_section_by_name(sec_name)
        if section is not None and section["sh_size"] >= 8:
            return int(section["sh_addr"]), int(section["sh_size"]) // 4
    return None


def _vector_names(elf: ELFFile, image: ElfImage) -> dict[int, str]:
    table = _vector_table(elf, image)
    if table is None:
        return {}
    address, count = table
    handlers: dict[int, int] = {}
    for number in range(1, min(count, MAX_VECTORS)):
        word = image.read_word(address + 4 * number)
        if word is None:
            break
        if word:
            handlers[number] = word & ~1
    uses: dict[int, int] = {}
    for target in handlers.values():
        uses[target] = uses.get(target, 0) + 1
    names: dict[int, str] = {}
    for number, target in handlers.items():
        found = image.function_at(target)
        # A handler shared by several vectors (Default_Handler) names none of them.
        if found is not None and found[1] == 0 and uses[target] == 1:
            names[number] = found[0]
    return names


class SymbolIndex:
    """Symbols sorted by address, for "which symbol contains this address" in O(log n).

    A sized symbol contains its bytes; an unsized one (a label, an assembler function without
    ``.size``) only its own address. The symbol found is the last one starting at or before the
    address that contains it, else the nearest sized one before it if that reaches the address:
    what walking back over the unsized symbols would find, without the walk (an image with tens of
    thousands of labels made every lookup read all of them).

    Args:
        symbols: The symbols, sorted by address.
    """

    def __init__(self, symbols: list[ElfSymbol]) -> None:
        self.symbols = symbols
        self.starts = [s.address for s in symbols]
        # For each position, the nearest sized symbol at or before it (-1: none).
        self.sized_before: list[int] = []
        last = -1
        for k, sym in enumerate(symbols):
            if sym.size:
                last = k
            self.sized_before.append(last)

    def lookup(self, address: int) -> tuple[str, int] | None:
        """The symbol containing ``address`` and the offset into it, or None."""
        i = bisect.bisect_right(self.starts, address) - 1
        if i < 0:
            return None
        sym = self.symbols[i]
        if sym.contains(address):
            return sym.name, address - sym.address
        if sym.size:
            return None
        # An unsized symbol before the address: every symbol from the nearest sized one up to here
        # is unsized and starts before the address, so contains nothing; the sized one may.
        k = self.sized_before[i]
        if k < 0:
            return None
        sym = self.symbols[k]
        return (sym.name, address - sym.address) if sym.contains(address) else None
