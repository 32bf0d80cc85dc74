"""How many CPUs this process may use (the pipeline runs reading and ITM decoding on a thread of
their own, ahead of the record assembly, only where there are two or more).
"""

from __future__ import annotations

import os


def usable_cores() -> int:
    """CPUs this process may run on (its affinity where the system tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
