"""Naming what a packet points at: PC samples, data-trace PCs and addresses, exceptions."""

from __future__ import annotations

from tracer.decode.packets import PacketKind
from tracer.elf import ElfImage


class SymbolResolver:
    """Turns packet fields into names using an ELF image.

    Args:
        image: The firmware image the capture came from.
    """

    def __init__(self, image: ElfImage) -> None:
        self.image = image
        self._cache: dict[tuple[int, int], str | None] = {}

    def describe(self, kind: int, a: int) -> str | None:
        """The name for a packet of ``kind`` whose main value is ``a``, or None.

        PC samples and data-trace PCs give ``function`` or ``function+0x12``; data-trace
        addresses give ``object`` or ``object+0x4``; exceptions give the handler's name.
        """
        key = (kind, a)
        if key in self._cache:
            return self._cache[key]
        name: str | None = None
        if kind in (PacketKind.PC_SAMPLE, PacketKind.DATA_PC):
            name = _with_offset(self.image.function_at(a))
        elif kind == PacketKind.DATA_ADDR:
            name = _with_offset(self.image.object_at(a))
        elif kind == PacketKind.EXCEPTION:
            name = self.image.exception_name(a)
        if len(self._cache) < 1 << 16:
            self._cache[key] = name
        return name


def _with_offset(found: tuple[str, int] | None) -> str | None:
    if found is None:
        return None
    name, offset = found
    return name if offset == 0 else f"{name}+{offset:#x}"
