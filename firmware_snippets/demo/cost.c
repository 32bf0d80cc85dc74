/*
 * Marker cost on QEMU mps3-an547: times PAIRS layer begin/end pairs with
 *   uart  - the software encoder writing to the CMSDK UART (what the demo uses)
 *   null  - the software encoder writing nowhere (the library's own cost)
 *   itm   - the ITM stimulus-port transport, FIFO-ready poll skipped (QEMU has no ITM and
 *           ignores the writes: this is the instruction cost of the ITM path alone)
 *   loop  - the empty loop, to subtract
 * all draining on emit (each marker sends its record), then with a deferred drain:
 *   deferred - the markers alone (records wait in the ring; drained between batches, untimed)
 *   flush    - the drain of those records to the null writer, per pair (trc_flush, timed alone)
 * and prints "COST <transport> pairs=<n> ticks=<t>" on port 0. Built with TRC_ITM_NO_WAIT.
 * Under -icount shift=0 one instruction takes 1 ns and SysTick counts 32 MHz, so
 * instructions = ticks * 31.25; under shift=5 one instruction is 1.024 ticks.
 */
#include "board.h"
#include "cost_report.h"
#include "trc.h"

#define PAIRS 2010u /* a multiple of BATCH */

static uint32_t time_pairs(uint32_t pairs, int markers)
{
    uint32_t start = trc_time_systick_now32();
    for (uint32_t i = 0; i < pairs; i++) {
        if (markers) {
            (void)trc_layer_begin(TRC_LAYER_CALIBRATION, TRC_ENGINE_CPU);
            (void)trc_layer_end(TRC_LAYER_CALIBRATION);
        } else {
            __asm volatile("" ::: "memory");
        }
    }
    return trc_time_systick_now32() - start;
}

#define BATCH 30u /* pairs whose records fit the ring (30 bytes a pair) */

/* Deferred drain: time the markers and, separately, the flushes that send their records. */
static void time_deferred(uint32_t pairs, uint32_t *marker_ticks, uint32_t *flush_ticks)
{
    *marker_ticks = 0u;
    *flush_ticks = 0u;
    for (uint32_t done = 0; done < pairs; done += BATCH) {
        *marker_ticks += time_pairs(BATCH, 1);
        uint32_t start = trc_time_systick_now32();
        (void)trc_flush();
        *flush_ticks += trc_time_systick_now32() - start;
    }
}

static void report(const char *name, uint32_t ticks) { cost_report(name, "pairs", PAIRS, ticks); }

int main(void)
{
    trc_use_writer(uart_write, 0);
    trc_time_systick_init(BOARD_CPU_HZ);

    report("loop", time_pairs(PAIRS, 0));

    trc_use_writer(cost_null_write, 0);
    uint32_t ticks = time_pairs(PAIRS, 1);
    report("null", ticks);

    trc_use_writer(uart_write, 0);
    report("uart", time_pairs(PAIRS, 1));

    (void)trc_use_itm();
    ticks = time_pairs(PAIRS, 1);
    report("itm", ticks);

    uint32_t flush_ticks;
    trc_use_writer(cost_null_write, 0);
    trc_set_drain(TRC_DRAIN_DEFERRED);
    time_deferred(PAIRS, &ticks, &flush_ticks);
    trc_set_drain(TRC_DRAIN_ON_EMIT);
    report("deferred", ticks);
    report("flush", flush_ticks);

    trc_print("EXIT 0\n");
    return 0;
}
