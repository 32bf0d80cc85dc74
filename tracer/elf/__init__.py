"""Firmware images: symbols, the vector table's handler names and the build ID of an ELF file.

Used to name what the trace shows (PC samples, exceptions) and to find what a probe should poll
(tensor arena, stacks). pyelftools is imported here only, when an ELF file is opened.
"""

from tracer.elf.image import ElfImage, ElfSymbol, open_elf

__all__ = ["ElfImage", "ElfSymbol", "open_elf"]
