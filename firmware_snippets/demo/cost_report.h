/* What the cost-measurement firmware (cost.c, sampler_cost.c) shares: a transport that writes
 * nowhere (the library's own cost) and the "COST <name> <unit>=<n> ticks=<t>" line on port 0. */
#ifndef DEMO_COST_REPORT_H
#define DEMO_COST_REPORT_H

#include "board.h"
#include "trc.h"

static inline int cost_null_write(void *ctx, const uint8_t *bytes, uint32_t length)
{
    (void)ctx;
    (void)bytes;
    (void)length;
    return 0;
}

/* Prints through the UART transport (and leaves it selected). */
static inline void cost_report(const char *name, const char *unit, uint32_t count, uint32_t ticks)
{
    trc_use_writer(uart_write, 0);
    trc_print("COST ");
    trc_print(name);
    trc_print(" ");
    trc_print(unit);
    trc_print("=");
    trc_print_u32(count);
    trc_print(" ticks=");
    trc_print_u32(ticks);
    trc_print("\n");
}

#endif
