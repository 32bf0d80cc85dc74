"""Which predicted layer(s) each measured layer is, and its prediction in the capture's cycles.

``match_layers(measured, budget, capture_hz)`` tries, for each measured layer, in this order:

1. **name**: the measured name equals a budget layer's name or one of its parts' tensor names
   (exactly, then ignoring case);
2. **npu-subgraph**: a measured ``ethos-u`` operator (TFLite Micro runs each Vela command stream as
   one custom operator) is the n-th NPU subgraph of the budget: all its layers together;
3. **index**: the same model index, unless both name an operator and the operators differ;
4. **op-sequence**: what is left is aligned in order by operator type (longest common
   subsequence: ``CONV_2D`` = ``Conv2D`` = ``Conv2DBias``).

Units: Vela counts NPU cycles at its system configuration's clock; a capture counts CPU cycles at
its own. ``predicted_cycles = budget_cycles * capture_hz / budget_hz``; a budget without a clock
is taken to count the capture's clock already. When the capture's clock is unknown and the
budget's is known, no conversion is possible and ``predicted_cycles`` is None (pass
``capture_hz=budget.model.clock_hz`` to compare in the budget's units on purpose).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Sequence

from tracer.base.timeline import Engine, LayerInfo
from tracer.budget.model import Budget, BudgetLayer
from tracer.budget.ops import is_npu_custom_op, normalize_op, same_op


class MatchKind(str, enum.Enum):
    """How a measured layer was matched."""

    NAME = "name"
    NPU_SUBGRAPH = "npu-subgraph"
    INDEX = "index"
    OP_SEQUENCE = "op-sequence"
    NONE = "unmatched"


@dataclasses.dataclass(frozen=True)
class LayerMatch:
    """The prediction for one measured layer.

    Attributes:
        measured: The measured layer.
        budget: The budget layer(s) it is (several for an NPU subgraph; empty when unmatched).
        how: How they were matched.
        budget_cycles: Their predicted cycles, in the budget's clock (None: no estimate).
        predicted_cycles: The same in the capture's clock (None: no estimate or no conversion).
        tolerance_pct: The tolerance the budget sets for it (layer's own, else the model's).
        note: Anything a reader of the comparison should know (engine differs, clock unknown).
    """

    measured: LayerInfo
    budget: tuple[BudgetLayer, ...]
    how: MatchKind
    budget_cycles: float | None
    predicted_cycles: float | None
    tolerance_pct: float | None = None
    note: str = ""

    def ratio(self, measured_cycles: float) -> float | None:
        """Measured over predicted (None when there is no prediction or it is zero)."""
        if not self.predicted_cycles:
            return None
        return measured_cycles / self.predicted_cycles


@dataclasses.dataclass(frozen=True)
class Matching:
    """The result for a whole capture.

    Attributes:
        matches: One entry per measured layer, in the order given.
        unmatched_budget: Budget layers no measured layer matched.
        scale: Capture cycles per budget cycle (None when it cannot be known).
        note: How units were converted.
    """

    matches: tuple[LayerMatch, ...]
    unmatched_budget: tuple[BudgetLayer, ...]
    scale: float | None
    note: str


def cycle_scale(budget_hz: int | None, capture_hz: int | None) -> tuple[float | None, str]:
    """Capture cycles per budget cycle, and a sentence saying how it was decided."""
    if budget_hz is None:
        return 1.0, "the budget gives no clock: its cycles are taken as the capture's"
    if capture_hz is None:
        return None, f"the capture's clock is unknown: budget cycles at {budget_hz} Hz cannot be converted"
    if capture_hz == budget_hz:
        return 1.0, f"budget and capture count the same clock ({budget_hz} Hz)"
    return (
        capture_hz / budget_hz,
        f"budget cycles at {budget_hz} Hz scaled by {capture_hz}/{budget_hz} to the capture's clock",
    )


def match_layers(measured: Iterable[LayerInfo], budget: Budget, capture_hz: int | None) -> Matching:
    """Match measured layers to the budget (see the module docstring for the rules).

    Args:
        measured: The capture's layers (``InferenceTimeline.layers.values()``).
        budget: The normalized budget.
        capture_hz: The clock the measured cycles count (``InferenceTimeline.clock_hz``).
    """
    layers = sorted(measured, key=lambda la: la.index)
    scale, note = cycle_scale(budget.model.clock_hz, capture_hz)
    found: dict[int, tuple[tuple[BudgetLayer, ...], MatchKind]] = {}
    taken: set[int] = set()  # budget positions already matched

    _by_name(layers, budget.layers, found, taken)
    _by_subgraph(layers, budget.layers, found, taken)
    _by_index(layers, budget.layers, found, taken)
    _by_op_sequence(layers, budget.layers, found, taken)

    matches = []
    for layer in layers:
        group, how = found.get(layer.index, ((), MatchKind.NONE))
        matches.append(_match(layer, group, how, scale, budget.model.tolerance_pct, note))
    unmatched = tuple(b for b in budget.layers if b.position not in taken)
    return Matching(tuple(matches), unmatched, scale, note)


def _match(
    layer: LayerInfo,
    group: tuple[BudgetLayer, ...],
    how: MatchKind,
    scale: float | None,
    default_tolerance: float | None,
    clock_note: str,
) -> LayerMatch:
    if not group:
        return LayerMatch(layer, (), how, None, None, default_tolerance, "no budget layer matches")
    estimates = [b.predicted_cycles for b in group if b.predicted_cycles is not None]
    budget_cycles = sum(estimates) if estimates else None
    predicted = None if budget_cycles is None or scale is None else budget_cycles * scale
    own = [b.tolerance_pct for b in group if b.tolerance_pct is not None]
    notes = []
    planned = {b.engine for b in group if b.engine is not None}
    if planned == {Engine.NPU} and layer.engine is Engine.CPU:
        notes.append("planned for the NPU, measured on the CPU")
    elif planned == {Engine.CPU} and layer.engine is Engine.NPU:
        notes.append("planned for the CPU, measured on the NPU")
    if budget_cycles is None:
        notes.append("the budget has no cycle estimate for it")
    elif predicted is None:
        notes.append(clock_note)
    return LayerMatch(
        layer, group, how, budget_cycles, predicted, min(own) if own else default_tolerance, "; ".join(notes)
    )


def _by_name(layers: Sequence[LayerInfo], budget: Sequence[BudgetLayer], found: dict, taken: set[int]) -> None:
    for fold in (False, True):
        names: dict[str, BudgetLayer] = {}
        for b in budget:
            for name in (b.name, *b.aliases):
                if name:
                    names.setdefault(name.lower() if fold else name, b)
        for layer in layers:
            if layer.index in found or not layer.name:
                continue
            named = names.get(layer.name.lower() if fold else layer.name)
            if named is not None and named.position not in taken:
                found[layer.index] = ((named,), MatchKind.NAME)
                taken.add(named.position)


def _by_subgraph(layers: Sequence[LayerInfo], budget: Sequence[BudgetLayer], found: dict, taken: set[int]) -> None:
    custom = [la for la in layers if la.index not in found and is_npu_custom_op(la.op)]
    if not custom:
        return
    subgraphs = _npu_subgraphs(budget)
    for layer, group in zip(custom, subgraphs):
        free = tuple(b for b in group if b.position not in taken)
        if free:
            found[layer.index] = (free, MatchKind.NPU_SUBGRAPH)
            taken.update(b.position for b in free)


def _npu_subgraphs(budget: Sequence[BudgetLayer]) -> list[list[BudgetLayer]]:
    """NPU layers by command stream: Vela's numbering, else runs of NPU layers between CPU ones."""
    if any(b.npu_subgraph is not None for b in budget):
        numbered: dict[int, list[BudgetLayer]] = {}
        for b in budget:
            if b.npu_subgraph is not None:
                numbered.setdefault(b.npu_subgraph, []).append(b)
        return [numbered[k] for k in sorted(numbered)]
    runs: list[list[BudgetLayer]] = []
    previous_npu = False
    for b in budget:
        npu = b.engine is Engine.NPU
        if npu and not previous_npu:
            runs.append([])
        if npu:
            runs[-1].append(b)
        previous_npu = npu
    return runs


def _by_index(layers: Sequence[LayerInfo], budget: Sequence[BudgetLayer], found: dict, taken: set[int]) -> None:
    by_index = {b.index: b for b in budget if b.index is not None}
    for layer in layers:
        if layer.index in found or is_npu_custom_op(layer.op):
            continue
        b = by_index.get(layer.index)
        if b is None or b.position in taken:
            continue
        if layer.op and b.op and not same_op(layer.op, b.op):
            continue  # the same number for different operators: numbered differently
        found[layer.index] = ((b,), MatchKind.INDEX)
        taken.add(b.position)


def _by_op_sequence(layers: Sequence[LayerInfo], budget: Sequence[BudgetLayer], found: dict, taken: set[int]) -> None:
    left = [la for la in layers if la.index not in found and la.op and not is_npu_custom_op(la.op)]
    right = [b for b in budget if b.position not in taken and b.op]
    if not left or not right:
        return
    a = [normalize_op(la.op) for la in left]
    b = [normalize_op(x.op) for x in right]
    # Longest common subsequence, filled from the end so the walk below goes forwards.
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = table[i], table[i + 1]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if a[i] == b[j] else max(below[j], row[j + 1])
    i = j = 0
    while i < n and j < m:
        if a[i] == b[j]:
            found[left[i].index] = ((right[j],), MatchKind.OP_SEQUENCE)
            taken.add(right[j].position)
            i += 1
            j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1


def model_difference(matching: Matching, budget: Budget, capture_lost_data: bool = False) -> str | None:
    """What says the budget is for another model than the capture's, or None when nothing does.

    Names alone decide nothing (Vela names a layer by its output tensor, firmware by its own
    words), nor do layers a partial budget leaves out. A budget describes another model when some
    of its layers match no layer of the capture, or when layers were paired only by operator order
    and some capture layers are left over (the capture's CPU layers are not counted against a
    budget that has none: Vela's legacy core leaves them out).

    Args:
        matching: The result of :func:`match_layers`.
        budget: The budget matched.
        capture_lost_data: The capture lost or damaged data: the layers it lacks may be among what
            it lost, so budget layers it does not have decide nothing.
    """
    if not budget.layers or not matching.matches:
        return None
    measured = [m.measured for m in matching.matches]
    left_budget = list(matching.unmatched_budget)
    left_measured = [m.measured for m in matching.matches if m.how is MatchKind.NONE]
    if not any(b.engine is Engine.CPU for b in budget.layers):
        left_measured = [la for la in left_measured if la.engine is not Engine.CPU]
    by_order = any(m.how is MatchKind.OP_SEQUENCE for m in matching.matches)
    if not (left_budget and not capture_lost_data) and not (left_measured and by_order):
        return None
    said = [f"the budget has {len(budget.layers)} layers, the capture {len(measured)} layers"]
    budget_ops = [b.op for b in budget.layers if b.op]
    measured_ops = [la.op for la in measured if la.op and not is_npu_custom_op(la.op)]
    first = _first_difference(budget_ops, measured_ops)
    if first is not None:
        said.append(first)
    if left_budget:
        said.append(
            f"{len(left_budget)} budget layer(s) match no layer of the capture ({_labels(b.label for b in left_budget)})"
        )
    if left_measured:
        said.append(
            f"{len(left_measured)} capture layer(s) match no budget layer ({_labels(la.label for la in left_measured)})"
        )
    budget_names = {n for b in budget.layers for n in (b.name, *b.aliases) if n}
    measured_names = {la.name for la in measured if la.name}
    if budget_names and measured_names:
        said.append(f"layer names in common: {len(budget_names & measured_names)} of {len(measured_names)}")
    return "; ".join(said)


def _first_difference(budget_ops: list[str], measured_ops: list[str]) -> str | None:
    """Where two operator sequences part, in words (None when they agree or either is unknown)."""
    if not budget_ops or not measured_ops:
        return None
    for k, (b, m) in enumerate(zip(budget_ops, measured_ops)):
        if not same_op(b, m):
            return f"operators differ from position {k}: budget {b}, capture {m}"
    if len(budget_ops) == len(measured_ops):
        return None
    k = min(len(budget_ops), len(measured_ops))
    longer, what = (budget_ops, "budget") if len(budget_ops) > k else (measured_ops, "capture")
    return f"operators agree up to position {k - 1}, then the {what} goes on with {longer[k]}"


def _labels(labels: Iterable[str], most: int = 5) -> str:
    items = list(labels)
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")
