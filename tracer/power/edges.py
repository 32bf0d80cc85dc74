"""Edges on a recording's digital input, found chunk by chunk.

A digital input is sampled at the start of each sample's period (the simulator does so; a meter
samples its inputs with the current): a change between samples ``k - 1`` and ``k`` happened in
between, at ``k - 0.5`` on average. The half sample is the edge's quantisation (+-0.5 sample);
a fit over many edges averages it out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from tracer.power.recording import PowerChunk


@dataclasses.dataclass
class Edges:
    """The edges of one digital input.

    Attributes:
        position: Where each edge happened, in samples (``k - 0.5``: between samples k-1 and k).
        level: The level after each edge (1 rising, 0 falling).
        samples: Samples read (the recording's length).
    """

    position: np.ndarray
    level: np.ndarray
    samples: int


def find_edges(chunks: Iterable[PowerChunk], bit: int) -> Edges:
    """The edges of digital input ``bit`` over ``chunks`` (the first sample's level is no edge)."""
    positions: list[np.ndarray] = []
    levels: list[np.ndarray] = []
    last: int | None = None
    samples = 0
    for chunk in chunks:
        samples = chunk.first + len(chunk)
        if chunk.digital is None or len(chunk) == 0:
            continue
        x = ((chunk.digital >> bit) & 1).astype(np.int8)
        changed = np.flatnonzero(np.diff(x)) + 1
        if last is not None and x[0] != last:
            changed = np.concatenate(([0], changed))
        last = int(x[-1])
        positions.append(changed + chunk.first - 0.5)
        levels.append(x[changed])
    if not positions:
        return Edges(np.zeros(0), np.zeros(0, np.int8), samples)
    return Edges(np.concatenate(positions), np.concatenate(levels).astype(np.int8), samples)
