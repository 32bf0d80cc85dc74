"""Small int8 TFLite models of several sizes and operator mixes, compiled by the real Vela, and
captures of them measured from a hidden per-operator-type truth (for the calibration tests).

The models are written with the demo's flatbuffer writer (``firmware_snippets/demo/model/
make_model.py``: the TFLite schema modules of the ``ethos-u-vela`` wheel, no TensorFlow). Each is a
chain of blocks on an NHWC tensor; every operator runs on the NPU.

The "board": a layer's measured cycles are Vela's ``Op Cycles`` (converted to the capture's clock)
times its operator type's hidden factor (:data:`TRUTH`) times a per-layer deviation drawn once
(log-normal, :data:`LAYER_SIGMA`), with a little jitter per inference.
"""

from __future__ import annotations

import importlib.util
import math
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np
from check_streams import LayerSpec, encode_model, write_capture

from tracer.budget import load_budget
from tracer.budget.model import Budget
from tracer.budget.ops import normalize_op

ROOT = Path(__file__).resolve().parent.parent
VELA_FLAGS = (
    "--config",
    "Arm/vela.ini",
    "--accelerator-config",
    "ethos-u55-128",
    "--system-config",
    "Ethos_U55_High_End_Embedded",
    "--memory-mode",
    "Shared_Sram",
    "--verbose-performance",
    "--enable-debug-db",
)
CAPTURE_HZ = 250_000_000
HELD_OUT = "m_d"  # the model the tests hold against a calibration learnt on the others (conftest: board)
# The hidden truth: measured over Vela's estimate, per operator type (TFLite names).
TRUTH = {
    "CONV_2D": 1.6,
    "DEPTHWISE_CONV_2D": 2.4,
    "ADD": 0.7,
    "MAX_POOL_2D": 1.25,
    "AVERAGE_POOL_2D": 0.8,
    "FULLY_CONNECTED": 3.0,
}
LAYER_SIGMA = 0.08  # the spread of one layer around its type's factor (log scale)
JITTER = 0.01  # per inference


def _make_model() -> ModuleType:
    path = ROOT / "firmware_snippets" / "demo" / "model" / "make_model.py"
    spec = importlib.util.spec_from_file_location("demo_make_model", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("demo_make_model", module)
    spec.loader.exec_module(module)
    return module


def build_model(name: str, size: int, channels: int, blocks: Sequence[str], seed: int) -> bytes:
    """A chain of ``blocks`` on an input of ``[1, size, size, 3]``.

    Blocks: ``conv`` (3x3 stride 1, ``channels`` out, RELU), ``conv_s2`` (3x3 stride 2), ``pw``
    (1x1, twice the channels), ``dw`` (depthwise 3x3, RELU6), ``add`` (the tensor plus the one before
    the last block), ``maxpool`` (2x2 stride 2), then always a global ``AVERAGE_POOL_2D`` and a
    ``FULLY_CONNECTED`` to 10 classes.
    """
    mm = _make_model()
    op, options, act = mm.OP, mm.OPTIONS, mm.ACT
    g = mm.Graph(seed=seed)
    h = size
    c = 3
    x = g.activation("input", [1, h, h, c], 1 / 128, 0)
    before = x
    for k, block in enumerate(blocks):
        out_name = f"{name}_{block}{k}"
        if block in ("conv", "conv_s2", "pw"):
            stride = 2 if block == "conv_s2" else 1
            kernel = 1 if block == "pw" else 3
            c_out = channels * 2 if block == "pw" else channels
            h_out = (h + stride - 1) // stride
            w = g.weights(f"{out_name}/weights", [c_out, kernel, kernel, c], 0.02)
            b = g.bias(f"{out_name}/bias", c_out, 0.02 / 128)
            y = g.activation(out_name, [1, h_out, h_out, c_out], 0.05)
            padding = mm.SAME if kernel == 3 else mm.VALID
            g.op(op.CONV_2D, [x, w, b], [y], options.Conv2DOptions, mm._conv_options(stride, padding, act.RELU))
            h, c = h_out, c_out
        elif block == "dw":
            w = g.weights(f"{out_name}/weights", [1, 3, 3, c], 0.02)
            b = g.bias(f"{out_name}/bias", c, 0.05 * 0.02)
            y = g.activation(out_name, [1, h, h, c], 6 / 255)
            g.op(op.DEPTHWISE_CONV_2D, [x, w, b], [y], options.DepthwiseConv2DOptions, mm._depthwise_options(act.RELU6))
        elif block == "add":
            y = g.activation(out_name, [1, h, h, c], 0.08)
            g.op(op.ADD, [x, before], [y], options.AddOptions, mm._add_options)
        elif block == "maxpool":
            h = h // 2
            y = g.activation(out_name, [1, h, h, c], 0.08)
            g.op(op.MAX_POOL_2D, [x], [y], options.Pool2DOptions, mm._pool_options(2, 2))
        else:
            raise ValueError(block)
        before, x = x, y
    gap = g.activation(f"{name}_gap", [1, 1, 1, c], 0.1)
    g.op(op.AVERAGE_POOL_2D, [x], [gap], options.Pool2DOptions, mm._pool_options(h, 1))
    wf = g.weights(f"{name}_fc/weights", [10, c], 0.02)
    bf = g.bias(f"{name}_fc/bias", 10, 0.1 * 0.02)
    fc = g.activation(f"{name}_fc", [1, 10], 0.2, 0)
    g.op(op.FULLY_CONNECTED, [gap, wf, bf], [fc], options.FullyConnectedOptions, mm._fc_options)
    return bytes(g.serialise([0], [len(g.tensors) - 1], f"tracer calibration test model {name}"))


# Several sizes and operator mixes: (name, input size, channels, blocks).
MODELS = (
    ("m_a", 32, 16, ("conv_s2", "dw", "add", "pw", "dw", "maxpool")),
    ("m_b", 48, 8, ("conv", "maxpool", "dw", "add", "conv", "dw", "add")),
    ("m_c", 24, 24, ("conv", "dw", "pw", "maxpool", "dw", "add")),
    ("m_d", 64, 8, ("conv_s2", "maxpool", "conv", "dw", "add", "pw")),
    ("m_e", 40, 12, ("conv", "dw", "add", "maxpool", "conv", "dw", "add", "pw")),
    ("m_f", 56, 16, ("conv_s2", "dw", "maxpool", "pw", "dw", "add")),
)


def vela() -> str:
    """The ``vela`` program of this environment."""
    script = Path(sys.executable).with_name("vela")
    if script.exists():
        return str(script)
    found = shutil.which("vela")
    assert found, "vela is not installed: pip install -e '.[budget]' installs ethos-u-vela"
    return found


def compile_models(
    folder: Path, models: Sequence[tuple[str, int, int, tuple[str, ...]]] = MODELS
) -> dict[str, list[Path]]:
    """Write and compile each model into ``folder``; per model, its Vela budget files."""
    out: dict[str, list[Path]] = {}
    for seed, (name, size, channels, blocks) in enumerate(models):
        tflite = folder / f"{name}.tflite"
        tflite.write_bytes(build_model(name, size, channels, blocks, seed + 7))
        dest = folder / f"vela_{name}"
        done = subprocess.run(
            [vela(), str(tflite), *VELA_FLAGS, "--output-dir", str(dest)],
            capture_output=True,
            text=True,
            cwd=folder,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        out[name] = [
            dest / f"{name}_per-layer.csv",
            next(dest.glob(f"{name}_summary_*.csv")),
            dest / f"{name}_debug.xml",
        ]
    return out


def truth_factor(op: str) -> float:
    """The hidden factor of an operator type (any spelling)."""
    key = normalize_op(op)
    for name, factor in TRUTH.items():
        if normalize_op(name) == key:
            return factor
    raise KeyError(op)


def measured_capture(path: Path, budget: Budget, seed: int, inferences: int = 5) -> tuple[Path, dict[str, float]]:
    """A capture of the budget's model on the hidden board; also each layer's true expected cycles
    (before the per-inference jitter) by name, in the capture's clock."""
    rng = np.random.default_rng(seed)
    clock = budget.model.clock_hz
    assert clock
    scale = CAPTURE_HZ / clock
    specs: list[LayerSpec] = []
    truth: dict[str, float] = {}
    for layer in budget.layers:
        assert layer.predicted_cycles is not None
        op = _tflite_name(layer.op)
        expected = layer.predicted_cycles * scale * truth_factor(op) * math.exp(rng.normal(0, LAYER_SIGMA))
        truth[layer.name] = expected
        runs = [max(int(round(expected * (1 + rng.normal(0, JITTER)))), 30) for _ in range(inferences)]
        specs.append(LayerSpec(layer.name, op, True, runs))
    enc = encode_model(specs, inferences=inferences, clock_hz=CAPTURE_HZ)
    return write_capture(path, bytes(enc)), truth


def _tflite_name(op: str) -> str:
    key = normalize_op(op)
    return next(name for name in TRUTH if normalize_op(name) == key)


def budgets(files: dict[str, list[Path]]) -> dict[str, Budget]:
    """Each model's budget."""
    return {name: load_budget(paths) for name, paths in files.items()}


class Compiled:
    """The models compiled once: their folder, budget files, budgets, captures and truths."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.files = compile_models(folder)
        self.budgets = budgets(self.files)
        self.captures: dict[str, Path] = {}
        self.truth: dict[str, dict[str, float]] = {}
        for k, (name, budget) in enumerate(self.budgets.items()):
            self.captures[name], self.truth[name] = measured_capture(folder / f"{name}.trace", budget, seed=100 + k)

    def pairs(self, names: Sequence[str] | None = None) -> list[str]:
        """``CAPTURE:VELA_FOLDER`` arguments of ``tracer calibrate``."""
        chosen = list(self.budgets) if names is None else list(names)
        return [f"{self.captures[n]}:{self.files[n][0].parent}" for n in chosen]
