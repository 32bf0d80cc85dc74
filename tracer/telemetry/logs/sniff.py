"""Is a file a text log (a UART dump, an FVP's stdout) or a binary trace stream?

ITM streams are never mostly printable: every software packet starts with a header byte below
0x20 (0x01, 0x02, 0x03 for 1-, 2- and 4-byte writes), so even text written to ITM port 0 is at
most 80 % printable bytes; a ``.trace`` capture starts with a binary magic. A text log is almost
entirely printable UTF-8 (a few bytes of boot noise allowed).
"""

from __future__ import annotations

import codecs

from tracer.capture.format import MAGIC

SNIFF_BYTES = 64 * 1024
MIN_PRINTABLE = 0.95
_ALLOWED_CONTROLS = frozenset("\t\n\r\x1b\x0c")  # tab, line ends, ANSI colour escapes, form feed


def is_text_log(sample: bytes) -> bool:
    """True if ``sample`` (the first bytes of a file, ideally 64 KiB) is a text log.

    Empty samples, samples with NUL bytes, ``.trace`` captures and streams that are not at least
    95 % printable UTF-8 are not text; neither is a long sample without a single line break.
    """
    if not sample or sample.startswith(MAGIC) or b"\x00" in sample:
        return False
    sample = sample[:SNIFF_BYTES]
    # A multi-byte character cut at the end of the sample is not an error.
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(sample, final=False)
    if not text:
        return False
    bad = sum(1 for ch in text if not (ch.isprintable() or ch in _ALLOWED_CONTROLS) or ch == "\ufffd")
    if bad > len(text) * (1 - MIN_PRINTABLE):
        return False
    return not (len(text) > 512 and "\n" not in text and "\r" not in text)


def first_binary_position(sample: bytes) -> tuple[int, int]:
    """(line, byte offset) of the first byte that makes ``sample`` look binary, for messages."""
    text_like = set(range(0x20, 0x7F)) | {0x09, 0x0A, 0x0D, 0x1B, 0x0C}
    for offset, byte in enumerate(sample):
        if byte not in text_like and byte < 0x80:
            return sample[:offset].count(b"\n") + 1, offset
    return 1, 0
