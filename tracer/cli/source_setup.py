"""What ``tracer record`` and ``tracer live`` share: the FVP command line after ``--``, building the
source a URL names, the capture header from what the source says and the options given, and the
argparse types of their options (``--tpiu-id`` also serves ``tracer decode``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracer.capture.metadata import CaptureMetadata
    from tracer.sources.base import ByteSource


def seconds(text: str) -> float:
    """An argparse type: a length of time in seconds, more than zero (``--duration``, ``--timeout``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r} (expected e.g. 30 or 2.5)") from None
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {text!r}")
    return value


def tpiu_id(text: str) -> int:
    """An argparse type: ``--tpiu-id``, a trace source ID (0 is padding, 0x70 and up are reserved)."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
    if not 1 <= value <= 0x6F:
        raise argparse.ArgumentTypeError(f"a TPIU source ID is 1..111 (0x6F), not {value}")
    return value


def split_command_line(parser: argparse.ArgumentParser) -> None:
    """Everything after ``--`` is the FVP's command line, wherever the options stand.

    argparse would bind the optional positional before an option such as ``-o`` is seen and then
    reject the tail, so the tail is cut off before parsing and put back as ``args.command``.
    """
    parse = parser.parse_known_args

    def parse_known_args(args: Any = None, namespace: Any = None) -> Any:
        words = list(args) if args is not None else []
        tail: list[str] = []
        if "--" in words:
            at = words.index("--")
            words, tail = words[:at], words[at + 1 :]
        namespace, extras = parse(words, namespace)
        if tail:
            namespace.command = list(namespace.command or []) + tail
        return namespace, extras

    parser.parse_known_args = parse_known_args  # type: ignore[method-assign]  # this parser only: argparse has no hook


def source_factory(url: str, command: list[str]) -> Callable[[], ByteSource]:
    """A function building the source (unopened) each time it is called: ``fvp`` runs ``command``,
    any other URL goes to its backend.

    The URL is checked now, so a bad one is a usage error before anything starts.

    Raises:
        UsageError: A command after a source other than ``fvp``; an unknown scheme or a bad URL.
    """
    from tracer.errors import UsageError
    from tracer.sources.fvp import FvpSource, is_fvp_source
    from tracer.sources.registry import open_source

    if is_fvp_source(url):
        return lambda: FvpSource(url, list(command))
    if command:
        raise UsageError(f"unexpected arguments after the source: {' '.join(command)} (only 'fvp' takes a command)")
    first = [open_source(url)]

    def build() -> ByteSource:
        return first.pop() if first else open_source(url)

    return build


def capture_metadata(source: ByteSource, url: str, args: argparse.Namespace) -> CaptureMetadata:
    """The capture header: what the (opened) source says, then ``--cpu-hz``, ``--swo-hz``,
    ``--tpiu`` and ``--tpiu-id`` where given.
    """
    from tracer.capture.metadata import CaptureMetadata

    hints = source.metadata()
    meta = CaptureMetadata.from_json({**hints, "source": hints.get("source", url)})
    meta.cpu_hz = args.cpu_hz or meta.cpu_hz
    meta.swo_hz = getattr(args, "swo_hz", None) or meta.swo_hz
    if args.tpiu:
        meta.tpiu = args.tpiu == "on"
    meta.tpiu_id = args.tpiu_id
    return meta
