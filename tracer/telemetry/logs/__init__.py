"""Firmware text logs (UART dumps, FVP stdout, text on ITM port 0) read as timelines.

* :func:`is_text_log` tells a text log from a binary trace by its first bytes;
* :func:`read_log` reads a whole log into an :class:`~tracer.base.timeline.InferenceTimeline`;
* :class:`LogReader` takes text line by line (``feed_line(text, cycle)``), in pieces
  (``feed_text``) or as raw bytes (``feed_bytes``: ITM port 0 payloads), for text that arrives
  while a capture runs; ``finish()`` gives the timeline.

Formats: MLEK PMU profiles (both historical layouts and the ``<metrics>`` JSON line) and boot and
model banners; TFLite Micro ``MicroProfiler`` ``Log()``, ``LogCsv()``, ``LogTicksPerTagCsv()``,
``RecordingMicroAllocator`` reports and ``Failed to resize buffer`` errors; ethos-u-core-software
``cycle_cnt`` / ``ethosu_pmu_cntr`` / ``arena_used_bytes`` lines; ExecuTorch's Arm runner PMU
report; the FVP's banner and statistics.
"""

from tracer.telemetry.logs.read import read_log
from tracer.telemetry.logs.reader import LogReader, split_inferences
from tracer.telemetry.logs.sniff import is_text_log

__all__ = ["LogReader", "is_text_log", "read_log", "split_inferences"]
