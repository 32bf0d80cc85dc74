#!/usr/bin/env python3
"""Write ``sampling_net.tflite``: a small int8 model whose every operator the Ethos-U runs.

No TensorFlow: the model is serialised with the TFLite flatbuffer schema modules that ship inside
the ``ethos-u-vela`` package (``ethosu.vela.tflite``) and the ``flatbuffers`` runtime it depends on.
Weights are drawn from a seeded generator, so the file is the same byte for byte on every run.

Graph (NHWC, int8, batch 1)::

    input [1,32,32,3]
     -> CONV_2D 3x3 stride 2 SAME, 16 channels, RELU    conv1 [1,16,16,16]
     -> DEPTHWISE_CONV_2D 3x3 SAME, RELU6               dw2   [1,16,16,16]
     -> ADD(conv1, dw2)                                 add3  [1,16,16,16]
     -> MAX_POOL_2D 2x2 stride 2                        pool4 [1,8,8,16]
     -> CONV_2D 1x1, 32 channels, RELU                  pw5   [1,8,8,32]
     -> AVERAGE_POOL_2D 8x8 (global)                    gap6  [1,1,1,32]
     -> FULLY_CONNECTED 32 -> 10                        fc7   [1,10]

Vela compiles all seven into one ``ethos-u`` custom operator: one command stream, one NPU job.

Usage: ``python make_model.py [OUT.tflite]`` (default: ``sampling_net.tflite`` beside this file).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import flatbuffers
import numpy as np
from ethosu.vela.tflite import (
    ActivationFunctionType,
    AddOptions,
    Buffer,
    BuiltinOperator,
    BuiltinOptions,
    Conv2DOptions,
    DepthwiseConv2DOptions,
    FullyConnectedOptions,
    Model,
    Operator,
    OperatorCode,
    Padding,
    Pool2DOptions,
    QuantizationParameters,
    SubGraph,
    Tensor,
    TensorType,
)

OP = BuiltinOperator.BuiltinOperator
OPTIONS = BuiltinOptions.BuiltinOptions
ACT = ActivationFunctionType.ActivationFunctionType
SAME, VALID = Padding.Padding.SAME, Padding.Padding.VALID
INT8, INT32 = TensorType.TensorType.INT8, TensorType.TensorType.INT32


@dataclasses.dataclass
class TensorSpec:
    """A tensor of the graph: shape, type, quantisation, constant data (or none)."""

    name: str
    shape: list[int]
    dtype: int
    scale: float
    zero_point: int
    data: np.ndarray | None = None


@dataclasses.dataclass
class OpSpec:
    """An operator: its builtin code, input and output tensor indices, options."""

    code: int
    inputs: list[int]
    outputs: list[int]
    options_type: int
    options: object  # a callable (builder) -> options table offset


class Graph:
    """Collects tensors and operators, then serialises them as a TFLite model."""

    def __init__(self, seed: int) -> None:
        self.tensors: list[TensorSpec] = []
        self.ops: list[OpSpec] = []
        self.rng = np.random.default_rng(seed)

    def tensor(self, spec: TensorSpec) -> int:
        self.tensors.append(spec)
        return len(self.tensors) - 1

    def activation(self, name: str, shape: list[int], scale: float, zero_point: int = -128) -> int:
        return self.tensor(TensorSpec(name, shape, INT8, scale, zero_point))

    def weights(self, name: str, shape: list[int], scale: float) -> int:
        values = self.rng.integers(-127, 128, size=shape, dtype=np.int8)
        return self.tensor(TensorSpec(name, shape, INT8, scale, 0, values))

    def bias(self, name: str, channels: int, scale: float) -> int:
        values = self.rng.integers(-2000, 2000, size=[channels], dtype=np.int32)
        return self.tensor(TensorSpec(name, [channels], INT32, scale, 0, values))

    def op(self, code: int, inputs: list[int], outputs: list[int], options_type: int, options: object) -> None:
        self.ops.append(OpSpec(code, inputs, outputs, options_type, options))

    # -- serialisation -------------------------------------------------------------------------
    def serialise(self, inputs: list[int], outputs: list[int], description: str) -> bytes:
        b = flatbuffers.Builder(4096)
        # Buffer 0 is the empty buffer every model starts with; constants get their own.
        buffer_data = [None] + [t.data for t in self.tensors if t.data is not None]
        buffers = []
        for data in buffer_data:
            vec = None
            if data is not None:
                raw = data.tobytes()
                b.StartVector(1, len(raw), 16)
                for byte in reversed(raw):
                    b.PrependUint8(byte)
                vec = b.EndVector()
            Buffer.BufferStart(b)
            if vec is not None:
                Buffer.BufferAddData(b, vec)
            buffers.append(Buffer.BufferEnd(b))
        tensors = []
        next_buffer = 1
        for spec in self.tensors:
            buffer_index = 0
            if spec.data is not None:
                buffer_index, next_buffer = next_buffer, next_buffer + 1
            tensors.append(self._tensor(b, spec, buffer_index))
        codes = sorted({o.code for o in self.ops})
        code_tables = []
        for code in codes:
            OperatorCode.OperatorCodeStart(b)
            OperatorCode.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            OperatorCode.OperatorCodeAddBuiltinCode(b, code)
            OperatorCode.OperatorCodeAddVersion(b, 1)
            code_tables.append(OperatorCode.OperatorCodeEnd(b))
        operators = []
        for spec in self.ops:
            options = spec.options(b)
            ins = _int_vector(b, Operator.OperatorStartInputsVector, spec.inputs)
            outs = _int_vector(b, Operator.OperatorStartOutputsVector, spec.outputs)
            Operator.OperatorStart(b)
            Operator.OperatorAddOpcodeIndex(b, codes.index(spec.code))
            Operator.OperatorAddInputs(b, ins)
            Operator.OperatorAddOutputs(b, outs)
            Operator.OperatorAddBuiltinOptionsType(b, spec.options_type)
            Operator.OperatorAddBuiltinOptions(b, options)
            operators.append(Operator.OperatorEnd(b))
        tensor_vec = _table_vector(b, SubGraph.SubGraphStartTensorsVector, tensors)
        op_vec = _table_vector(b, SubGraph.SubGraphStartOperatorsVector, operators)
        in_vec = _int_vector(b, SubGraph.SubGraphStartInputsVector, inputs)
        out_vec = _int_vector(b, SubGraph.SubGraphStartOutputsVector, outputs)
        name = b.CreateString("main")
        SubGraph.SubGraphStart(b)
        SubGraph.SubGraphAddTensors(b, tensor_vec)
        SubGraph.SubGraphAddOperators(b, op_vec)
        SubGraph.SubGraphAddInputs(b, in_vec)
        SubGraph.SubGraphAddOutputs(b, out_vec)
        SubGraph.SubGraphAddName(b, name)
        subgraph = SubGraph.SubGraphEnd(b)
        subgraphs = _table_vector(b, Model.ModelStartSubgraphsVector, [subgraph])
        code_vec = _table_vector(b, Model.ModelStartOperatorCodesVector, code_tables)
        buffer_vec = _table_vector(b, Model.ModelStartBuffersVector, buffers)
        desc = b.CreateString(description)
        Model.ModelStart(b)
        Model.ModelAddVersion(b, 3)
        Model.ModelAddOperatorCodes(b, code_vec)
        Model.ModelAddSubgraphs(b, subgraphs)
        Model.ModelAddDescription(b, desc)
        Model.ModelAddBuffers(b, buffer_vec)
        b.Finish(Model.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    @staticmethod
    def _tensor(b: flatbuffers.Builder, spec: TensorSpec, buffer_index: int) -> int:
        scale = _float_vector(b, QuantizationParameters.QuantizationParametersStartScaleVector, [spec.scale])
        zero = _long_vector(b, QuantizationParameters.QuantizationParametersStartZeroPointVector, [spec.zero_point])
        QuantizationParameters.QuantizationParametersStart(b)
        QuantizationParameters.QuantizationParametersAddScale(b, scale)
        QuantizationParameters.QuantizationParametersAddZeroPoint(b, zero)
        quant = QuantizationParameters.QuantizationParametersEnd(b)
        shape = _int_vector(b, Tensor.TensorStartShapeVector, spec.shape)
        name = b.CreateString(spec.name)
        Tensor.TensorStart(b)
        Tensor.TensorAddShape(b, shape)
        Tensor.TensorAddType(b, spec.dtype)
        Tensor.TensorAddBuffer(b, buffer_index)
        Tensor.TensorAddName(b, name)
        Tensor.TensorAddQuantization(b, quant)
        return Tensor.TensorEnd(b)


def _int_vector(b: flatbuffers.Builder, start: object, values: list[int]) -> int:
    start(b, len(values))
    for v in reversed(values):
        b.PrependInt32(v)
    return b.EndVector()


def _long_vector(b: flatbuffers.Builder, start: object, values: list[int]) -> int:
    start(b, len(values))
    for v in reversed(values):
        b.PrependInt64(v)
    return b.EndVector()


def _float_vector(b: flatbuffers.Builder, start: object, values: list[float]) -> int:
    start(b, len(values))
    for v in reversed(values):
        b.PrependFloat32(v)
    return b.EndVector()


def _table_vector(b: flatbuffers.Builder, start: object, offsets: list[int]) -> int:
    start(b, len(offsets))
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _conv_options(stride: int, padding: int, activation: int):
    def build(b: flatbuffers.Builder) -> int:
        Conv2DOptions.Conv2DOptionsStart(b)
        Conv2DOptions.Conv2DOptionsAddPadding(b, padding)
        Conv2DOptions.Conv2DOptionsAddStrideW(b, stride)
        Conv2DOptions.Conv2DOptionsAddStrideH(b, stride)
        Conv2DOptions.Conv2DOptionsAddFusedActivationFunction(b, activation)
        Conv2DOptions.Conv2DOptionsAddDilationWFactor(b, 1)
        Conv2DOptions.Conv2DOptionsAddDilationHFactor(b, 1)
        return Conv2DOptions.Conv2DOptionsEnd(b)

    return build


def _depthwise_options(activation: int):
    def build(b: flatbuffers.Builder) -> int:
        DepthwiseConv2DOptions.DepthwiseConv2DOptionsStart(b)
        DepthwiseConv2DOptions.DepthwiseConv2DOptionsAddPadding(b, SAME)
        DepthwiseConv2DOptions.DepthwiseConv2DOptionsAddStrideW(b, 1)
        DepthwiseConv2DOptions.DepthwiseConv2DOptionsAddStrideH(b, 1)
        DepthwiseConv2DOptions.DepthwiseConv2DOptionsAddDepthMultiplier(b, 1)
        DepthwiseConv2DOptions.DepthwiseConv2DOptionsAddFusedActivationFunction(b, activation)
        DepthwiseConv2DOptions.DepthwiseConv2DOptionsAddDilationWFactor(b, 1)
        DepthwiseConv2DOptions.DepthwiseConv2DOptionsAddDilationHFactor(b, 1)
        return DepthwiseConv2DOptions.DepthwiseConv2DOptionsEnd(b)

    return build


def _pool_options(size: int, stride: int):
    def build(b: flatbuffers.Builder) -> int:
        Pool2DOptions.Pool2DOptionsStart(b)
        Pool2DOptions.Pool2DOptionsAddPadding(b, VALID)
        Pool2DOptions.Pool2DOptionsAddStrideW(b, stride)
        Pool2DOptions.Pool2DOptionsAddStrideH(b, stride)
        Pool2DOptions.Pool2DOptionsAddFilterWidth(b, size)
        Pool2DOptions.Pool2DOptionsAddFilterHeight(b, size)
        Pool2DOptions.Pool2DOptionsAddFusedActivationFunction(b, ACT.NONE)
        return Pool2DOptions.Pool2DOptionsEnd(b)

    return build


def _add_options(b: flatbuffers.Builder) -> int:
    AddOptions.AddOptionsStart(b)
    AddOptions.AddOptionsAddFusedActivationFunction(b, ACT.NONE)
    return AddOptions.AddOptionsEnd(b)


def _fc_options(b: flatbuffers.Builder) -> int:
    FullyConnectedOptions.FullyConnectedOptionsStart(b)
    FullyConnectedOptions.FullyConnectedOptionsAddFusedActivationFunction(b, ACT.NONE)
    return FullyConnectedOptions.FullyConnectedOptionsEnd(b)


def build_model() -> bytes:
    """The model's flatbuffer bytes (deterministic)."""
    g = Graph(seed=20240615)
    x = g.activation("input", [1, 32, 32, 3], 1 / 128, 0)
    w1 = g.weights("conv1/weights", [16, 3, 3, 3], 0.02)
    b1 = g.bias("conv1/bias", 16, 0.02 / 128)
    conv1 = g.activation("conv1", [1, 16, 16, 16], 0.05)
    g.op(OP.CONV_2D, [x, w1, b1], [conv1], OPTIONS.Conv2DOptions, _conv_options(2, SAME, ACT.RELU))
    w2 = g.weights("dw2/weights", [1, 3, 3, 16], 0.02)
    b2 = g.bias("dw2/bias", 16, 0.05 * 0.02)
    dw2 = g.activation("dw2", [1, 16, 16, 16], 6 / 255)
    g.op(OP.DEPTHWISE_CONV_2D, [conv1, w2, b2], [dw2], OPTIONS.DepthwiseConv2DOptions, _depthwise_options(ACT.RELU6))
    add3 = g.activation("add3", [1, 16, 16, 16], 0.08)
    g.op(OP.ADD, [conv1, dw2], [add3], OPTIONS.AddOptions, _add_options)
    pool4 = g.activation("pool4", [1, 8, 8, 16], 0.08)
    g.op(OP.MAX_POOL_2D, [add3], [pool4], OPTIONS.Pool2DOptions, _pool_options(2, 2))
    w5 = g.weights("pw5/weights", [32, 1, 1, 16], 0.02)
    b5 = g.bias("pw5/bias", 32, 0.08 * 0.02)
    pw5 = g.activation("pw5", [1, 8, 8, 32], 0.1)
    g.op(OP.CONV_2D, [pool4, w5, b5], [pw5], OPTIONS.Conv2DOptions, _conv_options(1, VALID, ACT.RELU))
    gap6 = g.activation("gap6", [1, 1, 1, 32], 0.1)
    g.op(OP.AVERAGE_POOL_2D, [pw5], [gap6], OPTIONS.Pool2DOptions, _pool_options(8, 1))
    w7 = g.weights("fc7/weights", [10, 32], 0.02)
    b7 = g.bias("fc7/bias", 10, 0.1 * 0.02)
    fc7 = g.activation("fc7", [1, 10], 0.2, 0)
    g.op(OP.FULLY_CONNECTED, [gap6, w7, b7], [fc7], OPTIONS.FullyConnectedOptions, _fc_options)
    return g.serialise([x], [fc7], "tracer sampling demo model")


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else Path(__file__).with_name("sampling_net.tflite")
    out.write_bytes(build_model())
    print(f"wrote {out} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
