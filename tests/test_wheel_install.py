"""A wheel install runs the QEMU demo: the firmware sources travel in the package (issue 16).

Builds tracer's wheel (``pip wheel --no-build-isolation``: no download), installs it with ``--no-deps``
into a fresh venv in a temporary folder, and runs ``tracer demo --inferences 2`` there, from outside
the checkout, with HOME and the cache in the temporary folder. tracer's dependencies (numpy, textual,
flatbuffers ...) are not downloaded again: the fresh venv sees the test venv's site-packages through a
``.pth`` line, after its own (the editable install's hook is a ``.pth`` *file* there, which such a
line does not run, so the checkout stays out of reach: the test checks ``tracer.__file__``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from conftest import require_tools

# One worker builds the wheel for both tests (pytest -n auto --dist loadgroup keeps a group together).
pytestmark = [pytest.mark.qemu, pytest.mark.xdist_group("wheel")]
ROOT = Path(__file__).resolve().parent.parent
FIRMWARE = ROOT / "firmware_snippets"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the checkout's tracked and new files: setuptools builds in
    ``build/`` beside the sources, where a stale file (or a second build running in parallel)
    would otherwise end up in the wheel."""
    out = tmp_path_factory.mktemp("wheel")
    source = tmp_path_factory.mktemp("source") / "tracer"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", "*.so", "data"),
    )
    shutil.copytree(ROOT / "tests" / "data", source / "tests" / "data")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (found,) = out.glob("tracer-*.whl")
    return found


def test_wheel_holds_every_firmware_source(wheel: Path) -> None:
    """Every file of firmware_snippets (but build output and Python's bytecode cache, which a test
    that imports the model script may have written) is in the wheel, under tracer/firmware."""
    sources = {
        p.relative_to(FIRMWARE).as_posix()
        for p in FIRMWARE.rglob("*")
        if p.is_file() and not {"build", "__pycache__"} & set(p.relative_to(FIRMWARE).parts)
    }
    with zipfile.ZipFile(wheel) as zf:
        packaged = {n[len("tracer/firmware/") :] for n in zf.namelist() if n.startswith("tracer/firmware/")}
    assert sources and packaged == sources


def test_installed_wheel_runs_the_demo_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    require_tools("qemu-system-arm", "arm-none-eabi-gcc", "make")
    venv = tmp_path / "venv"
    # No pip of its own (ensurepip costs seconds): this pip installs into it (``pip --python``).
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (site / "zz_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("TRACER_FIRMWARE_DIR", "PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    where = subprocess.run(
        [str(python), "-c", "import tracer; print(tracer.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(venv), where
    demo = subprocess.run(
        [str(venv / "bin" / "tracer"), "demo", "--inferences", "2", "-o", str(work / "demo.trace")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert "inferences  2 (2 complete, 0 incomplete)" in demo.stdout
    assert list((tmp_path / "cache" / "tracer").glob("firmware-build-*/demo/tracer_demo.elf"))
    assert (work / "demo.trace").stat().st_size > 0


def test_firmware_dir_override_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TRACER_FIRMWARE_DIR without a Makefile: exit 4 with the variable named (no traceback)."""
    from tracer.cli.main import main

    monkeypatch.setenv("TRACER_FIRMWARE_DIR", str(tmp_path))
    require_tools("qemu-system-arm", "arm-none-eabi-gcc", "make")
    assert main(["demo", "--inferences", "1", "-o", str(tmp_path / "x.trace")]) == 4
