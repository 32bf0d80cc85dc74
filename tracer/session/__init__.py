"""The session engine behind ``tracer live`` and ``tracer replay``: feed, decode, fold, snapshot.

No user interface here (the architecture test keeps textual, rich, serial and probe libraries
out): a front end builds a :class:`Session`, runs :meth:`Session.run` in a worker thread and reads
:meth:`Session.snapshot` on its own timer. Names are loaded on first use, so the command-line
parser can read the defaults of small modules without loading the decoder.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Session": "tracer.session.engine",
    "SessionOptions": "tracer.session.engine",
    "CaptureFeed": "tracer.session.feeds",
    "SourceFeed": "tracer.session.feeds",
    "Piece": "tracer.session.feeds",
    "Diagnosis": "tracer.session.findings",
    "LatencyInfo": "tracer.session.snapshot",
    "LayerRow": "tracer.session.snapshot",
    "SessionSnapshot": "tracer.session.snapshot",
    "StatusInfo": "tracer.session.snapshot",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tracer.session' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
