/*
 * Ethos-U driver hooks: the driver calls ethosu_inference_begin/end (weak in ethosu_driver.c)
 * around every NPU job. These strong definitions emit NPU job begin/end and a PMU snapshot of
 * the job (counters reset at begin, read at end).
 *
 * Link this file as an object, not from an archive: a weak definition already linked from the
 * driver would keep the archive member from being pulled in. Call trc_ethosu_hooks_setup()
 * once (after trc_pmu_config) with the NPU base address and the events to count.
 *
 * Optional (-DTRC_ETHOSU_CACHE_HOOKS): also override the driver's weak cache maintenance
 * functions to clean/invalidate the D-cache by address (32-byte lines) and record each
 * operation. A null pointer (whole cache) is recorded only.
 */
#include "trc.h"

struct ethosu_driver; /* opaque here: only pointers pass through */

void trc_ethosu_hooks_setup(uintptr_t npu_base, uint32_t npu, uint32_t count, const uint16_t *event_types);
void ethosu_inference_begin(struct ethosu_driver *drv, void *user_arg);
void ethosu_inference_end(struct ethosu_driver *drv, void *user_arg);

static uintptr_t g_trc_npu_base;
static uint32_t g_trc_npu;
static uint32_t g_trc_npu_count;
static uint16_t g_trc_npu_events[8];
static uint32_t g_trc_npu_job;

void trc_ethosu_hooks_setup(uintptr_t npu_base, uint32_t npu, uint32_t count, const uint16_t *event_types)
{
    g_trc_npu_base = npu_base;
    g_trc_npu = npu;
    g_trc_npu_count = count > 8u ? 8u : count;
    for (uint32_t i = 0; i < g_trc_npu_count; i++) {
        g_trc_npu_events[i] = event_types[i];
    }
}

void ethosu_inference_begin(struct ethosu_driver *drv, void *user_arg)
{
    (void)drv;
    (void)user_arg;
    trc_npu_job_begin(g_trc_npu_job);
    if (g_trc_npu_base != 0u) {
        trc_ethosu_pmu_start(g_trc_npu_base, g_trc_npu, g_trc_npu_count, g_trc_npu_events);
    }
}

void ethosu_inference_end(struct ethosu_driver *drv, void *user_arg)
{
    (void)drv;
    (void)user_arg;
    if (g_trc_npu_base != 0u) {
        trc_pmu_sample sample;
        trc_ethosu_pmu_stop(g_trc_npu_base, g_trc_npu);
        trc_ethosu_pmu_read(g_trc_npu_base, g_trc_npu, g_trc_npu_count, &sample);
        trc_pmu_snapshot(&sample);
    }
    trc_npu_job_end(g_trc_npu_job, 0u);
    g_trc_npu_job++;
}

#ifdef TRC_ETHOSU_CACHE_HOOKS
#define TRC_SCB_DCIMVAC (*(volatile uint32_t *)0xE000EF5Cu)
#define TRC_SCB_DCCMVAC (*(volatile uint32_t *)0xE000EF68u)
#define TRC_DCACHE_LINE 32u

void ethosu_flush_dcache(uint32_t *p, size_t bytes);
void ethosu_invalidate_dcache(uint32_t *p, size_t bytes);

static void trc_dcache_by_address(volatile uint32_t *reg, uint32_t *p, size_t bytes)
{
    uintptr_t addr = (uintptr_t)p & ~(uintptr_t)(TRC_DCACHE_LINE - 1u);
    uintptr_t end = (uintptr_t)p + bytes;
    __asm volatile("dsb" ::: "memory");
    for (; addr < end; addr += TRC_DCACHE_LINE) {
        *reg = (uint32_t)addr;
    }
    __asm volatile("dsb\n\tisb" ::: "memory");
}

void ethosu_flush_dcache(uint32_t *p, size_t bytes)
{
    /* A null pointer means "the whole cache": recorded (length 0xFFFFFFFF) but not performed
     * here; keep your own whole-cache routine for that case. */
    trc_cache_op(TRC_CACHE_CLEAN, p, p ? (uint32_t)bytes : 0xFFFFFFFFu);
    if (p) {
        trc_dcache_by_address(&TRC_SCB_DCCMVAC, p, bytes);
    }
}

void ethosu_invalidate_dcache(uint32_t *p, size_t bytes)
{
    trc_cache_op(TRC_CACHE_INVALIDATE, p, p ? (uint32_t)bytes : 0xFFFFFFFFu);
    if (p) {
        trc_dcache_by_address(&TRC_SCB_DCIMVAC, p, bytes);
    }
}
#endif
