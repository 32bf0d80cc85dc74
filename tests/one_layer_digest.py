"""A capture digest of one layer's generated execution cycles, and nothing else: what
``tests/test_compare_runs.py`` and ``benchmarks/eval_compare.py`` hold builds against.
"""

from __future__ import annotations

import numpy as np

from tracer.analysis.samples import LayerSamples
from tracer.base.timeline import Engine, LayerInfo
from tracer.compare.digest import CaptureDigest

LAYER = {0: LayerInfo(0, "conv0", "CONV_2D", Engine.NPU)}


def one_layer_digest(cycles: np.ndarray) -> CaptureDigest:
    """A digest whose layer 0 ran ``cycles`` (one execution per inference, all complete)."""
    executions = len(cycles)
    return CaptureDigest(
        names=("generated",),
        layers=LAYER,
        samples={0: LayerSamples(cycles.astype(np.int64), None, {})},
        latency=np.zeros(0, np.int64),
        inferences=executions,
        complete=executions,
        clock_hz=None,
        arena_used=None,
        arena_size=None,
        stacks={},
        findings=(),
    )
