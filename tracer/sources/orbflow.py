"""``orbflow://HOST:3402?tag=1``: Orbuculum's framed stream (orbflow), unwrapped to ITM bytes.

Orbuculum 2.2 serves its probes' data on TCP port 3402 as *orbflow*: COBS-encoded frames
separated by 0x00, each ``[tag][data...][sum]`` where tag, data and sum add up to 0 modulo 256.
The tag is the TPIU stream (ORBTrace strips the TPIU formatter in the probe): 1 carries ITM.
This source keeps the data of frames with the chosen tag, in order; frames that fail their sum
or their COBS structure are dropped and reported as capture notes (``"orbflow frame damaged"``),
so the loss is counted, never silent. Orbuculum's legacy raw ports (3443 and up, one per TPIU
stream) need no unwrapping: use ``tcp://HOST:3443``.
"""

from __future__ import annotations

from typing import Any

from tracer.errors import UsageError
from tracer.sources.tcp import TcpSource
from tracer.sources.url import SourceUrl

DEFAULT_PORT = 3402
MAX_FRAME = 8192  # a frame this long without a 0x00 is not orbflow: resync at the next 0x00


class OrbflowDecoder:
    """Incremental orbflow decoder: ``feed(bytes)`` returns the payload of complete good frames.

    Args:
        tag: The stream whose data to keep.
    """

    def __init__(self, tag: int = 1) -> None:
        self.tag = tag
        self._frame = bytearray()
        self.frames = 0
        self.damaged = 0
        self.other_tags: dict[int, int] = {}
        self._events: list[dict[str, Any]] = []

    def feed(self, data: bytes) -> bytes:
        """Decode ``data`` (any split works) and return the kept payload bytes."""
        out = bytearray()
        start = 0
        while True:
            end = data.find(b"\x00", start)
            if end < 0:
                self._frame += data[start:]
                if len(self._frame) > MAX_FRAME:
                    self._damage(len(self._frame), "no frame delimiter")
                    self._frame.clear()
                return bytes(out)
            self._frame += data[start:end]
            if self._frame:
                out += self._frame_payload(bytes(self._frame))
                self._frame.clear()
            start = end + 1

    def drain_events(self) -> list[dict[str, Any]]:
        """Damage reports since the last call."""
        events, self._events = self._events, []
        return events

    def _frame_payload(self, encoded: bytes) -> bytes:
        decoded = _cobs_decode(encoded)
        if decoded is None or len(decoded) < 2:
            self._damage(len(encoded), "bad COBS structure")
            return b""
        if sum(decoded) & 0xFF:
            self._damage(len(encoded), "checksum mismatch")
            return b""
        self.frames += 1
        tag = decoded[0]
        if tag != self.tag:
            self.other_tags[tag] = self.other_tags.get(tag, 0) + 1
            return b""
        return decoded[1:-1]

    def _damage(self, size: int, why: str) -> None:
        self.damaged += 1
        self._events.append({"event": "orbflow frame damaged", "reason": why, "encoded_bytes": size})


def _cobs_decode(encoded: bytes) -> bytes | None:
    """Decode one COBS block (no delimiter); None if its length codes do not fit."""
    out = bytearray()
    i = 0
    n = len(encoded)
    while i < n:
        code = encoded[i]
        end = i + code
        if code == 0 or end > n:
            return None
        out += encoded[i + 1 : end]
        i = end
        if code < 0xFF and i < n:
            out.append(0)  # a code below 0xFF stands for a zero, except at the frame's end
    return bytes(out)


class OrbflowSource:
    """A TCP connection to Orbuculum's orbflow port, giving the ITM bytes of one tag."""

    def __init__(self, url: SourceUrl) -> None:
        self.url = url.text
        try:
            self.tag = int(url.option("tag", "1") or 1)
        except ValueError:
            raise UsageError(f"{url.text}: tag must be a number (1 = ITM)") from None
        host, port = url.host_port(DEFAULT_PORT)
        self._tcp = TcpSource(SourceUrl(url.text, "tcp", f"{host}:{port}", {}))
        self._decoder = OrbflowDecoder(self.tag)

    def open(self) -> None:
        """Connect to Orbuculum."""
        self._tcp.open()

    def read(self, max_bytes: int = 65536, timeout: float = 0.1) -> bytes:
        """Return the payload of the frames received so far."""
        return self._decoder.feed(self._tcp.read(max_bytes, timeout))

    def close(self) -> None:
        """Close the connection."""
        self._tcp.close()

    def metadata(self) -> dict[str, Any]:
        """The server and the stream kept; the bytes are ITM with the TPIU already stripped."""
        return {"source": self.url, "transport": "orbflow", "orbflow_tag": self.tag, "tpiu": False}

    def drain_events(self) -> list[dict[str, Any]]:
        """Damaged-frame reports."""
        return self._decoder.drain_events()
