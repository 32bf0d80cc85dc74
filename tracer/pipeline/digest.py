"""One input file to its digest (:mod:`tracer.compare.digest`): read, analyse (the one analysis
every front end makes), keep what comparing needs (runs on a Dask worker).

:func:`digest_file` is a plain module-level function of picklable arguments and result, so Dask
ships it to worker processes or to another machine unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tracer.analysis.samples import LayerSamples, layer_samples, pool_layers
from tracer.base.timeline import InferenceTimeline
from tracer.capture.reader import open_capture
from tracer.compare.digest import CaptureDigest, digest
from tracer.pipeline.analyse import AnalysedFile, analyse_file
from tracer.pipeline.provenance import capture_labels


def input_labels(path: str) -> dict[str, str]:
    """The labels a file's header gives (none for files without a tracer capture header)."""
    with open_capture(path) as reader:
        return capture_labels(reader.metadata) if reader.is_capture else {}


def digest_file(path: str, labels: Mapping[str, str] | None = None) -> CaptureDigest:
    """The digest of a capture, raw trace, text log or ETDump: of its one analysis
    (:func:`~tracer.pipeline.analyse.analyse_file`, in windows when it is large), with every
    layer execution kept compact.

    Args:
        path: The file.
        labels: Labels to add to those of its header (``--label``).

    Raises:
        CaptureError: The file cannot be read (exit 3).
    """
    analysed, samples = analyse_with_samples(path)
    return digest(analysed.analysis, path, {**input_labels(path), **(labels or {})}, samples)


def analyse_with_samples(
    path: str, on_window: Callable[[InferenceTimeline], None] | None = None
) -> tuple[AnalysedFile, dict[int, LayerSamples] | None]:
    """A file's analysis and, when it was read in windows, every layer's complete executions
    (pooled from the windows; None: the analysis's timeline holds them). ``on_window`` also sees
    every window.
    """
    parts: list[dict[int, LayerSamples]] = []

    def each(timeline: InferenceTimeline) -> None:
        parts.append(layer_samples(timeline.spans))
        if on_window is not None:
            on_window(timeline)

    analysed = analyse_file(path, on_window=each)
    return analysed, pool_layers(parts) if analysed.windowed else None
