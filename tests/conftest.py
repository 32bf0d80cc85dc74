"""Shared fixtures: run the CLI in-process, find test data."""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import io
import os
import shutil
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tracer.cli.main import main
from tracer.native import KERNELS

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


def require_tools(*tools: str) -> None:
    """Fail (never skip) when a program a test needs is not on PATH: ``.ci/run`` installs them all."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    assert not missing, f"not installed: {', '.join(missing)} (./.ci/run installs the cross compiler and QEMU)"


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--snapshot-update``: accept the new SVG screens of the TUI snapshot tests (as the
    environment variable ``TRACER_SNAPSHOT_UPDATE=1`` does)."""
    # ValueError: a snapshot plugin registered the same option; its value is read all the same.
    with contextlib.suppress(ValueError):
        parser.addoption(
            "--snapshot-update",
            action="store_true",
            default=False,
            help="write the TUI snapshot tests' SVG screens as the new reference (look at them first)",
        )


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: one worker more than the CPUs this process may use.

    Many tests wait part of the time (QEMU starting, subprocesses, sockets, the screen's timers);
    a spare worker fills those waits. Measured on a 2-core machine, the whole suite: 2 workers
    170 s, 3 workers 153 s, 4 workers 154 s (more CPU). ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still wins.
    """
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist's own hook reads it
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cpus + 1


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests of one module that share a module-scoped fixture (a QEMU recording, a local Dask
    cluster) run on one worker under ``pytest -n --dist loadgroup``: else each worker would make
    the fixture again, and the slowest fixtures would be made twice."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or item.get_closest_marker("xdist_group") is not None:
            continue
        if any(d.scope == "module" for defs in info.name2fixturedefs.values() for d in defs):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__ if item.module else item.nodeid))


# The pure-Python kernels are about a hundred times slower than the compiled ones: property tests
# run this share of their examples on them (deterministic tests size their inputs with ``kernels``).
PYTHON_KERNEL_EXAMPLES = 0.1


@pytest.fixture(params=["native", "python"])
def kernels(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test on the compiled kernels (``tracer._kernels``), then on the pure-Python reference.

    Returns which one runs. The compiled kernels must be built: ``pip install -e .`` builds them
    (a missing build fails the test; nothing is skipped).
    """
    implementation = request.param
    for module_name, name in KERNELS:
        module = importlib.import_module(module_name)
        chosen = getattr(module, f"{name}_{implementation}")
        assert chosen is not None, f"{module_name}.{name}: tracer._kernels is not built (pip install -e . builds it)"
        monkeypatch.setattr(module, name, chosen)
    settings = getattr(request.function, "_hypothesis_internal_use_settings", None)
    if implementation == "python" and settings is not None:
        from hypothesis import settings as Settings

        fewer = max(10, int(settings.max_examples * PYTHON_KERNEL_EXAMPLES))
        monkeypatch.setattr(
            request.function, "_hypothesis_internal_use_settings", Settings(settings, max_examples=fewer)
        )
    return implementation


@dataclass
class CliResult:
    """What a ``tracer`` run returned and printed."""

    code: int
    out: str
    err: str


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch):
    """Run ``tracer ARGS`` in-process (like west's ``cmd()``) and capture stdout/stderr."""

    def run(*args: str) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        code = main([str(a) for a in args])
        monkeypatch.undo()
        return CliResult(code, out.getvalue(), err.getvalue())

    return run


@pytest.fixture
def data_dir() -> Path:
    """The test data folder."""
    return DATA


def built_once(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]
) -> Path:
    """``build(folder)`` once per test run, into a temporary folder named ``name``; the folder.

    Under ``pytest -n`` the workers share one: the first to need it builds it into the run's
    common temporary folder while the others wait on a lock (tests only read what was built).
    """
    if not hasattr(request.config, "workerinput"):  # one process: its own temporary folder
        out = tmp_path_factory.mktemp(name)
        build(out)
        return out
    # The workers' temporary folders share a parent that belongs to this run alone.
    out = tmp_path_factory.getbasetemp().parent / name
    with open(out.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / ".built").exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            build(out)
            (out / ".built").touch()
    return out


@pytest.fixture(scope="session")
def firmware_build(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``make -C firmware_snippets all`` once per test run (:func:`built_once`).

    Holds the trc library for cortex-m4/m33/m55 (``<cpu>/libtrc.a``) and the QEMU ELFs
    (``demo/tracer_demo.elf``, ``demo/marker_cost.elf``). Fails when the cross compiler is missing
    (CI installs it: ``.ci/run``).
    """
    import subprocess

    require_tools("arm-none-eabi-gcc", "make")

    def make(out: Path) -> None:
        done = subprocess.run(
            ["make", "-C", str(ROOT / "firmware_snippets"), f"BUILD={out}", "-j2", "all"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    return built_once(request, tmp_path_factory, "firmware", make)


@pytest.fixture(scope="session")
def host_lib(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The trc library built for the host by gcc (``make host``), once per test run."""
    from firmware_host import build_host_lib

    return built_once(request, tmp_path_factory, "host", build_host_lib) / "host" / "libtrc.a"


@pytest.fixture(scope="session")
def qemu_build(firmware_build: Path) -> Path:
    """``firmware_build``, with ``qemu-system-arm`` there to run its demo images."""
    require_tools("qemu-system-arm")
    return firmware_build


@pytest.fixture(scope="session")
def demo_budget() -> dict:
    """The shipped demo budget (``captures/demo_budget.toml``) as plain TOML, read without tracer."""
    return tomllib.loads((ROOT / "captures" / "demo_budget.toml").read_text())


@pytest.fixture(scope="session")
def calibration_models(tmp_path_factory: pytest.TempPathFactory):
    """Six small models compiled once per session by the real Vela, with captures measured from a
    hidden per-operator-type truth (tests/calib_models.py)."""
    from calib_models import Compiled

    return Compiled(tmp_path_factory.mktemp("calibration_models"))


@pytest.fixture(scope="session")
def board(calibration_models, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A calibration file learnt on every model of ``calibration_models`` but
    :data:`calib_models.HELD_OUT` (the one a test then holds against it)."""
    from calib_models import HELD_OUT

    path = tmp_path_factory.mktemp("board") / "board.json"
    others = [n for n in calibration_models.budgets if n != HELD_OUT]
    assert main(["calibrate", *calibration_models.pairs(others), "--save", str(path)]) == 0
    return path
