"""CPU hot spots per layer: PC samples attributed to the layer they fall in, named from the ELF.

A layer span says how long a CPU layer took, not where inside it the time went. PC samples do:
the timer-interrupt PC record (``trc_sampler.h``: the interrupted code's PC, for targets without
SWO, QEMU included) or the DWT's periodic PC sampling over SWO. Each sample inside a complete
inference's layer span counts to that layer; its PC is named by the function symbol containing it
and, when the debug information says the code there was inlined, by the function inlined
(:class:`~tracer.elf.inlines.CodeLocator`): ``add`` inside ``net_run_layer``. Without an ELF a PC is
named by its address.

Per layer the top functions are listed with their share of the layer's samples; the rest are
one "other functions" row, so the shares add up to 1. The share of a function estimates its
share of the layer's time (samples are taken at a fixed rate, its period dithered); the samples
per layer say how far to trust it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from tracer.base.timeline import InferenceTimeline
from tracer.elf.inlines import CodeLocator

TOP_FUNCTIONS = 8
OTHER = "(other functions)"


@dataclasses.dataclass(frozen=True, slots=True)
class HotFunction:
    """Where a share of a layer's samples fell.

    Attributes:
        name: The function (the inlined one when the code was inlined), ``0x...`` without an ELF
            or outside every symbol, or :data:`OTHER`.
        inlined_in: The function symbol the code belongs to, when ``name`` was inlined into it.
        samples: Samples on it.
        share: Its share of the layer's samples.
    """

    name: str
    inlined_in: str | None
    samples: int
    share: float

    @property
    def label(self) -> str:
        """``add [in net_run_layer]`` for inlined code, else the name."""
        return f"{self.name} [in {self.inlined_in}]" if self.inlined_in else self.name

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return {
            "name": self.name,
            "inlined_in": self.inlined_in,
            "samples": self.samples,
            "share": round(self.share, 6),
        }


@dataclasses.dataclass(frozen=True)
class LayerHotSpots:
    """The hot spots of one layer.

    Attributes:
        layer: The layer index.
        label: Its name.
        engine: ``cpu`` or ``npu`` (for an NPU layer: what the CPU did while the NPU worked).
        samples: PC samples inside its spans.
        functions: The top functions, then :data:`OTHER` if more; shares add up to 1.
    """

    layer: int
    label: str
    engine: str
    samples: int
    functions: tuple[HotFunction, ...]

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return {
            "layer": self.layer,
            "label": self.label,
            "engine": self.engine,
            "samples": self.samples,
            "functions": [f.to_json() for f in self.functions],
        }


@dataclasses.dataclass(frozen=True)
class CpuHotSpots:
    """CPU hot spots of a capture, per layer.

    Attributes:
        source: Where the PCs come from (``timer interrupt PC samples`` ...).
        symbolised: PCs were named from an ELF.
        inlines: The ELF's debug information named inlined functions.
        samples: PC samples in the capture.
        outside_layers: Of which outside every complete inference's layer spans.
        in_handlers: Of which interrupted an exception handler (they count to the layer too).
        layers: Per layer with samples, in layer order.
        message: What limits the result (no ELF ...), or None.
        names: (function, inlined function) of every sampled PC value (for views that draw each
            sample).
    """

    source: str
    symbolised: bool
    inlines: bool
    samples: int
    outside_layers: int
    in_handlers: int
    layers: tuple[LayerHotSpots, ...]
    message: str | None
    names: dict[int, tuple[str | None, str | None]] = dataclasses.field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The report's ``cpu_hotspots`` section."""
        return {
            "source": self.source,
            "symbolised": self.symbolised,
            "inlines": self.inlines,
            "samples": self.samples,
            "outside_layers": self.outside_layers,
            "in_handlers": self.in_handlers,
            "message": self.message,
            "layers": [layer.to_json() for layer in self.layers],
        }


def pc_layers(timeline: InferenceTimeline, cycle: np.ndarray) -> np.ndarray:
    """The layer each PC sample (``cycle``, in time order) fell in: a complete span of a complete
    inference of ``timeline``; -1 elsewhere.
    """
    spans = timeline.spans
    complete = np.isin(spans.inference, timeline.inferences.number[timeline.inferences.complete]) & spans.complete
    layer_of = np.full(len(cycle), -1, np.int64)
    lo = np.searchsorted(cycle, spans.start, "left")
    hi = np.searchsorted(cycle, spans.end, "right")
    for r in np.flatnonzero(complete & (hi > lo)).tolist():
        layer_of[lo[r] : hi[r]] = spans.layer[r]
    return layer_of


def hot_spots(
    timeline: InferenceTimeline,
    pcs: np.ndarray,
    exc: np.ndarray,
    layer_of: np.ndarray,
    locator: CodeLocator | None = None,
    source: str = "timer interrupt PC samples",
    top: int = TOP_FUNCTIONS,
) -> CpuHotSpots:
    """The hot spots of PC samples in time order (their PCs, exceptions and layers,
    :func:`pc_layers`); ``timeline`` names the layers.
    """
    names = locator.locate_all(pcs) if locator is not None else {}
    layers = []
    for layer in sorted(set(layer_of[layer_of >= 0].tolist())):
        mine = layer_of == layer
        layers.append(_layer(timeline, layer, pcs[mine], names, top))
    message = None
    if locator is None:
        message = "no ELF given (--elf): PCs are shown as addresses"
    elif not locator.has_inlines:
        message = "the ELF has no DWARF inlining information: inlined functions count to their caller"
    return CpuHotSpots(
        source=source,
        symbolised=locator is not None,
        inlines=bool(locator and locator.has_inlines),
        samples=len(pcs),
        outside_layers=int((layer_of < 0).sum()),
        in_handlers=int((exc > 0).sum()),
        layers=tuple(layers),
        message=message,
        names=names,
    )


def _layer(
    timeline: InferenceTimeline, layer: int, pcs: np.ndarray, names: dict[int, tuple[str | None, str | None]], top: int
) -> LayerHotSpots:
    counts: dict[tuple[str, str | None], int] = {}
    values, hits = np.unique(pcs, return_counts=True)
    for value, n in zip(values.tolist(), hits.tolist()):
        function, inlined = names.get(value, (None, None))
        key = (inlined, function) if inlined else (function or f"{value:#010x}", None)
        counts[key] = counts.get(key, 0) + n
    total = int(len(pcs))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0]))
    functions = [HotFunction(name, parent, n, n / total) for (name, parent), n in ranked[:top]]
    rest = sum(n for _, n in ranked[top:])
    if rest:
        functions.append(HotFunction(OTHER, None, rest, rest / total))
    info = timeline.layer(layer)
    return LayerHotSpots(layer, info.label, info.engine.value, total, tuple(functions))
