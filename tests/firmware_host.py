"""The trc library built for the host, for the tests that link harness programs with it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRMWARE = ROOT / "firmware_snippets"
HARNESS = Path(__file__).resolve().parent / "firmware_harness"


def run(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command; fail the test with its output if it fails."""
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout}\n{done.stderr}"
    return done


def build_host_lib(out: Path) -> Path:
    """``make -C firmware_snippets host`` into ``out``: the library built by gcc."""
    for tool in ("gcc", "make"):
        assert shutil.which(tool), f"{tool} is not installed (./.ci/run installs it)"
    run(["make", "-C", str(FIRMWARE), f"BUILD={out}", "host"])
    return out / "host" / "libtrc.a"
