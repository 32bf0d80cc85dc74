"""A live meter's newest samples (tracer.power.tap) attributed as a file is: the window of a
simulated meter's recording (tracer.power.simulate: the per-layer power model is the truth)
gives each layer's power as the whole recording does, for the inferences inside it.
"""

from __future__ import annotations

import numpy as np
import pytest
from power_streams import sync_capture

from tracer.pipeline.load import load_timeline
from tracer.power.attribute import attribute_energy
from tracer.power.edges import find_edges
from tracer.power.simulate import Meter, PowerModel, SimulatedRecording
from tracer.power.tap import SampleTap

MODEL = PowerModel({0: 40.0, 1: 95.0, 2: 25.0}, other_mw=12.0, idle_mw=2.0)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    timeline, _ = load_timeline(str(sync_capture(tmp_path_factory.mktemp("tap") / "run.trace")))
    return timeline, SimulatedRecording(timeline, MODEL, Meter(100_000, drift_ppm=150, white_mw=1.0, seed=3))


def _tapped(recording: SimulatedRecording, capacity: int, block: int = 997) -> SampleTap:
    tap = SampleTap(recording.info, capacity)
    for chunk in recording.chunks(block):
        tap.add(chunk.power, chunk.digital)
    return tap


def test_the_window_holds_the_newest_samples_and_counts_the_edges_before_it(run) -> None:
    _, recording = run
    tap = _tapped(recording, 6000)
    window = tap.window()
    info = window.info
    assert info.samples == recording.samples == tap.samples
    assert 6000 <= info.samples - info.first_sample < 6000 + 997  # whole blocks, at least the capacity
    whole = np.concatenate([c.power for c in recording.chunks()])
    held = np.concatenate([c.power for c in window.chunks(2048)])
    np.testing.assert_allclose(held, whole[info.first_sample :], rtol=1e-6, atol=1e-9)  # float32 held
    all_edges = find_edges(recording.chunks(), 0)
    window_edges = find_edges(window.chunks(), 0)
    before = int(np.count_nonzero(all_edges.position < info.first_sample))
    assert info.edges_before[0] == before > 0
    np.testing.assert_array_equal(window_edges.position, all_edges.position[before:])


@pytest.mark.parametrize("capacity", [1 << 20, 8000, 4000])
def test_a_window_is_attributed_as_the_whole_recording(run, capacity: int) -> None:
    timeline, recording = run
    whole = attribute_energy(timeline, recording)
    window = _tapped(recording, capacity).window()
    got = attribute_energy(timeline, window)
    measured = sorted(got.inference_uj)
    assert measured[-1] == max(whole.inference_uj)  # the newest inferences, up to the last sampled
    if window.info.first_sample:
        assert measured[0] > 0 and got.left_out["outside_recording"] == 40 - len(measured)
    for layer in (0, 1):  # integrated layers: the model's power within 1 %
        assert got.layers[layer].power_mw == pytest.approx(MODEL.layer_mw[layer], rel=0.01)
    for number in measured:  # an inference's energy does not depend on where the window starts
        assert got.inference_uj[number] == pytest.approx(whole.inference_uj[number], rel=0.01)
