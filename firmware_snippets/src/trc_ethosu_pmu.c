/*
 * Ethos-U PMU by direct register access (offsets from the NPU base; U85 registers sit 0x1000
 * higher). Event counters count the hardware events written to PMEVTYPER; PMCCNTR is the
 * 48-bit cycle counter. Use either this or the driver's PMU API, not both.
 */
#include "trc.h"

#define TRC_NPU_REG(base, off) (*(volatile uint32_t *)((base) + (off)))
#define TRC_PMCR 0x180u
#define TRC_PMCNTENSET 0x184u
#define TRC_PMCNTENCLR 0x188u
#define TRC_PMCCNTR_LO 0x1A0u
#define TRC_PMCCNTR_HI 0x1A4u
#define TRC_PMEVCNTR 0x300u
#define TRC_PMEVTYPER 0x380u
#define TRC_PMCR_CNT_EN 1u
#define TRC_PMCR_EVENT_CNT_RST 2u
#define TRC_PMCR_CYCLE_CNT_RST 4u
#define TRC_PMU_CCNT_BIT (1u << 31)

static uintptr_t trc_pmu_base(uintptr_t npu_base, uint32_t npu)
{
    return npu_base + (npu == 85u ? 0x1000u : 0u);
}

static uint32_t trc_pmu_limit(uint32_t npu, uint32_t count)
{
    uint32_t most = npu == 85u ? 8u : 4u;
    return count > most ? most : count;
}

void trc_ethosu_pmu_start(uintptr_t npu_base, uint32_t npu, uint32_t count, const uint16_t *event_types)
{
    uintptr_t base = trc_pmu_base(npu_base, npu);
    count = trc_pmu_limit(npu, count);
    for (uint32_t i = 0; i < count; i++) {
        TRC_NPU_REG(base, TRC_PMEVTYPER + 4u * i) = event_types[i];
    }
    TRC_NPU_REG(base, TRC_PMCR) = TRC_PMCR_CNT_EN | TRC_PMCR_EVENT_CNT_RST | TRC_PMCR_CYCLE_CNT_RST;
    TRC_NPU_REG(base, TRC_PMCNTENSET) = ((1u << count) - 1u) | TRC_PMU_CCNT_BIT;
}

void trc_ethosu_pmu_stop(uintptr_t npu_base, uint32_t npu)
{
    TRC_NPU_REG(trc_pmu_base(npu_base, npu), TRC_PMCNTENCLR) = 0xFFu | TRC_PMU_CCNT_BIT;
}

void trc_ethosu_pmu_read(uintptr_t npu_base, uint32_t npu, uint32_t count, trc_pmu_sample *sample)
{
    uintptr_t base = trc_pmu_base(npu_base, npu);
    uint32_t hi;
    uint32_t lo;
    do {  /* the 48-bit counter is read in two halves */
        hi = TRC_NPU_REG(base, TRC_PMCCNTR_HI);
        lo = TRC_NPU_REG(base, TRC_PMCCNTR_LO);
    } while (hi != TRC_NPU_REG(base, TRC_PMCCNTR_HI));
    count = trc_pmu_limit(npu, count);
    sample->cycles = ((uint64_t)(hi & 0xFFFFu) << 32) | lo;
    sample->count = count;
    sample->flags = TRC_PMU_SINCE_RESET;
    for (uint32_t i = 0; i < count; i++) {
        sample->counters[i] = TRC_NPU_REG(base, TRC_PMEVCNTR + 4u * i);
    }
}
