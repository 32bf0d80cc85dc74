"""Cortex-M exception numbers as the architecture names them (ITM exception trace numbers)."""

from __future__ import annotations

# Armv7-M / Armv8-M exception numbers 1..15; 7 is SecureFault on Armv8-M with the Security
# Extension, reserved elsewhere. External interrupt n is exception 16 + n.
ARCHITECTURAL: dict[int, str] = {
    1: "Reset",
    2: "NMI",
    3: "HardFault",
    4: "MemManage",
    5: "BusFault",
    6: "UsageFault",
    7: "SecureFault",
    11: "SVCall",
    12: "DebugMonitor",
    14: "PendSV",
    15: "SysTick",
}

FIRST_IRQ = 16


def exception_label(number: int) -> str:
    """The architecture's name of an exception: ``HardFault``, ``SysTick``, ``IRQ3`` ...

    Args:
        number: The exception number as traced (IRQ0 is 16).
    """
    if number >= FIRST_IRQ:
        return f"IRQ{number - FIRST_IRQ}"
    if number == 0:
        return "Thread"
    return ARCHITECTURAL.get(number, f"Reserved{number}")
