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


def link_harness(host_lib: Path, exe: Path, *sources: Path, include: tuple[Path, ...] = ()) -> Path:
    """Compile ``sources`` with gcc (C99, every warning an error) and link them with ``host_lib``."""
    flags = [
        "-std=c99",
        "-O2",
        "-Wall",
        "-Wextra",
        "-Werror",
        f"-I{FIRMWARE / 'include'}",
        *(f"-I{i}" for i in include),
    ]
    run(["gcc", *flags, *(str(s) for s in sources), str(host_lib), "-o", str(exe)])
    return exe


def printed_facts(stdout: str) -> dict[str, str]:
    """The ``key=value`` facts a harness printed."""
    return dict(token.partition("=")[::2] for token in stdout.split())
