/*
 * Sampling from a periodic interrupt: NPU_SAMPLE, PC_SAMPLE and SAMPLER_INFO records
 * (trc_sampler.h; wire format in firmware_snippets/README.md).
 */
#include "trc_sampler.h"

#define TRC_SAMPLER_REG(base, off) (*(volatile const uint32_t *)((base) + (off)))
#define TRC_SAMPLER_PMCCNTR_LO 0x1A0u
#define TRC_SAMPLER_PMCCNTR_HI 0x1A4u
#define TRC_SAMPLER_PMEVCNTR 0x300u
#define TRC_SAMPLER_U85_PMU 0x1000u
#define TRC_FRAME_PC 6u            /* r0, r1, r2, r3, r12, lr, pc, xpsr */
#define TRC_FRAME_XPSR 7u
#define TRC_EXC_RETURN_DCRS (1u << 5) /* Armv8-M: 0 = callee registers stacked first (10 words) */
#define TRC_ADDITIONAL_CONTEXT_WORDS 10u

static uint32_t g_trc_sample_flags; /* TRC_SAMPLE_CALIBRATION while measuring */

void trc_npu_sampler_init(trc_npu_sampler *sampler, uintptr_t npu_base, uint32_t npu, uint32_t counters,
                          uint32_t cycles)
{
    uint32_t most = npu == 85u ? 8u : 4u;
    sampler->npu_base = npu_base;
    sampler->npu = npu;
    sampler->counters = counters > most ? most : counters;
    sampler->cycles = cycles ? 1u : 0u;
}

uint32_t trc_npu_sample(const trc_npu_sampler *sampler)
{
    uint32_t w[7u + 8u];
    uintptr_t base = sampler->npu_base;
    uint32_t count = 6u;
    /* QREAD first: it moves fastest. */
    w[1] = TRC_SAMPLER_REG(base, TRC_NPU_QREAD);
    w[2] = TRC_SAMPLER_REG(base, TRC_NPU_STATUS);
    w[3] = TRC_SAMPLER_REG(base, TRC_NPU_QBASE);
    w[4] = TRC_SAMPLER_REG(base, TRC_NPU_QSIZE);
    w[5] = sampler->counters | g_trc_sample_flags;
    uintptr_t pmu = base + (sampler->npu == 85u ? TRC_SAMPLER_U85_PMU : 0u);
    /* The PMU is read here rather than by trc_ethosu_pmu_read(): in an interrupt taken thousands
     * of times a second, the ~50 instructions of that call and its copy matter. */
    if (sampler->cycles) {
        uint32_t hi;
        uint32_t lo;
        do { /* the 48-bit counter is read in two halves */
            hi = TRC_SAMPLER_REG(pmu, TRC_SAMPLER_PMCCNTR_HI);
            lo = TRC_SAMPLER_REG(pmu, TRC_SAMPLER_PMCCNTR_LO);
        } while (hi != TRC_SAMPLER_REG(pmu, TRC_SAMPLER_PMCCNTR_HI));
        w[5] |= TRC_NPU_SAMPLE_CYCLES | (hi << 16);
        w[count++] = lo;
    }
    for (uint32_t i = 0; i < sampler->counters; i++) {
        w[count++] = TRC_SAMPLER_REG(pmu, TRC_SAMPLER_PMEVCNTR + 4u * i);
    }
    return trc_record(TRC_REC_NPU_SAMPLE, w, count);
}

uint32_t trc_pc_sample(uint32_t pc, uint32_t exception)
{
    uint32_t w[3];
    w[1] = pc;
    w[2] = (exception & 0x1FFu) | (g_trc_sample_flags != 0u ? TRC_PC_SAMPLE_CALIBRATION : 0u);
    return trc_record(TRC_REC_PC_SAMPLE, w, 3u);
}

uint32_t trc_pc_sample_frame(const uint32_t *frame, uint32_t exc_return)
{
    if ((exc_return & TRC_EXC_RETURN_DCRS) == 0u) {
        frame += TRC_ADDITIONAL_CONTEXT_WORDS; /* integrity signature, reserved, r4-r11 come first */
    }
    return trc_pc_sample(frame[TRC_FRAME_PC], frame[TRC_FRAME_XPSR]);
}

void trc_sampler_info(uint32_t what, uint32_t period_ticks, uint32_t dither_ticks, uint32_t cost_q4)
{
    uint32_t w[5];
    w[1] = what;
    w[2] = period_ticks;
    w[3] = dither_ticks;
    w[4] = cost_q4;
    (void)trc_record(TRC_REC_SAMPLER_INFO, w, 5u);
}

/* One interrupt's work; returns the time its first record was stamped with. */
static uint32_t trc_sampler_round(const trc_npu_sampler *npu, const uint32_t *frame)
{
    uint32_t t = trc_pc_sample_frame(frame, 0xFFFFFFFDu);
    if (npu != 0) {
        (void)trc_npu_sample(npu);
    }
    return t;
}

uint32_t trc_sampler_measure_cost(const trc_npu_sampler *npu, uint32_t rounds)
{
    /* A frame like the hardware's: thread mode, the PC of this function. */
    uint32_t frame[8] = {0u, 0u, 0u, 0u, 0u, 0u, (uint32_t)(uintptr_t)&trc_sampler_measure_cost, 0u};
    if (rounds == 0u) {
        return TRC_MARKER_COST_UNKNOWN;
    }
    g_trc_sample_flags = TRC_SAMPLE_CALIBRATION;
    /* rounds + 1 rounds: from the first record of the first to that of the last, `rounds` whole
     * rounds have passed (the records' own time stamps: no other time read needed). */
    uint32_t start = trc_sampler_round(npu, frame);
    uint32_t end = start;
    for (uint32_t i = 0; i < rounds; i++) {
        end = trc_sampler_round(npu, frame);
    }
    g_trc_sample_flags = 0u;
    return (uint32_t)(((uint64_t)(end - start) * 16u + rounds / 2u) / rounds);
}

void trc_sample_period_init(trc_sample_period *p, uint32_t period, uint32_t dither, uint32_t seed)
{
    p->period = period;
    p->dither = dither > period ? period : dither;
    p->state = seed ? seed : 0x9E3779B9u;
}

uint32_t trc_sampler_next_period(trc_sample_period *p)
{
    if (p->dither == 0u) {
        return p->period;
    }
    uint32_t x = p->state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p->state = x;
    return p->period - p->dither / 2u + x % p->dither;
}
