"""Where a capture came from: the git revision ``tracer record`` writes, and the labels read back."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tracer.capture.metadata import CaptureMetadata
from tracer.capture.reader import open_capture
from tracer.pipeline.provenance import capture_labels, git_revision


def git(folder: Path, *args: str) -> str:
    """Run git in ``folder`` (a throwaway identity) and return its output."""
    done = subprocess.run(
        ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A git checkout with one commit."""
    folder = tmp_path / "firmware"
    folder.mkdir()
    git(folder, "init", "-q")
    (folder / "main.c").write_text("int main(void) { return 0; }\n")
    git(folder, "add", "main.c")
    git(folder, "commit", "-q", "-m", "first")
    return folder


def test_git_revision_of_a_checkout(checkout: Path, tmp_path: Path) -> None:
    """The commit and whether tracked files changed; None outside a checkout."""
    head = git(checkout, "rev-parse", "HEAD")
    assert git_revision(checkout) == {"git_revision": head, "git_dirty": False}
    assert git_revision(checkout / "main.c") == {"git_revision": head, "git_dirty": False}  # a file: its folder
    (checkout / "main.c").write_text("int main(void) { return 1; }\n")
    assert git_revision(checkout) == {"git_revision": head, "git_dirty": True}
    outside = tmp_path / "plain"
    outside.mkdir()
    assert git_revision(outside) is None


def test_record_writes_the_revision_of_the_checkout(checkout: Path, run_cli, monkeypatch, data_dir: Path) -> None:
    """tracer record run inside a checkout puts its revision in the capture header; ingest reads it
    back as labels."""
    raw = data_dir / "corpus" / "sigrok_stm32f105" / "trace_example_swo_tpiu.bin"
    monkeypatch.chdir(checkout)
    out = checkout.parent / "run.trace"
    done = run_cli("record", f"file://{raw}", "-o", out)
    assert done.code == 0, done.err
    with open_capture(out) as reader:
        meta = reader.metadata
    assert meta.extra["git_revision"] == git(checkout, "rev-parse", "HEAD")
    labels = capture_labels(meta)
    assert labels["git_revision"] == meta.extra["git_revision"] and labels["git_dirty"] == "false"


def test_labels_from_headers_of_every_source() -> None:
    """The board comes from whichever key the source wrote; a header's labels object joins them."""
    jlink = CaptureMetadata(
        source="jlink://1?device=STM32H743ZI",
        cpu_hz=480_000_000,
        swo_hz=2_000_000,
        elf_build_id="abc",
        tool="tracer 0.1.0",
        extra={"device": "STM32H743ZI"},
    )
    assert capture_labels(jlink) == {
        "source": "jlink://1?device=STM32H743ZI",
        "board": "STM32H743ZI",
        "elf_build_id": "abc",
        "cpu_hz": "480000000",
        "swo_hz": "2000000",
        "tool": "tracer 0.1.0",
    }
    qemu = CaptureMetadata(
        extra={
            "launcher": {"machine": "mps3-an547", "scenario": "clean", "slow_layer": "pw4", "slow_pct": 3.0},
            "labels": {"build": 42},
        }
    )
    assert capture_labels(qemu) == {
        "board": "qemu mps3-an547",
        "scenario": "clean",
        "slow_layer": "pw4",
        "slow_pct": "3.0",
        "build": "42",
    }
    fvp = CaptureMetadata(extra={"launcher": "fvp", "fvp_command": "/opt/FVP_Corstone_SSE-300_Ethos-U55 -a app.axf"})
    assert capture_labels(fvp)["board"] == "FVP_Corstone_SSE-300_Ethos-U55"
