"""How a decoding process takes fresh memory from the kernel: small pages.

numpy asks Linux for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every array of 4 MB
or more. Decoding a capture fills a few hundred MB of such arrays once (the record tables, the
columns of the timeline). On virtual machines that hand free memory back to the host (free page
reporting), a huge page is often memory the host has to supply and zero again: on the 2-vCPU VM
of ``docs/decoder.md`` ("Memory: small pages"), ``bench_pipeline.py``'s 111 MB capture took
1.5-4.7 s of system time with huge pages in most runs (0.11-0.13 s in quiet moments) and
0.27-0.35 s with small pages in every run. Small pages cost more than cheap huge pages (about
0.2 s here), far less than slow ones, and do not swing: tracer turns numpy's hint off for its own
process, unless the user chose with numpy's own ``NUMPY_MADVISE_HUGEPAGE`` variable.
"""

from __future__ import annotations

import os

HUGEPAGE_ENV = "NUMPY_MADVISE_HUGEPAGE"  # numpy's own switch, read when numpy is imported


def prefer_small_pages() -> bool:
    """Turn numpy's huge-page hint off for this process (not if ``NUMPY_MADVISE_HUGEPAGE`` is set).

    Returns:
        Whether numpy will now hint huge pages (False where numpy cannot say: not Linux, or a
        numpy without the switch).
    """
    import importlib

    try:
        multiarray = importlib.import_module("numpy._core.multiarray")  # numpy 2
    except ImportError:
        multiarray = importlib.import_module("numpy.core.multiarray")  # numpy 1.26
    toggle = getattr(multiarray, "_set_madvise_hugepage", None)
    if toggle is None:
        return False
    if os.environ.get(HUGEPAGE_ENV, "") != "":
        enabled = bool(toggle(False))  # only to read the state; put it back
        toggle(enabled)
        return enabled
    toggle(False)
    return False
