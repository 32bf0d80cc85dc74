"""The compiled kernels (the C extension ``tracer._kernels``), or the pure-Python reference.

Four hot loops exist twice: as C in ``tracer._kernels`` (built when tracer is installed) and as
the Python reference in their own modules (:mod:`tracer.decode.tpiu_kernel`,
:mod:`tracer.decode.itm_kernel`, :mod:`tracer.telemetry.kernel`, :mod:`tracer.export.packets_text`).
Each module builds its C kernel object with its own tables and constants (one definition for
both implementations), keeps the Python function as ``<name>_python`` and the C one as
``<name>_native`` (None when not available), and binds ``<name>`` to the C one when it exists.
Both give identical results (``tests/test_kernels_differential.py``).

Without the extension (no C compiler at install time), or with ``TRACER_PURE_PYTHON=1``, the
Python reference runs: correct, much slower. Without the extension tracer says so once on stderr.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from typing import Any

PURE_PYTHON_ENV = "TRACER_PURE_PYTHON"

# (module, function) of every kernel that has a compiled twin.
KERNELS: tuple[tuple[str, str], ...] = (
    ("tracer.decode.tpiu_kernel", "deframe"),
    ("tracer.decode.itm_kernel", "decode_itm"),
    ("tracer.telemetry.kernel", "decode_records"),
    ("tracer.telemetry.kernel", "finish_stream"),
    ("tracer.telemetry.kernel", "gather_events"),
    ("tracer.export.packets_text", "format_packets"),
)


@functools.cache
def _extension() -> tuple[Any, str]:
    """The extension module and, if it cannot be used, why."""
    if os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return None, ""
    try:
        return importlib.import_module("tracer._kernels"), ""
    except ImportError as exc:
        return None, f"tracer._kernels is not built ({exc})"


@functools.cache
def _notice(reason: str) -> None:
    """Say once per process (and reason) that the pure-Python kernels run."""
    print(
        f"tracer: {reason}; using the pure-Python kernels (correct, much slower). "
        "Reinstall with a C compiler present to build them: pip install .",
        file=sys.stderr,
    )


def compiled(kernel: str, constants: dict[str, Any]) -> Any:
    """Build the C kernel object ``kernel`` with a module's ``constants``, or return None.

    Args:
        kernel: The type's name in ``tracer._kernels`` (``TpiuKernel``, ``ItmKernel``,
            ``TelemetryKernel``, ``PacketFormatter``).
        constants: The calling module's tables and constants by name (its ``globals()``).
    """
    module, reason = _extension()
    if module is None:
        if reason:
            _notice(reason)
        return None
    try:
        return getattr(module, kernel)(constants)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        # Built from other sources than these Python modules (a stale in-place build).
        _notice(f"tracer._kernels does not match this tracer ({exc})")
        return None


def active() -> dict[str, str]:
    """Which implementation each kernel uses now: ``"native"`` or ``"python"`` (tests, the wheel smoke test)."""
    out = {}
    for module_name, name in KERNELS:
        module = importlib.import_module(module_name)
        native = getattr(module, f"{name}_native")
        out[f"{module_name}.{name}"] = "native" if native is not None and getattr(module, name) is native else "python"
    return out
