"""``tracer list``: the debug probes and serial ports attached to this machine."""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

HELP = "list attached J-Link and pyOCD probes and serial ports"
DESCRIPTION = """\
List what tracer can record from on this machine: SEGGER J-Link probes (through pylink-square and
the J-Link software), CMSIS-DAP, ST-Link and other probes pyOCD knows, and serial ports (USB-UARTs
on the SWO pin, board consoles). Works anywhere: a backend whose library or driver is missing is
reported as unavailable, with what to install, and the command still exits 0.

Each entry shows the source URL to give to tracer record / tracer live.

examples:
  tracer list
  tracer list --format json | jq '.pyocd.probes[].unique_id'
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of ``tracer list``."""
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")


def run(args: argparse.Namespace) -> int:
    """Look for probes and ports; print what was found and what could not be looked at."""
    from tracer.cli.output import open_output

    found = {name: _backend(probe) for name, probe in BACKENDS.items()}
    with open_output(None) as out:
        if args.format == "json":
            out.write(json.dumps(found, indent=2) + "\n")
            return 0
        for name, result in found.items():
            title = TITLES[name]
            if not result["available"]:
                out.write(f"{title}: not available ({result['message']})\n")
                continue
            items = result["probes"] if name != "serial" else result["ports"]
            if not items:
                out.write(f"{title}: none attached\n")
                continue
            out.write(f"{title}:\n")
            for item in items:
                out.write(f"  {item['url']:<48} {item['description']}\n")
    return 0


# -- backends ------------------------------------------------------------------------------------
def _backend(probe: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return {"available": True, "message": "", **probe()}
    except BackendMissing as exc:
        return {"available": False, "message": str(exc), "probes": [], "ports": []}


class BackendMissing(Exception):
    """A probe library or driver is not installed."""


@contextmanager
def _quiet(logger: str) -> Iterator[None]:
    """Silence a library's logging while it enumerates (it warns about missing USB backends)."""
    log = logging.getLogger(logger)
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


def list_jlink() -> dict[str, Any]:
    """J-Link probes seen by the SEGGER software, through pylink."""
    try:
        import pylink
    except ImportError:
        raise BackendMissing(
            "pylink-square is not installed: pip install 'pylink-square>=1.2,<2' (tracer's jlink extra)"
        ) from None
    try:
        jlink = pylink.JLink()
    except TypeError:
        raise BackendMissing("the SEGGER J-Link software (JLinkARM library) is not installed") from None
    except Exception as exc:  # noqa: BLE001 - any DLL loading failure means "not available"
        raise BackendMissing(f"the J-Link library could not be loaded: {exc}") from None
    try:
        emulators = jlink.connected_emulators()
    except pylink.errors.JLinkException as exc:
        raise BackendMissing(f"the J-Link software could not list probes: {exc}") from None
    probes = []
    for info in emulators:
        serial = int(info.SerialNumber)
        product = bytes(info.acProduct).split(b"\0", 1)[0].decode("ascii", "replace") or "J-Link"
        probes.append(
            {
                "serial": serial,
                "product": product,
                "url": f"jlink://{serial}?device=DEVICE",
                "description": f"{product} (serial {serial})",
            }
        )
    return {"probes": probes}


def list_pyocd() -> dict[str, Any]:
    """Probes pyOCD can open (CMSIS-DAP v1/v2, ST-Link, J-Link through pylink ...)."""
    try:
        from pyocd.core.helpers import ConnectHelper
    except ImportError:
        raise BackendMissing("pyOCD is not installed: pip install 'pyocd>=0.36,<1' (tracer's pyocd extra)") from None
    with _quiet("pyocd"):
        try:
            found = ConnectHelper.get_all_connected_probes(blocking=False, print_wait_message=False)
        except Exception as exc:  # noqa: BLE001 - USB stacks fail in many ways; report, do not crash
            raise BackendMissing(f"pyOCD could not enumerate probes: {exc}") from None
    probes = []
    for probe in found:
        uid = str(probe.unique_id)
        description = f"{probe.vendor_name} {probe.product_name}".strip() or str(probe.description)
        probes.append(
            {
                "unique_id": uid,
                "vendor": probe.vendor_name,
                "product": probe.product_name,
                "url": f"pyocd://{uid}?target=TARGET",
                "description": description,
            }
        )
    return {"probes": probes}


def list_serial() -> dict[str, Any]:
    """Serial ports (pyserial)."""
    try:
        from serial.tools import list_ports
    except ImportError:  # pragma: no cover - pyserial is a core dependency
        raise BackendMissing("pyserial is not installed: pip install pyserial") from None
    ports = []
    for port in sorted(list_ports.comports(), key=lambda p: p.device):
        ident = f" [{port.vid:04x}:{port.pid:04x}]" if port.vid is not None and port.pid is not None else ""
        ports.append(
            {
                "device": port.device,
                "url": f"serial://{port.device}?baud=115200",
                "description": f"{port.description or port.device}{ident}",
                "hwid": port.hwid,
            }
        )
    return {"ports": ports}


BACKENDS: dict[str, Callable[[], dict[str, Any]]] = {"jlink": list_jlink, "pyocd": list_pyocd, "serial": list_serial}
TITLES = {"jlink": "J-Link probes", "pyocd": "pyOCD probes", "serial": "serial ports"}
