"""``tracer list`` works anywhere: with or without probe libraries, drivers or attached hardware."""

from __future__ import annotations

import json
import sys

import pytest


def test_list_runs_and_says_what_it_found(run_cli) -> None:
    done = run_cli("list")
    assert done.code == 0, done.err
    for title in ("J-Link probes", "pyOCD probes", "serial ports"):
        assert title in done.out


def test_list_json_shape(run_cli) -> None:
    done = run_cli("list", "--format", "json")
    assert done.code == 0
    found = json.loads(done.out)
    assert set(found) == {"jlink", "pyocd", "serial"}
    for backend in found.values():
        assert isinstance(backend["available"], bool) and isinstance(backend["message"], str)
    for port in found["serial"]["ports"]:
        assert port["url"].startswith("serial://")


def hide_probe_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    """A None entry in sys.modules makes ``import pylink`` raise ImportError, as when not installed."""
    for name in [m for m in sys.modules if m == "pylink" or m.startswith(("pylink.", "pyocd"))]:
        monkeypatch.delitem(sys.modules, name)
    for name in ("pylink", "pyocd", "pyocd.core", "pyocd.core.helpers"):
        monkeypatch.setitem(sys.modules, name, None)


def test_list_without_probe_libraries(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:
    hide_probe_libraries(monkeypatch)  # run_cli undoes the patches when it returns
    done = run_cli("list", "--format", "json")
    assert done.code == 0, done.err
    found = json.loads(done.out)
    assert found["jlink"] == {
        "available": False,
        "message": "pylink-square is not installed: pip install 'pylink-square>=1.2,<2' (tracer's jlink extra)",
        "probes": [],
        "ports": [],
    }
    assert (
        not found["pyocd"]["available"]
        and "pip install 'pyocd>=0.36,<1' (tracer's pyocd extra)" in found["pyocd"]["message"]
    )
    hide_probe_libraries(monkeypatch)
    text = run_cli("list")
    assert text.code == 0 and "J-Link probes: not available (pylink-square is not installed" in text.out


def test_list_with_attached_probes(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attached probes are shown with a ready-to-use URL (backends replaced by stand-ins)."""
    from tracer.cli import cmd_list

    monkeypatch.setitem(
        cmd_list.BACKENDS,
        "jlink",
        lambda: {
            "probes": [
                {
                    "serial": 600012345,
                    "product": "J-Link PLUS",
                    "url": "jlink://600012345?device=DEVICE",
                    "description": "J-Link PLUS (serial 600012345)",
                }
            ]
        },
    )
    done = run_cli("list")
    assert "jlink://600012345?device=DEVICE" in done.out and done.code == 0
