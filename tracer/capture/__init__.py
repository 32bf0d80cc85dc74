"""Captures: the raw bytes as received, in crash-safe checksummed chunks, replayable forever."""

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.reader import CaptureChunk, CaptureReader, CaptureWarning, open_capture
from tracer.capture.writer import CaptureWriter

__all__ = [
    "CaptureChunk",
    "CaptureMetadata",
    "CaptureReader",
    "CaptureWarning",
    "CaptureWriter",
    "open_capture",
]
