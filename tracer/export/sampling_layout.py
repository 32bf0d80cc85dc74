"""The sampler's results as trace-viewer tracks (Perfetto, Chrome JSON), beside the layer tracks.

* ``NPU operators (sampled)``: inside each sampled NPU job span, one slice per Vela operation in
  stream order, as long as that job's own samples say (``n_k / N * job cycles``; an operation
  that got no sample in that job has no slice); args give the samples and the capture-wide
  estimate with its interval. Only when the samples map onto the debug database
  (:class:`~tracer.analysis.npu_operators.NpuOperatorProfile`): a wrong split is never drawn.
* ``NPU QREAD (sampled)``: a counter of every NPU sample's QREAD, mapped or not (the per-job view).
* ``CPU PC samples``: an instant per PC sample inside a layer, named by its function (inlined
  function first), so the trace viewer can count them per function in any selection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tracer.analysis.samples import layer_rows
from tracer.analysis.sampling import SamplingAnalysis
from tracer.base.timeline import InferenceTimeline
from tracer.export.perfetto_events import CounterValue, Instant, Slice

NPU_OPERATORS = "NPU operators (sampled)"
QREAD = "NPU QREAD (sampled)"
PC_SAMPLES = "CPU PC samples"

TrackFn = Callable[..., str]


def add_sampling_tracks(
    out: Any, timeline: InferenceTimeline, sampling: SamplingAnalysis, clock: Any, track: TrackFn
) -> None:
    """Append the tracks above to a :class:`~tracer.export.perfetto_layout.TraceLayout`."""
    profile = sampling.npu
    if profile is not None and profile.mapped:
        spans = timeline.spans
        by_layer = dict(layer_rows(spans.layer))  # one pass over the spans, not one per job
        for job in profile.jobs:
            rows = by_layer.get(job.layer, np.zeros(0, np.int64))
            starts = dict(zip(spans.inference[rows].tolist(), spans.start[rows].tolist()))
            for number, estimates, counts in zip(
                job.inference.tolist(), job.per_inference_cycles, job.per_inference_samples
            ):
                at = float(starts.get(number, -1))
                if at < 0:
                    continue
                for op, cycles, n in zip(job.operators, estimates.tolist(), counts.tolist()):
                    if not n or not cycles > 0:
                        continue
                    begin, end = clock.ns(round(at)), clock.ns(round(at + cycles))
                    at += cycles
                    if end <= begin:
                        continue
                    args = {
                        "layer": job.layer,
                        "inference": number,
                        "offset": op.offset,
                        "operator": op.operator,
                        "samples": n,
                        "estimated_cycles": round(cycles, 1),
                        "capture_share": round(op.share, 6),
                        "capture_interval": f"{op.share_low:.4f}-{op.share_high:.4f}",
                    }
                    if op.ratio is not None:
                        args["ratio_to_vela"] = round(op.ratio, 4)
                    out.slices.append(Slice(track(NPU_OPERATORS), begin, end, op.name, "npu-operator", args))
    npu = sampling.samples.npu
    if len(npu):
        name = track(QREAD, True, "count")
        for cycle, qread in zip(npu.cycle.tolist(), npu.qread.tolist()):
            out.counters.append(CounterValue(name, clock.ns(cycle), int(qread)))
    pc = sampling.samples.pc
    if len(pc) and sampling.hotspots is not None:
        names = sampling.hotspots.names
        for cycle, value, exc in zip(pc.cycle.tolist(), pc.pc.tolist(), pc.exception.tolist()):
            if cycle < 0:  # a DWT PC sample outside every identified layer span: no time known
                continue
            function, inlined = names.get(value, (None, None))
            label = inlined or function or f"{value:#010x}"
            args = {"pc": f"{value:#010x}", "function": function, "inlined": inlined, "exception": exc or None}
            out.instants.append(Instant(track(PC_SAMPLES), clock.ns(cycle), label, "pc-sample", args))
