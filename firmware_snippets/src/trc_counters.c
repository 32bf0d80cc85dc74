/*
 * CPU counters per layer span: the Armv8.1-M PMU (INST_RETIRED and up to 3 more events) or the
 * Armv7-M/Armv8-M DWT profiling counters. trc_layer_begin() snapshots them right after its
 * record; trc_layer_end() reads them before its record and emits their change (CPU_COUNTERS).
 * A CPU_COUNTER_CONFIG record says once what the values count.
 */
#include "trc_internal.h"

#define TRC_REG(base, off) (*(volatile uint32_t *)((base) + (off)))

/* Armv8.1-M PMU (offsets from 0xE0003000). */
#define TRC_PMU_BASE 0xE0003000u
#define TRC_PMU_EVCNTR(n) (0x000u + 4u * (n))
#define TRC_PMU_EVTYPER(n) (0x400u + 4u * (n))
#define TRC_PMU_CNTENSET 0xC00u
#define TRC_PMU_CNTENCLR 0xC20u
#define TRC_PMU_OVSCLR 0xC80u
#define TRC_PMU_TYPE 0xE00u
#define TRC_PMU_CTRL 0xE04u
#define TRC_PMU_CTRL_ENABLE 1u
#define TRC_PMU_CTRL_EVENT_RESET 2u
#define TRC_PMU_MAX_EVENTS 4u

/* DWT (offsets from 0xE0001000). */
#define TRC_DWT_BASE 0xE0001000u
#define TRC_DWT_CTRL 0x000u
#define TRC_DWT_CPICNT 0x008u /* then EXCCNT, SLEEPCNT, LSUCNT, FOLDCNT, 4 bytes apart */
#define TRC_DWT_COUNTERS 5u
#define TRC_DWT_NOPRFCNT (1u << 24)
#define TRC_DWT_EVTENA (0x1Fu << 17) /* CPIEVTENA, EXCEVTENA, SLEEPEVTENA, LSUEVTENA, FOLDEVTENA */

#define TRC_DEMCR (*(volatile uint32_t *)0xE000EDFCu)
#define TRC_DEMCR_TRCENA (1u << 24)

static struct {
    uintptr_t base;
    uint32_t count;       /* values per record */
    uint32_t width;       /* PMU counter bits (16: chained pairs) */
    uint32_t begin[TRC_DWT_COUNTERS];
} g_trc_counters;

static void trc_counters_config(uint32_t source, const uint16_t *events, uint32_t count)
{
    uint32_t w[2u + 3u];
    w[1] = source | (count << 8);
    for (uint32_t i = 0; i < (count + 1u) / 2u; i++) {
        w[2u + i] = 0u;
    }
    for (uint32_t i = 0; i < count; i++) {
        w[2u + i / 2u] |= (uint32_t)events[i] << (16u * (i & 1u));
    }
    trc_emit_counters(TRC_REC_CPU_COUNTER_CONFIG, w, 2u + (count + 1u) / 2u);
}

/* Start emitting: say what the values count (CPU_COUNTER_CONFIG), then hook the layer markers. */
static uint32_t trc_counters_install(uintptr_t base, uint32_t source, const uint16_t *events, uint32_t count,
                                     trc_counters_begin_fn begin, trc_counters_end_fn end)
{
    g_trc_counters.base = base;
    g_trc_counters.count = count;
    trc_counters_config(source, events, count);
    trc_g.counters_begin = begin;
    trc_g.counters_end = end;
    return count;
}

/* ---- Armv8.1-M PMU ------------------------------------------------------------------------- */

/* Event i's count: counter i, or with 16-bit counters the pair 2i (low) and 2i+1 (CHAIN, high). */
static uint32_t trc_pmu_read(uint32_t i)
{
    uintptr_t base = g_trc_counters.base;
    if (g_trc_counters.width >= 32u) {
        return TRC_REG(base, TRC_PMU_EVCNTR(i));
    }
    uint32_t hi;
    uint32_t lo;
    do { /* the low half may carry into the high half between the two reads */
        hi = TRC_REG(base, TRC_PMU_EVCNTR(2u * i + 1u));
        lo = TRC_REG(base, TRC_PMU_EVCNTR(2u * i));
    } while (hi != TRC_REG(base, TRC_PMU_EVCNTR(2u * i + 1u)));
    return (hi << g_trc_counters.width) | lo;
}

static void trc_pmu_begin(void)
{
    for (uint32_t i = 0; i < g_trc_counters.count; i++) {
        g_trc_counters.begin[i] = trc_pmu_read(i);
    }
}

static void trc_pmu_end(uint32_t index)
{
    uint32_t w[2u + TRC_PMU_MAX_EVENTS];
    uint32_t n = g_trc_counters.count;
    for (uint32_t i = 0; i < n; i++) {
        w[2u + i] = trc_pmu_read(i) - g_trc_counters.begin[i];
    }
    w[1] = (index & 0xFFFFu) | ((uint32_t)TRC_COUNTERS_PMU << 16) | (n << 24);
    trc_emit_counters(TRC_REC_CPU_COUNTERS, w, 2u + n);
}

uint32_t trc_cpu_pmu_init_at(uintptr_t pmu_base, const uint16_t *more_events, uint32_t more_count)
{
    uint32_t type = TRC_REG(pmu_base, TRC_PMU_TYPE);
    uint32_t counters = (type & 0xFFu) + 1u;
    uint32_t width = ((type >> 8) & 0x3Fu) + 1u;
    uint16_t events[TRC_PMU_MAX_EVENTS];
    uint32_t n = 0u;
    trc_cpu_counters_off();
    if (type == 0u) { /* no PMU (an emulator's registers read as zero) */
        return 0u;
    }
    events[n++] = (uint16_t)TRC_PMU_INST_RETIRED;
    for (uint32_t i = 0; i < more_count && n < TRC_PMU_MAX_EVENTS; i++) {
        events[n++] = more_events[i];
    }
    uint32_t per_event = width >= 32u ? 1u : 2u;
    if (n * per_event > counters) {
        n = counters / per_event;
    }
    uint32_t enable = 0u;
    for (uint32_t i = 0; i < n; i++) {
        TRC_REG(pmu_base, TRC_PMU_EVTYPER(per_event * i)) = events[i];
        enable |= 1u << (per_event * i);
        if (per_event == 2u) {
            TRC_REG(pmu_base, TRC_PMU_EVTYPER(2u * i + 1u)) = TRC_PMU_CHAIN;
            enable |= 1u << (2u * i + 1u);
        }
    }
    TRC_REG(pmu_base, TRC_PMU_CNTENCLR) = 0x7FFFFFFFu;
    TRC_REG(pmu_base, TRC_PMU_OVSCLR) = 0xFFFFFFFFu;
    TRC_REG(pmu_base, TRC_PMU_CNTENSET) = enable;
    TRC_REG(pmu_base, TRC_PMU_CTRL) = TRC_PMU_CTRL_ENABLE | TRC_PMU_CTRL_EVENT_RESET;
    g_trc_counters.width = width;
    return trc_counters_install(pmu_base, TRC_COUNTERS_PMU, events, n, trc_pmu_begin, trc_pmu_end);
}

/* ---- DWT profiling counters ---------------------------------------------------------------- */

static void trc_dwt_begin(void)
{
    for (uint32_t i = 0; i < TRC_DWT_COUNTERS; i++) {
        g_trc_counters.begin[i] = TRC_REG(g_trc_counters.base, TRC_DWT_CPICNT + 4u * i) & 0xFFu;
    }
}

/* Each value: the counter at the begin (bits 0-7) and at the end (bits 8-15). */
static void trc_dwt_end(uint32_t index)
{
    uint32_t w[2u + TRC_DWT_COUNTERS];
    for (uint32_t i = 0; i < TRC_DWT_COUNTERS; i++) {
        uint32_t now = TRC_REG(g_trc_counters.base, TRC_DWT_CPICNT + 4u * i) & 0xFFu;
        w[2u + i] = g_trc_counters.begin[i] | (now << 8);
    }
    w[1] = (index & 0xFFFFu) | ((uint32_t)TRC_COUNTERS_DWT << 16) | (TRC_DWT_COUNTERS << 24);
    trc_emit_counters(TRC_REC_CPU_COUNTERS, w, 2u + TRC_DWT_COUNTERS);
}

uint32_t trc_cpu_dwt_counters_init_at(uintptr_t dwt_base)
{
    /* The counters' ids in CPU_COUNTER_CONFIG: CPI 1, EXC 2, SLEEP 3, LSU 4, FOLD 5. */
    static const uint16_t ids[TRC_DWT_COUNTERS] = {1u, 2u, 3u, 4u, 5u};
    trc_cpu_counters_off();
    if (TRC_REG(dwt_base, TRC_DWT_CTRL) & TRC_DWT_NOPRFCNT) {
        return 0u;
    }
    TRC_REG(dwt_base, TRC_DWT_CTRL) |= TRC_DWT_EVTENA;
    if ((TRC_REG(dwt_base, TRC_DWT_CTRL) & TRC_DWT_EVTENA) != TRC_DWT_EVTENA) {
        return 0u; /* the bits did not stick: no DWT (an emulator's registers read as zero) */
    }
    for (uint32_t i = 0; i < TRC_DWT_COUNTERS; i++) {
        TRC_REG(dwt_base, TRC_DWT_CPICNT + 4u * i) = 0u;
    }
    return trc_counters_install(dwt_base, TRC_COUNTERS_DWT, ids, TRC_DWT_COUNTERS, trc_dwt_begin, trc_dwt_end);
}

/* ---- the fixed addresses ------------------------------------------------------------------- */

#if defined(__arm__)
uint32_t trc_cpu_pmu_init(const uint16_t *more_events, uint32_t more_count)
{
    TRC_DEMCR |= TRC_DEMCR_TRCENA; /* the PMU counts only with trace enabled */
    return trc_cpu_pmu_init_at(TRC_PMU_BASE, more_events, more_count);
}

uint32_t trc_cpu_dwt_counters_init(void)
{
    TRC_DEMCR |= TRC_DEMCR_TRCENA;
    return trc_cpu_dwt_counters_init_at(TRC_DWT_BASE);
}
#else
uint32_t trc_cpu_pmu_init(const uint16_t *more_events, uint32_t more_count)
{
    (void)more_events;
    (void)more_count;
    return 0u;
}

uint32_t trc_cpu_dwt_counters_init(void) { return 0u; }
#endif

void trc_cpu_counters_off(void)
{
    trc_g.counters_begin = 0;
    trc_g.counters_end = 0;
}
