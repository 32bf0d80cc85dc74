"""Fuzzing every input tracer reads, in-process through ``main(argv)``: seeded mutations of the real
files in tests/data and captures/ (captures, raw trace, each log, each budget kind, an ELF), and
plain random bytes. Each run returns an exit code of the contract, raises nothing, prints no
traceback, and stays within time and memory bounds.

A few hundred inputs here (``TRACER_FUZZ_EXAMPLES`` for more); ``benchmarks/fuzz_campaign.py``
runs tens of thousands with the same machinery (``tests/fuzzing.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import require_tools
from fuzzing import (
    FORMATS,
    HOSTILE,
    Case,
    build_elf,
    elf_trace,
    load_seeds,
    make_case,
    make_hostile_case,
    problems,
    run_case,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CAMPAIGN = 16  # the unit test's inputs; the campaign draws its own
EXAMPLES = int(os.environ.get("TRACER_FUZZ_EXAMPLES", "240"))
MAX_SECONDS = 20.0
MAX_RSS_GROWTH_MB = 512.0


@pytest.fixture(scope="module")
def setting(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path, Path]:
    """The seeds (an ELF built now), a work folder and a PC-sample trace for ``decode --elf``."""
    require_tools("arm-none-eabi-gcc")
    work = tmp_path_factory.mktemp("fuzz")
    elf = build_elf(work)
    assert elf is not None
    seeds = load_seeds(elf)
    assert set(seeds) == set(FORMATS), f"a format without seeds: {set(FORMATS) - set(seeds)}"
    return seeds, work, elf_trace(elf, work)


def _keeps_the_contract(case: Case, work: Path, trace: Path) -> None:
    outcome = run_case(case, work, trace, timeout=MAX_SECONDS * 2)
    found = problems(outcome, MAX_SECONDS, MAX_RSS_GROWTH_MB)
    assert not found, f"{outcome.describe()}: {found}\n{outcome.error}"


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.integers(0, 2**31))
def test_mutated_inputs_keep_the_contract(index: int, setting: tuple[dict, Path, Path]) -> None:
    seeds, work, trace = setting
    _keeps_the_contract(make_case(CAMPAIGN, index, seeds), work, trace)


HOSTILE_EXAMPLES = int(os.environ.get("TRACER_FUZZ_HOSTILE_EXAMPLES", "36"))


@settings(
    max_examples=HOSTILE_EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(index=st.integers(0, 2**31))
def test_structure_aware_hostile_inputs_keep_the_contract(index: int, setting: tuple[dict, Path, Path]) -> None:
    """Issue 26's classes on a fixed seed budget: valid checksums and framing, hostile meaning
    (capture notes, record fields, ELF sections, shared ETDump offsets, Unicode digits, Vela's
    padding, TPIU frames that repeat their ID)."""
    seeds, work, trace = setting
    _keeps_the_contract(make_hostile_case(CAMPAIGN, index, seeds), work, trace)


def test_every_hostile_class_is_reached(setting: tuple[dict, Path, Path]) -> None:
    """The fixed budget reaches every format and generator of the structure-aware classes."""
    seeds, _, _ = setting
    cases = [make_hostile_case(CAMPAIGN, i, seeds) for i in range(200)]
    assert {(c.format, c.mutations[0]) for c in cases} == {(f, m) for f, ms in HOSTILE.items() for m in ms}


@settings(
    max_examples=max(20, EXAMPLES // 8), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(blob=st.binary(max_size=3000), verb=st.sampled_from(["decode", "report", "check"]))
def test_any_bytes_keep_the_contract(blob: bytes, verb: str, setting: tuple[dict, Path, Path]) -> None:
    _, work, trace = setting
    argv = [verb, "{input}", "-o", "{out}"] if verb != "decode" else [verb, "{input}", "--format", "stats"]
    _keeps_the_contract(Case(-1, "raw-trace", "hypothesis bytes", [], blob, argv), work, trace)


def test_every_format_has_seeds_and_every_mutation_runs(setting: tuple[dict, Path, Path]) -> None:
    """The harness itself: every format is reached, inputs are reproducible from their two numbers."""
    seeds, work, trace = setting
    cases = [make_case(CAMPAIGN, i, seeds) for i in range(len(FORMATS) * 3)]
    assert {c.format for c in cases} == set(FORMATS)
    again = make_case(CAMPAIGN, 5, seeds)
    assert (again.data, again.argv, again.mutations) == (cases[5].data, cases[5].argv, cases[5].mutations)
    for case in cases:
        _keeps_the_contract(case, work, trace)
