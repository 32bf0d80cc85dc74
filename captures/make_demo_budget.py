"""Write ``demo_budget.toml``: the demo network's predicted per-layer cycles from a cost model.

    .venv/bin/python captures/make_demo_budget.py > captures/demo_budget.toml

The prediction comes from the network's shapes (the table below mirrors
``firmware_snippets/demo/net.c``) and instruction counts read off the compiled inner loops of
net.c (``arm-none-eabi-objdump -d``), never from a measured capture. It predicts what the demo
measures on QEMU: SysTick ticks at 32 MHz under ``-icount shift=0``, where one instruction takes
1 ns of emulated time, so ticks = instructions / 31.25.
"""

from __future__ import annotations

TICKS_PER_INSTRUCTION = 32e6 / 1e9  # SysTick 32 MHz, 1 instruction per emulated ns

# name, op, engine, kind, kernel, stride, in (h, w, c), out (h, w, c)  -- as in net.c
LAYERS = [
    ("conv0", "CONV_2D", "npu", "conv", 3, 2, (32, 32, 3), (16, 16, 8)),
    ("dw1", "DEPTHWISE_CONV_2D", "npu", "dw", 3, 1, (16, 16, 8), (16, 16, 8)),
    ("pw2", "CONV_2D", "npu", "conv", 1, 1, (16, 16, 8), (16, 16, 16)),
    ("dw3", "DEPTHWISE_CONV_2D", "npu", "dw", 3, 1, (16, 16, 16), (16, 16, 16)),
    ("pw4", "CONV_2D", "npu", "conv", 1, 1, (16, 16, 16), (16, 16, 16)),
    ("add5", "ADD", "cpu", "add", 0, 0, (16, 16, 16), (16, 16, 16)),
    ("pool6", "MAX_POOL_2D", "cpu", "maxpool", 2, 2, (16, 16, 16), (8, 8, 16)),
    ("conv7", "CONV_2D", "npu", "conv", 3, 2, (8, 8, 16), (4, 4, 32)),
    ("gap8", "AVERAGE_POOL_2D", "cpu", "avgpool", 4, 4, (4, 4, 32), (1, 1, 32)),
    ("fc9", "FULLY_CONNECTED", "cpu", "fc", 0, 0, (1, 1, 32), (1, 1, 10)),
]

# Instructions per loop level, read off the disassembly of net.c (-O2, Cortex-M55):
MAC = 4  # conv / fully connected inner loop: ldrsb, ldrsb, smlabb, le
TAP = 36  # conv: per kernel position, bounds checks, pointer set-up, loop entry and exit
ROW = 10  # per kernel row: bounds check and loop
DW_MAC = 27  # depthwise: one tap (index arithmetic and spilled registers; no inner channel loop)
OUTPUT = 45  # per output element: 64-bit requantize, clamp, store, output loops
ADD = 20  # per element: two loads, add, requantize, clamp, store
POOL = 12  # max pool: per window element (load, compare, select, index)
AVG_IN = 5  # average pool: per input element summed
# Instrumentation inside a layer's span: the end marker (~100 instructions of the library plus
# 15 UART bytes at ~7 instructions each); an NPU layer also emits cache clean/invalidate, NPU job
# begin/end and a PMU snapshot (5 records, 130 bytes) and simulates its PMU (~400).
MARKER = 100 + 15 * 7
NPU_EXTRA = 5 * 100 + 130 * 7 + 400


def instructions(kind: str, k: int, inp: tuple[int, int, int], out: tuple[int, int, int]) -> int:
    """Modelled instructions of one layer (without instrumentation)."""
    outputs = out[0] * out[1] * out[2]
    if kind == "conv":  # padded positions are counted as full ones: an upper bound at the edges
        return outputs * (k * k * (inp[2] * MAC + TAP) + k * ROW + OUTPUT)
    if kind == "dw":
        return outputs * (k * k * DW_MAC + k * ROW + OUTPUT)
    if kind == "fc":
        return outputs * (inp[2] * MAC + OUTPUT)
    if kind == "add":
        return outputs * ADD
    if kind == "maxpool":
        return outputs * (k * k * POOL + OUTPUT)
    return inp[0] * inp[1] * inp[2] * AVG_IN + outputs * OUTPUT


def main() -> None:
    """Print the budget TOML."""
    print("# Predicted budget of the tracer demo network (firmware_snippets/demo), for tracer's TOML budget format.")
    print("# Made by captures/make_demo_budget.py from a cost model of the network: shapes from net.c and")
    print("# instruction counts read off its compiled inner loops, NOT from the measured capture.")
    print("#   conv: 4 instr/MAC + 36 per kernel position + 10 per kernel row + 45 per output; depthwise:")
    print("#   27 per tap + 10 per kernel row + 45 per output; fully connected: 4 per MAC + 45 per output;")
    print("#   add: 20 per element; max pool: 12 per window element + 45 per output; average pool: 5 per")
    print("#   input + 45 per output; instrumentation inside the span: 205 per layer, +1810 on NPU layers.")
    print("# Re-make: .venv/bin/python captures/make_demo_budget.py > captures/demo_budget.toml")
    print("# Cycles are QEMU demo cycles: SysTick ticks at 32 MHz under -icount shift=0 = instructions / 31.25.")
    print("# sram_bytes per layer: the activations it reads and writes (input(s) + output).")
    print()
    print("[model]")
    print('name = "tracer-demo-int8-10layer"')
    print("clock_hz = 32000000")
    print("arena_bytes = 13312  # the arena plan's peak (net.c); the arena itself is 16384 bytes")
    print("sram_bytes = 13312")
    print("tolerance_pct = 15  # the cost model's own accuracy: a static instruction count, not a simulation")
    for index, (name, op, engine, kind, k, _stride, inp, out) in enumerate(LAYERS):
        count = instructions(kind, k, inp, out) + MARKER + (NPU_EXTRA if engine == "npu" else 0)
        sram = inp[0] * inp[1] * inp[2] * (2 if kind == "add" else 1) + out[0] * out[1] * out[2]
        print()
        print("[[layer]]")
        print(f"index = {index}")
        print(f'name = "{name}"')
        print(f'op = "{op}"')
        print(f"cycles = {round(count * TICKS_PER_INSTRUCTION)}  # {count} instructions")
        print(f'engine = "{engine}"')
        print(f"sram_bytes = {sram}")


if __name__ == "__main__":
    main()
