"""``tracer decode``: the ITM/DWT packets of a capture or raw trace file."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from tracer.cli.source_setup import tpiu_id

if TYPE_CHECKING:
    from tracer.cli.output import Console
    from tracer.elf import ElfImage
    from tracer.export.packet_symbols import SymbolResolver

HELP = "print the ITM/DWT packets of a capture or raw trace file"
DESCRIPTION = """\
Decode a tracer capture (.trace) or another tool's raw trace file (pyOCD swv_raw_file, OpenOCD
-output, J-Link SWO, Orbuculum raw): the two are told apart by content, not by name. TPIU-formatted
streams are detected and deframed.

formats:
  text    one line per packet: offset, timestamp, type, fields
  ndjson  one JSON object per packet (offset, type, ts and the type's fields)
  stats   one JSON object: bytes, packets per type, overflows, resyncs, reserved, tpiu

examples:
  tracer decode swo.bin
  tracer decode captures/demo.trace --format ndjson | jq 'select(.type=="exception")'
  tracer decode parallel.bin --tpiu on --tpiu-id 1 --format stats
  tracer decode bringup.trace --elf build/app.elf     # PC samples and IRQs by name
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer decode``."""
    parser.add_argument("capture", metavar="CAPTURE", help="a .trace capture or a raw ITM/TPIU file")
    parser.add_argument(
        "--format", choices=("text", "ndjson", "stats"), default="text", help="output format (default: text)"
    )
    parser.add_argument(
        "--tpiu",
        choices=("auto", "on", "off"),
        default="auto",  # TpiuMode's values (not imported: tracer.decode loads numpy)
        help="TPIU formatter: detect (auto, default), force on, or off",
    )
    parser.add_argument(
        "--tpiu-id",
        type=tpiu_id,
        default=None,
        metavar="N",
        help="TPIU source ID carrying ITM, 1..111 (default: the capture's, else 1)",
    )
    parser.add_argument("-o", "--output", metavar="PATH", help="write to PATH instead of stdout")
    parser.add_argument(
        "--elf",
        metavar="PATH",
        help="firmware ELF: name functions for pc_sample/data_pc, IRQ handlers for exceptions "
        "(ndjson gains a 'symbol' field)",
    )


def run(args: argparse.Namespace) -> int:
    """Decode and print."""
    from tracer.capture.reader import open_capture
    from tracer.cli.output import open_output
    from tracer.decode.tpiu import TpiuMode
    from tracer.export.packets_text import ListingWriter
    from tracer.pipeline.capture import decode_reader

    console = args.console
    symbols = _symbols(args.elf) if args.elf else None
    with open_capture(args.capture) as reader:
        if symbols is not None:
            _check_build_id(reader.metadata.elf_build_id, symbols.image, console)
        if reader.size == 0:
            console.warn(f"{args.capture} is empty: no bytes to decode")
        decoder, batches = decode_reader(reader, TpiuMode(args.tpiu), args.tpiu_id, packets=args.format != "stats")
        with open_output(args.output) as out, console.progress("decoding", reader.size) as bar:
            if args.format == "stats":
                for _ in batches:
                    bar.update(decoder.input_bytes)
                out.write(json.dumps(decoder.stats_json(), sort_keys=False) + "\n")
            else:
                with ListingWriter(out, args.format, symbols) as listing:  # written while the next batch decodes
                    for batch in batches:
                        listing.write(batch)
                        bar.update(decoder.input_bytes)
        for warning in reader.warnings:
            console.warn(str(warning))
        for message in decoder.warnings:
            console.warn(f"{args.capture}: {message}")
    return 0


def _symbols(path: str) -> SymbolResolver:
    from tracer.elf import open_elf
    from tracer.export.packet_symbols import SymbolResolver

    return SymbolResolver(open_elf(path))


def _check_build_id(recorded: str | None, image: ElfImage, console: Console) -> None:
    """Warn when the ELF is not the one the capture was recorded with."""
    if recorded and image.build_id and recorded != image.build_id:
        console.warn(
            f"{image.name} has build ID {image.build_id} but the capture was recorded with "
            f"{recorded}: names may be wrong"
        )
