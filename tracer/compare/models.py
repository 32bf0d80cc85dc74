"""Are two captures of the same model, and which layer of one is which layer of the other.

Comparing layer 7 of one build with layer 7 of another only means something when both run the
same network. By default (``strict``) the models must agree on the number of layers and, layer
by layer, on the operator and the name (where the firmware gave names); otherwise the comparison
is refused with every difference listed (exit 2). A user who knows better forces a matching:

* ``index``: layers pair by position whatever their operators and names (a model whose layers
  were renamed, a compiler that changed an operator's name);
* ``name``: layers pair by name; layers only one side has are listed as added or removed (a
  model with a layer inserted).

The engine a layer ran on is not part of its identity: a layer that fell back from the NPU to
the CPU is the regression the comparison is there to show.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence

from tracer.base.timeline import LayerInfo
from tracer.errors import UsageError

MAX_LISTED = 12  # differences listed in the message


class MatchMode(str, enum.Enum):
    """How the layers of two models are paired."""

    STRICT = "strict"
    INDEX = "index"
    NAME = "name"


class ModelMismatch(UsageError):
    """The inputs are of different models (exit 2), with what differs."""


@dataclasses.dataclass(frozen=True)
class LayerPair:
    """A layer of the base and its counterpart in the new build.

    Attributes:
        base: The base layer's index (None: only the new build has it).
        new: The new layer's index (None: only the base has it).
        label: How to name the pair (the new build's name, else the base's).
    """

    base: int | None
    new: int | None
    label: str


def model_differences(base: Mapping[int, LayerInfo], new: Mapping[int, LayerInfo]) -> list[str]:
    """What differs between two layer lists, in words (empty: the same model)."""
    out = []
    if len(base) != len(new):
        out.append(f"{len(base)} layers against {len(new)}")
    for index in sorted(set(base) | set(new)):
        a, b = base.get(index), new.get(index)
        if a is None or b is None:
            continue
        if a.op and b.op and a.op != b.op:
            out.append(f"layer {index}: operator {a.op} against {b.op}")
        if a.name and b.name and a.name != b.name:
            out.append(f"layer {index}: name {a.name!r} against {b.name!r}")
    return out


def check_same_model(models: Sequence[tuple[str, Mapping[int, LayerInfo]]], side: str) -> None:
    """Raise :class:`ModelMismatch` unless every input of one side runs the same model.

    Args:
        models: (input name, its layers) of each input.
        side: ``base`` or ``new``, for the message.
    """
    first_name, first = models[0]
    for name, layers in models[1:]:
        differences = model_differences(first, layers)
        if differences:
            raise ModelMismatch(
                f"the {side} inputs are not all of one model: {first_name} and {name} differ: " + _listed(differences)
            )


def pair_layers(base: Mapping[int, LayerInfo], new: Mapping[int, LayerInfo], mode: MatchMode) -> list[LayerPair]:
    """Pair the layers of two models.

    Raises:
        ModelMismatch: ``strict`` and the models differ, or ``name`` and the names do not allow it.
    """
    if mode is MatchMode.STRICT:
        differences = model_differences(base, new)
        if differences:
            raise ModelMismatch(
                "the base and the new build run different models: "
                + _listed(differences)
                + " (--match index pairs layers by position, --match name by name)"
            )
    if mode is MatchMode.NAME:
        return _pair_by_name(base, new)
    return [
        LayerPair(i if i in base else None, i if i in new else None, _label(new.get(i) or base[i]))
        for i in sorted(set(base) | set(new))
    ]


def _pair_by_name(base: Mapping[int, LayerInfo], new: Mapping[int, LayerInfo]) -> list[LayerPair]:
    for side, layers in (("base", base), ("new", new)):
        names = [info.name for info in layers.values()]
        if not all(names):
            unnamed = [i for i, info in layers.items() if not info.name]
            raise ModelMismatch(f"--match name: the {side} build has unnamed layers ({_indices(unnamed)})")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ModelMismatch(f"--match name: the {side} build names several layers {', '.join(map(repr, repeated))}")
    by_name = {info.name: i for i, info in base.items()}
    pairs = [LayerPair(by_name.get(info.name), i, info.name) for i, info in sorted(new.items())]
    paired = {p.base for p in pairs}
    pairs += [LayerPair(i, None, info.name) for i, info in sorted(base.items()) if i not in paired]
    return pairs


def _label(info: LayerInfo) -> str:
    return info.label


def _indices(values: list[int]) -> str:
    shown = ", ".join(str(v) for v in values[:MAX_LISTED])
    return shown + (" ..." if len(values) > MAX_LISTED else "")


def _listed(differences: list[str]) -> str:
    shown = "; ".join(differences[:MAX_LISTED])
    more = len(differences) - MAX_LISTED
    return shown + (f"; and {more} more" if more > 0 else "")
