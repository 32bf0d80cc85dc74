"""Where trace bytes come from. Every source is a :class:`ByteSource`, opened from a URL.

Backends that need a third-party library (pyserial, pylink, pyocd) import it only when opened,
so ``import tracer.sources`` stays light and works without the probe extras.
"""

from tracer.sources.base import ByteSource, SourceEnded, SourceLost
from tracer.sources.registry import open_source, source_schemes

__all__ = ["ByteSource", "SourceEnded", "SourceLost", "open_source", "source_schemes"]
