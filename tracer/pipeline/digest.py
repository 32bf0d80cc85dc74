"""One input file to its digest (:mod:`tracer.compare.digest`): read, analyse (the one analysis
every front end makes), keep what comparing needs (runs on a Dask worker).

:func:`digest_file` is a plain module-level function of picklable arguments and result, so Dask
ships it to worker processes or to another machine unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping

from tracer.capture.reader import open_capture
from tracer.compare.digest import CaptureDigest, digest
from tracer.pipeline.analyse import analyse_file
from tracer.pipeline.provenance import capture_labels


def input_labels(path: str) -> dict[str, str]:
    """The labels a file's header gives (none for files without a tracer capture header)."""
    with open_capture(path) as reader:
        return capture_labels(reader.metadata) if reader.is_capture else {}


def digest_file(path: str, labels: Mapping[str, str] | None = None) -> CaptureDigest:
    """The digest of a capture, raw trace, text log or ETDump: of its one analysis
    (:func:`~tracer.pipeline.analyse.analyse_file`, in windows when it is large).

    Args:
        path: The file.
        labels: Labels to add to those of its header (``--label``).

    Raises:
        CaptureError: The file cannot be read (exit 3).
    """
    analysis = analyse_file(path).analysis
    return digest(analysis, path, {**input_labels(path), **(labels or {})})
