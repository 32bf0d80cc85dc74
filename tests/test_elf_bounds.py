"""ELF files read with a bound, and symbol lookups that stay logarithmic however many symbols have
no size (docs/limits.md; benchmarks/bench_inputs.py measures the speed)."""

from __future__ import annotations

import bisect

from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.elf.image import ElfImage, ElfSymbol, SymbolIndex


def walk_back_reference(symbols: list[ElfSymbol], address: int) -> tuple[str, int] | None:
    """The reference (the lookup SymbolIndex replaced; benchmarks/bench_inputs.py times it too): the
    first symbol containing the address, walking back from the last one that starts at or before
    it, stopping at the first sized symbol that does not."""
    starts = [s.address for s in symbols]
    i = bisect.bisect_right(starts, address) - 1
    while i >= 0:
        sym = symbols[i]
        if sym.contains(address):
            return sym.name, address - sym.address
        if sym.size:
            return None
        i -= 1
    return None


symbols_strategy = st.lists(
    st.tuples(st.integers(0, 400), st.sampled_from([0, 0, 0, 1, 2, 4, 16, 64])), min_size=0, max_size=60
)


@settings(max_examples=300, deadline=None)
@given(symbols_strategy, st.lists(st.integers(0, 500), min_size=1, max_size=40))
def test_lookup_agrees_with_walking_back(raw: list[tuple[int, int]], addresses: list[int]) -> None:
    symbols = sorted((ElfSymbol(f"s{k}", a, size, "func") for k, (a, size) in enumerate(raw)), key=lambda s: s.address)
    index = SymbolIndex(symbols)
    for address in addresses:
        assert index.lookup(address) == walk_back_reference(symbols, address)


def test_many_unsized_symbols_do_not_make_lookups_linear() -> None:
    """100,000 labels without a size after one sized function: each lookup reads a handful of symbols."""
    symbols = [ElfSymbol("big", 0, 0x200000, "func")]
    symbols += [ElfSymbol(f"label{k}", 16 + 4 * k, 0, "func") for k in range(100_000)]
    index = SymbolIndex(symbols)
    reads = []

    class Counting(list):
        def __getitem__(self, i):
            reads.append(i)
            return super().__getitem__(i)

    index.symbols = Counting(index.symbols)
    assert index.lookup(0x1FFFF0) == ("big", 0x1FFFF0)
    assert index.lookup(16 + 4 * 500) == ("label500", 0)
    assert len(reads) <= 8


def test_elf_image_lookups_use_the_index() -> None:
    image = ElfImage("x", None, "", {"f": ElfSymbol("f", 0x100, 0x10, "func")}, {})
    image.index_symbols()
    assert image.function_at(0x106) == ("f", 6) and image.function_at(0x110) is None


def test_elf_of_dev_zero_is_refused_without_reading_it_all(run_cli) -> None:
    from pathlib import Path

    demo = Path(__file__).resolve().parent.parent / "captures" / "demo.trace"
    result = run_cli("decode", demo, "--elf", "/dev/zero")
    assert result.code == 2
    assert "--elf /dev/zero: more than 268,435,456 bytes: too large for an ELF file" in result.err


def test_damaged_section_types_are_a_usage_error_or_read(tmp_path) -> None:
    """Found by the fuzzing campaign: a .symtab whose type says it is something else."""
    import struct

    from conftest import require_tools
    from fuzzing import build_elf

    from tracer.elf.image import read_elf

    require_tools("arm-none-eabi-gcc")
    elf = build_elf(tmp_path)
    assert elf is not None
    blob = bytearray(elf.read_bytes())
    (shoff,) = struct.unpack_from("<I", blob, 32)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 46)
    names_at = struct.unpack_from("<I", blob, shoff + shstrndx * shentsize + 16)[0]
    for k in range(shnum):
        entry = shoff + k * shentsize
        name_offset, _sh_type = struct.unpack_from("<II", blob, entry)
        name = bytes(blob[names_at + name_offset : names_at + name_offset + 8]).split(b"\0")[0]
        if name == b".symtab":
            struct.pack_into("<I", blob, entry + 4, 1)  # SHT_PROGBITS
    image = read_elf(bytes(blob), "damaged.elf")
    assert image.symbols == {}  # no symbol table any more, and no traceback
