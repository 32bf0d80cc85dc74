/*
 * Host harness for trc_sampler.c: NPU samples read from a register block in memory (U55 and U85
 * PMU layouts), PC samples from exception frames (basic frame, Armv8-M frame with the callee
 * registers first), the sampler's description, the cost measurement (flagged calibration), and
 * the dithered period. Writes the ITM bytes to argv[1] and prints key=value facts.
 */
#include <stdio.h>
#include <string.h>

#include "trc.h"
#include "trc_sampler.h"

static FILE *g_out;
static uint32_t g_clock = 0xFFFFF000u;

static uint32_t clock_read(void)
{
    g_clock += 0x100u;
    return g_clock;
}

static int file_write(void *ctx, const uint8_t *bytes, uint32_t length)
{
    (void)ctx;
    return fwrite(bytes, 1, length, g_out) == length ? 0 : -1;
}

static uint32_t g_regs[0x2000u / 4u];

int main(int argc, char **argv)
{
    trc_npu_sampler u55;
    trc_npu_sampler u85;
    trc_sample_period period;
    uint32_t basic[8] = {1u, 2u, 3u, 4u, 12u, 0x10000101u, 0x10000400u, 0x01000013u};
    uint32_t extended[18];
    if (argc < 2 || (g_out = fopen(argv[1], "wb")) == NULL) {
        return 2;
    }
    trc_use_writer(file_write, 0);
    trc_set_time(clock_read, 0, 100000000u, TRC_TIME_USER);

    g_regs[TRC_NPU_QREAD / 4u] = 484u;
    g_regs[TRC_NPU_STATUS / 4u] = TRC_NPU_STATUS_RUNNING;
    g_regs[TRC_NPU_QBASE / 4u] = 0x10003000u;
    g_regs[TRC_NPU_QSIZE / 4u] = 1164u;
    g_regs[0x1A0u / 4u] = 0x89ABCDEFu;      /* PMCCNTR low */
    g_regs[0x1A4u / 4u] = 0x1234u;          /* PMCCNTR high (16 bits) */
    for (uint32_t i = 0; i < 8u; i++) {
        g_regs[0x300u / 4u + i] = 100u + i;           /* U55/U65 event counters */
        g_regs[0x1300u / 4u + i] = 200u + i;          /* U85 event counters */
    }
    g_regs[0x11A0u / 4u] = 77u;

    trc_npu_sampler_init(&u55, (uintptr_t)g_regs, 55u, 9u, 1u);  /* 9 counters asked: U55 has 4 */
    trc_npu_sampler_init(&u85, (uintptr_t)g_regs, 85u, 9u, 0u);  /* U85: 8, no cycle counter */
    uint32_t cost = trc_sampler_measure_cost(&u55, 4u);
    trc_sampler_info(TRC_SAMPLER_NPU | TRC_SAMPLER_PC | TRC_SAMPLER_TIMER, 3200u, 1600u, cost);
    (void)trc_npu_sample(&u55);
    g_regs[TRC_NPU_STATUS / 4u] = 0x22u;    /* stopped, IRQ raised, command end reached */
    g_regs[TRC_NPU_QREAD / 4u] = 1164u;
    (void)trc_npu_sample(&u85);
    (void)trc_pc_sample_frame(basic, 0xFFFFFFFDu);
    /* Armv8-M, callee registers stacked first (EXC_RETURN.DCRS = 0): the basic frame follows. */
    memset(extended, 0, sizeof extended);
    memcpy(&extended[10], basic, sizeof basic);
    extended[10u + 6u] = 0x10000888u;
    (void)trc_pc_sample_frame(extended, 0xFFFFFFDDu);

    trc_sample_period_init(&period, 3200u, 1600u, 7u);
    uint32_t lo = 0xFFFFFFFFu, hi = 0u;
    for (uint32_t i = 0; i < 10000u; i++) {
        uint32_t p = trc_sampler_next_period(&period);
        lo = p < lo ? p : lo;
        hi = p > hi ? p : hi;
    }
    printf("cost=%u period_min=%u period_max=%u\n", cost, lo, hi);
    fclose(g_out);
    return 0;
}
