"""Operator names compared across tools: ``CONV_2D`` (TFLite, TFLM tags), ``Conv2D`` (Vela's
regor core), ``Conv2DBias`` (Vela's legacy core) and ``AvgPool`` all name the same thing.
"""

from __future__ import annotations

import re

# The spellings that differ by more than case and underscores, mapped to the TFLite builtin name
# (normalized). Taken from the operator names Vela 5.x writes (regor ``Original Operator``,
# legacy ``NNG Operator`` and debug-database ``source`` tables).
_ALIASES = {
    "conv2dbias": "conv2d",
    "depthwiseconv2dbias": "depthwiseconv2d",
    "avgpool": "averagepool2d",
    "maxpool": "maxpool2d",
    "l2norm": "l2normalization",
    "transposeconv2d": "transposeconv",
    "transposeconv2dbias": "transposeconv",
    "concat": "concatenation",
    "fullyconnectedbias": "fullyconnected",
    "quantise": "quantize",
    "lrelu": "leakyrelu",
    "memcpy": "reshape",
}

# The TFLite custom operator Vela's compiled model runs on the NPU: one per NPU command stream.
NPU_CUSTOM_OP = "ethosu"

_NOT_ALNUM = re.compile(r"[^0-9a-z]")


def normalize_op(op: str) -> str:
    """A comparison key for an operator name: lower case, letters and digits only, aliases resolved.

    ``normalize_op("DEPTHWISE_CONV_2D") == normalize_op("DepthwiseConv2D") == "depthwiseconv2d"``;
    ``normalize_op("ethos-u") == "ethosu"``.
    """
    key = _NOT_ALNUM.sub("", op.lower())
    return _ALIASES.get(key, key)


def same_op(a: str, b: str) -> bool:
    """True if two operator names name the same operator (an empty name matches nothing)."""
    return bool(a) and bool(b) and normalize_op(a) == normalize_op(b)


def is_npu_custom_op(op: str) -> bool:
    """True for the ``ethos-u`` custom operator (a whole NPU command stream)."""
    return normalize_op(op) == NPU_CUSTOM_OP
