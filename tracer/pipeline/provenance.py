"""Where a capture came from, as labels: build, board, clocks, tools, git revision.

``tracer record`` writes what it knows into the capture header (:class:`CaptureMetadata`); the
git revision of the checkout it was run from is added here (:func:`git_revision`). When many
captures are compared or ingested, :func:`capture_labels` turns a header into flat ``key: value``
labels, the same keys for every source (``docs/fleet.md`` lists them).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

from tracer.capture.metadata import CaptureMetadata

GIT_TIMEOUT_S = 5.0


def git_revision(where: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """The git revision of the checkout ``where`` is in (default: the working directory).

    Returns:
        ``{"git_revision": sha, "git_dirty": bool}``, or None outside a checkout or without git.
    """
    folder = Path(where) if where is not None else Path.cwd()
    if folder.is_file():
        folder = folder.parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    revision = git("rev-parse", "HEAD")
    if not revision:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"git_revision": revision, "git_dirty": bool(status)}


def capture_labels(meta: CaptureMetadata) -> dict[str, str]:
    """Labels of a capture from its header: the keys that are known, as strings.

    Keys: ``source``, ``board``, ``elf_build_id``, ``firmware_hash``, ``cpu_hz``, ``swo_hz``,
    ``tool``, ``created``, ``git_revision``, ``git_dirty``, ``scenario``, ``slow_layer`` and
    ``slow_pct`` (the QEMU demo's), and whatever a ``labels`` object in the header holds.
    """
    extra = meta.extra
    labels: dict[str, Any] = {
        "source": meta.source,
        "board": board(meta),
        "elf_build_id": meta.elf_build_id,
        "firmware_hash": meta.firmware_hash,
        "cpu_hz": meta.cpu_hz,
        "swo_hz": meta.swo_hz,
        "tool": meta.tool,
        "created": meta.created,
        "git_revision": extra.get("git_revision"),
        "git_dirty": extra.get("git_dirty"),
    }
    launcher = extra.get("launcher")
    if isinstance(launcher, dict):
        for key in ("scenario", "slow_layer", "slow_pct"):
            if launcher.get(key) is not None:
                labels[key] = launcher[key]
    own = extra.get("labels")
    if isinstance(own, dict):
        labels.update({str(k): v for k, v in own.items()})
    return {k: _text(v) for k, v in labels.items() if v not in (None, "")}


def board(meta: CaptureMetadata) -> str | None:
    """The board or part the capture was recorded on, when the header says."""
    extra = meta.extra
    for key in ("board", "device", "target"):
        if isinstance(extra.get(key), str) and extra[key]:
            return str(extra[key])
    launcher = extra.get("launcher")
    if isinstance(launcher, dict) and isinstance(launcher.get("machine"), str):
        return f"qemu {launcher['machine']}"
    if launcher == "fvp" and isinstance(extra.get("fvp_command"), str):
        words = shlex.split(extra["fvp_command"])
        return Path(words[0]).name if words else None
    return None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
