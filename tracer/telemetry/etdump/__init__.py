"""ExecuTorch's ETDump (``.etdp``): the profiling file of ExecuTorch's runtime, as a timeline.

See :mod:`tracer.telemetry.etdump.reader` for how its events become inferences and layers.
"""

from tracer.telemetry.etdump.reader import is_etdump, read_etdump

__all__ = ["is_etdump", "read_etdump"]
