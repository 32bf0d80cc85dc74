"""The decode pipeline of one trace stream: optional TPIU deframing, then ITM/DWT packets."""

from __future__ import annotations

from typing import Any

from tracer.decode.itm import ItmDecoder, ItmStats
from tracer.decode.packets import PacketBatch
from tracer.decode.pool import BatchPool
from tracer.decode.tpiu import DETECT_WINDOW, SEARCH_WINDOW, Deframed, Grid, TpiuDeframer, TpiuMode, detect, locate

MAX_REGION_WARNINGS = 5  # unframed regions named one by one in the warnings (all are in the stats)


# Does a stream look like ITM/DWT trace? Real trace has almost no reserved or malformed headers
# (the corpus: at most 0.02 % of packets, where a capture starts mid-packet); bytes that are not
# trace (random data, a ZIP, text) decode to about a quarter of them (measured: 10 % to 27 %).
DOUBT_RESERVED_SHARE = 0.02
DOUBT_MIN_PACKETS = 64


def trace_doubt(stats: ItmStats) -> str | None:
    """Why ``stats`` do not look like ITM/DWT trace, or None when they do (or are too few to tell)."""
    packets = int(stats.packets.sum())
    if packets < DOUBT_MIN_PACKETS:
        return None
    share = stats.reserved / packets
    if share <= DOUBT_RESERVED_SHARE:
        return None
    return (
        f"does not look like ITM/DWT trace: {share:.1%} of its {packets:,} packets are reserved or malformed "
        f"headers (real trace has almost none); is it the right file, TPIU-formatted (--tpiu on) or "
        "another TPIU source (--tpiu-id)?"
    )


class TraceDecoder:
    """Turns trace bytes into packets, deframing TPIU when the stream is formatted.

    Args:
        tpiu: ``AUTO`` detects formatting from the first 64 KiB; ``ON`` and ``OFF`` force it.
        tpiu_id: The TPIU source ID carrying ITM.
        hold_timestamps: See :class:`ItmDecoder`.
        packets: See :class:`ItmDecoder`; False only counts (``--format stats``).
        reuse_batches: The caller gives each batch back (:meth:`give_back`) once nothing reads it
            any more: later batches are decoded into the same memory (:mod:`tracer.decode.pool`).
    """

    def __init__(
        self,
        tpiu: TpiuMode = TpiuMode.AUTO,
        tpiu_id: int = 1,
        hold_timestamps: bool = True,
        *,
        packets: bool = True,
        reuse_batches: bool = False,
    ) -> None:
        self.mode = tpiu
        self.tpiu_id = tpiu_id
        pool = BatchPool() if reuse_batches else None
        self.itm = ItmDecoder(hold_timestamps=hold_timestamps, packets=packets, pool=pool)
        self.deframer: TpiuDeframer | None = None
        self.tpiu_frames_seen = False
        self._probe = bytearray()
        self._decided = tpiu is TpiuMode.OFF
        self.input_bytes = 0
        self.warnings: list[str] = []
        self.doubt: str | None = None  # set at the end: why the stream does not look like trace
        # Host arrival times of the first and last chunk fed (captures only: see tracer.pipeline.capture).
        self.first_host_ns: int | None = None
        self.last_host_ns: int | None = None

    def give_back(self, batch: PacketBatch) -> None:
        """Say that ``batch``, which :meth:`feed` or :meth:`finish` returned, will not be read again
        by anyone (its memory may take a later batch: see ``reuse_batches``). Any thread may call it.
        """
        self.itm.give_back(batch)

    @property
    def formatted(self) -> bool:
        """True once the stream is known to be TPIU-formatted."""
        return self.deframer is not None

    def feed(self, data: bytes | memoryview, lost_before: int = 0) -> PacketBatch:
        """Decode the next bytes; ``lost_before`` says bytes were lost just before them.

        ``data`` is read only during the call (what is kept of it is copied): its memory may take
        the next bytes.
        """
        parts: list[PacketBatch] = []
        if lost_before:
            parts.append(self._gap(lost_before))
        self.input_bytes += len(data)
        if not self._decided:
            self._probe += data
            if len(self._probe) < DETECT_WINDOW:
                return self.itm.join(parts)
            data = self._decide()
        parts.append(self._itm_feed(data))
        return self.itm.join(parts)

    def finish(self) -> PacketBatch:
        """End of stream: decode what is buffered and release every held packet."""
        parts = []
        if not self._decided:
            parts.append(self._itm_feed(self._decide()))
        if self.deframer is not None:
            parts.append(self._itm_pieces(self.deframer.finish()))
            if self.deframer.partial_frame_bytes:
                self.warnings.append(
                    f"stream ends inside a TPIU frame ({self.deframer.partial_frame_bytes} bytes of it dropped)"
                )
            self.warnings.extend(self._tpiu_warnings(self.deframer))
        parts.append(self.itm.finish())
        if self.itm.truncated_at is not None:
            self.warnings.append(
                f"truncated at byte {self.itm.truncated_at} of the ITM stream: its last packet is incomplete"
            )
        self.doubt = trace_doubt(self.itm.stats)
        if self.doubt is not None:
            self.warnings.append(self.doubt)
        return self.itm.join(parts)

    def stats_json(self) -> dict[str, Any]:
        """The ``tracer decode --format stats`` object."""
        s = self.itm.stats
        out: dict[str, Any] = {
            "bytes": self.input_bytes,
            "itm_bytes": s.bytes,
            "packets": s.packet_counts(),
            "overflows": s.overflows,
            "resyncs": s.resyncs,
            "reserved": s.reserved,
            "padding_bytes": s.padding,
            "truncated_bytes": s.truncated_bytes,
            "gaps": s.gaps,
            "lost_bytes": s.lost_bytes,
        }
        if self.deframer is not None:
            out["tpiu"] = self.deframer.stats.to_json()
        return out

    # -- internals -------------------------------------------------------------------------------
    def _decide(self) -> bytes:
        """Decide on TPIU from the first ``DETECT_WINDOW`` bytes; return all bytes probed so far."""
        sample = bytes(self._probe)
        self._probe = bytearray()
        self._decided = True
        if self.mode is TpiuMode.OFF:
            return sample
        window = sample[:DETECT_WINDOW]
        strict = self.mode is TpiuMode.AUTO  # told it is formatted: padding need not be zeros
        grid = detect(window, self.tpiu_id, strict)
        if grid is None and self.mode is TpiuMode.ON:
            # Told it is formatted: frames from byte 0 (captures start at a frame) unless they
            # cannot be TPIU, then however few frames hold up; else trust byte 0.
            grid = locate(window, self.tpiu_id, min_frames=1, keep=0, strict=False, trust_sync=True)
            if grid is None:
                self.warnings.append("--tpiu on, but no TPIU frame boundary found; assuming frames start at byte 0")
                self.deframer = TpiuDeframer(self.tpiu_id, 0)
                return sample
        if grid is None:
            return sample
        if grid.ambiguous:
            self._warn_ambiguous(grid)
        if grid.start < SEARCH_WINDOW:
            self.deframer = TpiuDeframer(self.tpiu_id, grid.start, grid.ids, strict)
        else:  # bytes slipped early on: the first frames are on another grid, searched for
            self.deframer = TpiuDeframer(self.tpiu_id, None, strict=strict)
        return sample

    def _itm_feed(self, data: bytes | memoryview) -> PacketBatch:
        if self.deframer is not None:
            return self._itm_pieces(self.deframer.feed_pieces(data))
        return self.itm.feed(data)

    def _itm_pieces(self, pieces: list[Deframed]) -> PacketBatch:
        """The ITM packets of deframed pieces; a break between pieces is a gap in the ITM stream."""
        parts = []
        for piece in pieces:
            if piece.lost_before is not None:
                parts.append(self.itm.gap(piece.lost_before))
            parts.append(self.itm.feed(piece.data))
        return self.itm.join(parts)

    def _gap(self, lost: int) -> PacketBatch:
        """Bytes were lost: a TPIU stream must find its frame grid again after them."""
        parts = []
        if not self._decided:
            parts.append(self._itm_feed(self._decide()))
        if self.deframer is not None:
            parts.append(self._itm_pieces(self.deframer.gap(lost)))
        parts.append(self.itm.gap(lost))
        return self.itm.join(parts)

    def _warn_ambiguous(self, grid: Grid) -> None:
        others = ", ".join(str(s) for s in sorted(grid.ambiguous))
        self.warnings.append(
            f"TPIU frame alignment is ambiguous: frames starting at byte {grid.start} fit as well as at {others} "
            f"(no full sync, no null padding and no clean ITM on ID {self.tpiu_id} tell them apart); "
            f"using {grid.start}"
        )

    def _tpiu_warnings(self, deframer: TpiuDeframer) -> list[str]:
        """What the deframer could not frame, and sources that are not where they were asked for."""
        out = []
        stats = deframer.stats
        if deframer.ambiguity is not None:
            self._warn_ambiguous(deframer.ambiguity)
        if stats.unframed_bytes:
            named = [u.describe() for u in stats.unframed[:MAX_REGION_WARNINGS]]
            more = len(stats.unframed) - len(named)
            listed = "; ".join(named) + (f"; and {more} more region(s)" if more > 0 else "")
            realigned = f", frame grid found again {stats.realignments} time(s)" if stats.realignments else ""
            out.append(f"TPIU: {stats.unframed_bytes} bytes could not be framed{realigned}: {listed}")
        sources = sorted(i for i in stats.id_bytes if 0 < i < 0x70)
        if stats.frames and self.tpiu_id not in stats.id_bytes and sources:
            out.append(
                f"TPIU source ID {self.tpiu_id} carries no bytes; the frames carry ID(s) "
                f"{', '.join(str(i) for i in sources)} (pick one with --tpiu-id)"
            )
        return out
