"""``tracer compare``: which layer changed, by how much, is it real, why; exit codes and renderings.

The captures are builds with known differences (``fleet_streams``): one layer slower, interrupt
time added inside a layer, more memory traffic, another model. Everything runs in this process
(one capture per side, or sets with ``--workers 1``); Dask is exercised in ``test_fleet.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fleet_streams import LAYERS, Build, write_build
from junitparser import JUnitXml

from tracer.compare.compare import Verdict, compare
from tracer.compare.models import MatchMode, ModelMismatch
from tracer.pipeline.digest import digest_file


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Captures of a base build, a repeat of it, and builds with one known difference each."""
    root = tmp_path_factory.mktemp("builds")
    renamed = tuple((("dwX", *layer[1:])) if i == 1 else layer for i, layer in enumerate(LAYERS))
    specs = {
        "base": (Build(), 1),
        "base2": (Build(), 2),
        "base3": (Build(), 3),
        "slow": (Build(slow=(1, 10.0)), 4),
        "slow2": (Build(slow=(1, 10.0)), 5),
        "isr": (Build(isr=(3, 900)), 6),
        "beats": (Build(slow=(0, 8.0), beats_pct=(0, 40.0)), 7),
        "renamed": (Build(layers=renamed), 8),
        "shorter": (Build(layers=LAYERS[:4]), 9),
        "arena": (Build(arena_used=50_000), 10),
        "exact": (Build(noise_pct=0.0), 11),
        "exact_slow": (Build(noise_pct=0.0, slow=(2, 3.0)), 12),
    }
    return {
        name: write_build(root / f"{name}.trace", build, 30, seed, elf_build_id=name)
        for name, (build, seed) in specs.items()
    }


def _compare(builds: dict[str, Path], base: list[str], new: list[str], **options: object):
    return compare([digest_file(str(builds[b])) for b in base], [digest_file(str(builds[n])) for n in new], **options)


def test_slower_layer_is_found_with_its_size(builds: dict[str, Path]) -> None:
    """dw1 10 % slower: that layer alone is a regression, by about 10 %, real; the rest unchanged."""
    result = _compare(builds, ["base"], ["slow"])
    by_label = {c.label: c for c in result.layers}
    dw1 = by_label["dw1"]
    assert dw1.verdict is Verdict.SLOWER and dw1.significant
    assert dw1.p50 is not None and 9.0 < (dw1.p50.pct or 0) < 11.0
    assert (
        dw1.p50.interval is not None
        and 9.0 < (dw1.p50.interval.low_pct or 0) <= (dw1.p50.interval.high_pct or 0) < 11.0
    )
    assert dw1.test is not None and dw1.test.p_value < 1e-6
    assert [c.label for c in result.regressions] == ["dw1"]
    assert all(c.verdict is Verdict.UNCHANGED for c in result.layers if c.label != "dw1")
    assert not result.passed
    # Own time carries the change; no interrupts; NPU_ACTIVE moved with it (compute).
    assert dw1.why is not None and dw1.why.own[1] - dw1.why.own[0] == pytest.approx(dw1.p50.delta, abs=60)
    assert dw1.why.interrupts == (0.0, 0.0)
    assert "NPU_ACTIVE" in [c.name for c in dw1.why.moved] and dw1.why.bound == "compute"


def test_repeats_of_the_same_build_pass(builds: dict[str, Path]) -> None:
    """Two captures of one build (different noise draws): nothing is a regression."""
    result = _compare(builds, ["base"], ["base2"])
    assert result.passed
    assert all(c.verdict in (Verdict.UNCHANGED, Verdict.CHANGED) for c in result.changes)
    assert not result.appeared and not result.gone


def test_sets_pool_their_repeats(builds: dict[str, Path]) -> None:
    """Two captures per side: counts add up, the slow layer is still the one regression."""
    result = _compare(builds, ["base", "base2"], ["slow", "slow2"])
    dw1 = next(c for c in result.layers if c.label == "dw1")
    assert (dw1.base_count, dw1.new_count) == (60, 60)
    assert [c.label for c in result.regressions] == ["dw1"]
    assert result.base.names == (str(builds["base"]), str(builds["base2"]))


def test_threshold_decides(builds: dict[str, Path]) -> None:
    """A real 10 % change is within a 15 % threshold ('changed', passes) and beyond 5 % (fails)."""
    assert _compare(builds, ["base"], ["slow"], threshold_pct=15.0).passed
    wide = next(c for c in _compare(builds, ["base"], ["slow"], threshold_pct=15.0).layers if c.label == "dw1")
    assert wide.verdict is Verdict.CHANGED


def test_interrupt_time_is_told_apart(builds: dict[str, Path]) -> None:
    """900 interrupt cycles inside pool3: the layer is slower, its own time is not; a finding appears."""
    result = _compare(builds, ["base"], ["isr"])
    pool3 = next(c for c in result.layers if c.label == "pool3")
    assert pool3.verdict is Verdict.SLOWER and pool3.why is not None
    assert pool3.why.interrupts == (0.0, 900.0)
    assert abs(pool3.why.own[1] - pool3.why.own[0]) < 40
    assert [(f.id, f.layer) for f in result.appeared] == [("isr-in-layer", 3)]


def test_memory_traffic_is_named(builds: dict[str, Path]) -> None:
    """conv0 8 % slower with 40 % more AXI beats: memory-bound."""
    result = _compare(builds, ["base"], ["beats"])
    conv0 = next(c for c in result.layers if c.label == "conv0")
    assert conv0.verdict is Verdict.SLOWER and conv0.why is not None
    beats = next(c for c in conv0.why.moved if c.name == "AXI0_RD_DATA_BEAT_RECEIVED")
    assert beats.kind == "memory" and beats.pct == pytest.approx(40.0, abs=0.5)
    assert conv0.why.bound == "memory"


def test_memory_growth_is_a_regression(builds: dict[str, Path]) -> None:
    """The arena's peak 40,000 -> 50,000 bytes: bigger, a regression though no layer is slower."""
    result = _compare(builds, ["base"], ["arena"])
    assert not result.regressions
    arena = next(m for m in result.memory if m.name == "arena")
    assert (arena.base, arena.new, arena.delta, arena.grew) == (40_000, 50_000, 10_000, True)
    assert not result.passed


def test_deterministic_target_is_exact(builds: dict[str, Path]) -> None:
    """No spread on either side: the change is exact (no test, no interval) and 3 % on add2 is a
    regression at a 2 % threshold, not at 5 %."""
    result = _compare(builds, ["exact"], ["exact_slow"], threshold_pct=2.0)
    add2 = next(c for c in result.layers if c.label == "add2")
    assert add2.exact and add2.test is None and add2.p50 is not None and add2.p50.interval is None
    assert add2.p50.delta == 90 and add2.verdict is Verdict.SLOWER
    others = [c for c in result.layers if c.label != "add2"]
    assert all(c.exact and c.p50 is not None and c.p50.delta == 0 and c.verdict is Verdict.UNCHANGED for c in others)
    assert _compare(builds, ["exact"], ["exact_slow"]).passed  # 3 % is within the default 5 %


def test_different_models_are_refused_with_what_differs(builds: dict[str, Path]) -> None:
    """A renamed layer or a missing one: exit 2 naming the difference, unless a matching is forced."""
    with pytest.raises(ModelMismatch, match=r"layer 1: name 'dw1' against 'dwX'"):
        _compare(builds, ["base"], ["renamed"])
    with pytest.raises(ModelMismatch, match=r"5 layers against 4"):
        _compare(builds, ["base"], ["shorter"])
    by_index = _compare(builds, ["base"], ["renamed"], mode=MatchMode.INDEX)
    assert [c.label for c in by_index.layers] == ["conv0", "dwX", "add2", "pool3", "fc4"]
    by_name = _compare(builds, ["base"], ["shorter"], mode=MatchMode.NAME)
    fc4 = next(c for c in by_name.layers if c.label == "fc4")
    assert (fc4.base_index, fc4.new_index, fc4.verdict) == (4, None, Verdict.NOT_MEASURED)
    with pytest.raises(ModelMismatch, match="base inputs are not all of one model"):
        _compare(builds, ["base", "shorter"], ["slow"])


def test_cli_exit_codes_and_text(builds: dict[str, Path], run_cli) -> None:
    """exit 1 naming the layer; exit 0 for a repeat; exit 2 for another model; exit 3 unreadable."""
    slow = run_cli("compare", builds["base"], builds["slow"])
    assert slow.code == 1, slow.err
    assert "FAIL: 1 regression(s) beyond 5 %: dw1" in slow.out
    assert "dw1: median" in slow.out and "own time" in slow.out
    same = run_cli("compare", builds["base"], builds["base2"])
    assert same.code == 0 and "PASS" in same.out
    other = run_cli("compare", builds["base"], builds["shorter"])
    assert other.code == 2 and "5 layers against 4" in other.err and "--match" in other.err
    assert run_cli("compare", builds["base"], builds["shorter"], "--match", "name").code == 0
    missing = run_cli("compare", builds["base"], builds["base"].parent / "nope.trace")
    assert missing.code == 3 and "no such file" in missing.err
    sets = run_cli("compare", "--base", builds["base"], builds["base2"], "--new", builds["slow"], "--workers", "1")
    assert sets.code == 1 and "2 captures" in sets.out
    assert run_cli("compare", builds["base"]).code == 2
    assert run_cli("compare", builds["base"], builds["slow"], "--base", builds["base"]).code == 2


def test_json_markdown_and_junit_carry_the_same_verdict(builds: dict[str, Path], run_cli, tmp_path: Path) -> None:
    """Every format: dw1 the one regression, with its numbers; JUnit has one failing test case."""
    out = run_cli("compare", builds["base"], builds["slow"], "--format", "json")
    obj = json.loads(out.out)
    assert obj["passed"] is False and obj["regressions"] == ["dw1"]
    dw1 = next(layer for layer in obj["layers"] if layer["label"] == "dw1")
    assert dw1["verdict"] == "slower" and dw1["test"]["name"] == "mann-whitney-u"
    assert dw1["p50"]["ci"]["confidence"] == 0.95 and 9 < dw1["p50"]["pct"] < 11
    assert obj["inference"]["label"] == "inference" and obj["base"]["labels"]["elf_build_id"] == "base"
    markdown = run_cli("compare", builds["base"], builds["slow"], "--format", "markdown").out
    assert markdown.startswith("### tracer compare: FAIL")
    assert "| 1 | dw1 | DEPTHWISE_CONV_2D |" in markdown and "**slower**" in markdown
    junit_path = tmp_path / "compare.xml"
    assert run_cli("compare", builds["base"], builds["slow"], "--format", "junit", "-o", junit_path).code == 1
    xml = JUnitXml.fromfile(str(junit_path))
    cases = [case for suite in xml for case in suite]
    failed = [case.name for case in cases if case.result]
    assert failed == ["layer 1 dw1"]
    assert len(cases) == 1 + len(LAYERS) + 2  # the inference, the layers, the arena and the stack
