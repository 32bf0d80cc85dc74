/*
 * Sampler cost on QEMU mps3-an547: times ROUNDS calls of
 *   npu   - trc_npu_sample(): QREAD, STATUS, QBASE, QSIZE, PMCCNTR and 4 event counters
 *           read from a register block in RAM (QEMU has no NPU; the loads are the same)
 *   pc    - trc_pc_sample_frame() from an exception frame
 *   both  - what the demo's timer handler does per interrupt: both
 * through three transports (null: the software encoder writing nowhere, the library alone;
 * uart: the CMSDK UART, as the demo; itm: the stimulus ports, FIFO poll skipped as in
 * marker_cost.elf) minus the empty loop, and prints "COST <what>_<transport> rounds=<n>
 * ticks=<t>" on port 0. Under -icount shift=0 instructions = ticks * 31.25. The exception entry
 * and return of a real interrupt (and the handler trampoline's 5 instructions) are not included.
 */
#include "board.h"
#include "cost_report.h"
#include "trc.h"
#include "trc_sampler.h"

#define ROUNDS 2000u

static uint32_t g_regs[0x400u / 4u];
static trc_npu_sampler g_npu;
static const uint32_t g_frame[8] = {0u, 0u, 0u, 0u, 0u, 0u, 0x10000400u, 0x01000000u};

enum what { LOOP, NPU, PC, BOTH };

static uint32_t time_rounds(enum what what)
{
    uint32_t start = trc_time_systick_now32();
    for (uint32_t i = 0; i < ROUNDS; i++) {
        if (what == NPU || what == BOTH) {
            (void)trc_npu_sample(&g_npu);
        }
        if (what == PC || what == BOTH) {
            (void)trc_pc_sample_frame(g_frame, 0xFFFFFFFDu);
        }
        __asm volatile("" ::: "memory");
    }
    return trc_time_systick_now32() - start;
}

static void report(const char *name, uint32_t ticks) { cost_report(name, "rounds", ROUNDS, ticks); }

static void measure(const char *transport, const char *const names[3])
{
    static const enum what whats[3] = {NPU, PC, BOTH};
    for (uint32_t k = 0; k < 3u; k++) {
        if (transport[0] == 'n') {
            trc_use_writer(cost_null_write, 0);
        } else if (transport[0] == 'u') {
            trc_use_writer(uart_write, 0);
        } else {
            (void)trc_use_itm();
        }
        uint32_t ticks = time_rounds(whats[k]);
        report(names[k], ticks);
    }
}

int main(void)
{
    static const char *const null_names[3] = {"npu_null", "pc_null", "both_null"};
    static const char *const uart_names[3] = {"npu_uart", "pc_uart", "both_uart"};
    static const char *const itm_names[3] = {"npu_itm", "pc_itm", "both_itm"};
    trc_use_writer(uart_write, 0);
    trc_time_systick_init(BOARD_CPU_HZ);
    g_regs[TRC_NPU_QREAD / 4u] = 484u;
    g_regs[TRC_NPU_STATUS / 4u] = TRC_NPU_STATUS_RUNNING;
    g_regs[TRC_NPU_QSIZE / 4u] = 1164u;
    trc_npu_sampler_init(&g_npu, (uintptr_t)g_regs, 55u, 4u, 1u);

    report("loop", time_rounds(LOOP));
    measure("null", null_names);
    measure("uart", uart_names);
    measure("itm", itm_names);
    trc_print("EXIT 0\n");
    return 0;
}
