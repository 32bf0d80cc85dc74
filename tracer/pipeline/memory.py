"""How a decoding process takes fresh memory from the kernel: small pages.

numpy asks Linux for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every array of 4 MB
or more. Decoding a capture fills a few hundred MB of such arrays once (the record tables, the
columns of the timeline). On virtual machines that hand free memory back to the host (free page
reporting, ballooning), every huge page is memory the host has to supply again and zero: measured
on a 2-vCPU VM, ``bench_pipeline.py``'s 111 MB capture took 4.1-4.7 s of system time with huge
pages and 0.5-0.6 s without (the same 0.4 GB written; ``docs/decoder.md``, "Speed and memory").
On a machine where huge pages are cheap, small ones cost a few tens of milliseconds more at this
size. So tracer turns numpy's hint off for its own process, unless the user chose with numpy's
own ``NUMPY_MADVISE_HUGEPAGE`` variable.
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
