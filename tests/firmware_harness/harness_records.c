/*
 * The records added for work-aware timing and RTOS tasks, on the host: the NPU PMU "simulated"
 * flag spelled as documented, per-layer work counts, CPU counters read from register blocks in
 * memory laid out as the Armv8.1-M PMU and the DWT, and task records from the FreeRTOS trace
 * macros and Zephyr's user tracing hooks of trc_rtos.h.
 *
 * FreeRTOS is mimicked the way tasks.c expands the macros: a TCB type with pcTaskName and
 * uxPriority and pxCurrentTCB in scope. Zephyr's hooks (zephyr_hooks.c) are compiled against a
 * stand-in <zephyr/kernel.h> (stubs/) and called as Zephyr's tracing_user.c calls them.
 *
 * Usage: harness_records OUT.bin  (key=value facts on stdout).
 */
#include <stdio.h>
#include <string.h>

#include <zephyr/kernel.h>

/* --- FreeRTOS, as tasks.c sees it --- */
typedef struct tskTaskControlBlock {
    volatile unsigned long *pxTopOfStack;
    unsigned long uxPriority;
    char pcTaskName[16];
} TCB_t;
static TCB_t *volatile pxCurrentTCB;
#define TRC_RTOS_FREERTOS
#include "trc_rtos.h"

/* --- Zephyr: the stand-in kernel, and the hooks zephyr_hooks.c defines --- */
static struct k_thread *g_zephyr_current;
k_tid_t k_current_get(void) { return g_zephyr_current; }
const char *k_thread_name_get(k_tid_t thread) { return thread->name; }
int k_thread_priority_get(k_tid_t thread) { return thread->prio; }
void sys_trace_thread_switched_in_user(void);
void sys_trace_thread_create_user(struct k_thread *thread);
void sys_trace_thread_name_set_user(struct k_thread *thread);
void sys_trace_thread_abort_user(struct k_thread *thread);

static uint8_t g_out[1 << 16];
static size_t g_len;
static uint32_t g_clock;
static uint32_t g_pmu[0x1000 / 4];
static uint32_t g_dwt[0x20 / 4];

static int capture(void *ctx, const uint8_t *bytes, uint32_t length)
{
    (void)ctx;
    memcpy(&g_out[g_len], bytes, length);
    g_len += length;
    return 0;
}

static uint32_t fake_now32(void) { return g_clock += 10u; }

static TCB_t g_tcb_infer = {0, 2u, "inference"};
static TCB_t g_tcb_sensor = {0, 5u, "sensor"};
static struct k_thread g_zthread = {-3, 0};

/* FreeRTOS's scheduler switching to `tcb` (vTaskSwitchContext). */
static void freertos_switch(TCB_t *tcb)
{
    pxCurrentTCB = tcb;
    traceTASK_SWITCHED_IN();
}

int main(int argc, char **argv)
{
    static const uint16_t npu_events[4] = {35u, 130u, 135u, 386u};
    static const uint16_t more_cpu_events[1] = {0x0024u}; /* STALL_BACKEND */
    if (argc != 2) {
        fprintf(stderr, "usage: harness_records OUT.bin\n");
        return 2;
    }
    trc_use_writer(capture, 0);
    trc_set_time(fake_now32, 0, 100000000u, TRC_TIME_DWT);
    trc_target_info(0u, TRC_MARKER_COST_UNKNOWN, 0u, 0u); /* not simulated here ... */
    trc_pmu_config(55u, 4u, npu_events, TRC_INFO_NPU_PMU_SIMULATED); /* ... but the NPU PMU is */

    /* FreeRTOS creates two tasks and starts the first. */
    traceTASK_CREATE(&g_tcb_infer);
    traceTASK_CREATE(&g_tcb_sensor);
    freertos_switch(&g_tcb_infer);

    /* The Armv8.1-M PMU as a Cortex-M55 has it: 8 counters of 16 bits (TYPE.N = 7, SIZE = 15). */
    g_pmu[0xE00 / 4] = 7u | (15u << 8) | (1u << 14);
    printf("pmu_events=%u\n", (unsigned)trc_cpu_pmu_init_at((uintptr_t)g_pmu, more_cpu_events, 1u));
    printf("pmu_evtyper=%x,%x,%x,%x cntenset=%x ctrl=%u\n", (unsigned)g_pmu[0x400 / 4], (unsigned)g_pmu[0x404 / 4],
           (unsigned)g_pmu[0x408 / 4], (unsigned)g_pmu[0x40C / 4], (unsigned)g_pmu[0xC00 / 4], (unsigned)g_pmu[0xE04 / 4]);

    trc_inference_begin();
    /* Layer 0: INST_RETIRED goes from 0x0001FFF0 to 0x00020010 (across a 16-bit carry): 32. */
    g_pmu[0] = 0xFFF0u;
    g_pmu[1] = 0x0001u;
    g_pmu[2] = 100u;
    trc_layer_begin(0u, TRC_ENGINE_CPU);
    g_pmu[0] = 0x0010u;
    g_pmu[1] = 0x0002u;
    g_pmu[2] = 175u;
    trc_layer_end(0u);
    /* Layer 1: a post-process whose work is 17 candidates; the sensor task preempts it. */
    trc_layer_begin(1u, TRC_ENGINE_CPU);
    trc_layer_work(1u, 17u);
    freertos_switch(&g_tcb_sensor);
    g_clock += 1000u;
    freertos_switch(&g_tcb_infer);
    trc_layer_end(1u);
    trc_inference_end(0u);

    /* The DWT (DWT_CTRL reads back its event-enable bits): CPI counts 250 -> 4 across the wrap. */
    printf("dwt_counters=%u\n", (unsigned)trc_cpu_dwt_counters_init_at((uintptr_t)g_dwt));
    printf("dwt_ctrl=%x\n", (unsigned)g_dwt[0]);
    trc_inference_begin();
    g_dwt[2] = 250u; /* CPICNT */
    g_dwt[5] = 7u;   /* LSUCNT */
    trc_layer_begin(0u, TRC_ENGINE_CPU);
    g_dwt[2] = 4u;
    g_dwt[5] = 9u;
    trc_layer_end(0u);
    trc_inference_end(0u);
    trc_cpu_counters_off();

    /* Zephyr: a thread is created, named, switched in, aborted. */
    g_zephyr_current = &g_zthread;
    sys_trace_thread_create_user(&g_zthread);
    g_zthread.name = "zephyr_main";
    sys_trace_thread_name_set_user(&g_zthread);
    sys_trace_thread_switched_in_user();
    sys_trace_thread_abort_user(&g_zthread);
    traceTASK_DELETE(&g_tcb_sensor);
    printf("tcb_infer=%lu tcb_sensor=%lu zthread=%lu\n", (unsigned long)(uintptr_t)&g_tcb_infer,
           (unsigned long)(uintptr_t)&g_tcb_sensor, (unsigned long)(uintptr_t)&g_zthread);
    printf("emitted=%u dropped=%u clock=%u\n", (unsigned)trc_emitted(), (unsigned)trc_dropped(), (unsigned)g_clock);
    FILE *out = fopen(argv[1], "wb");
    if (out == 0 || fwrite(g_out, 1, g_len, out) != g_len || fclose(out) != 0) {
        fprintf(stderr, "cannot write %s\n", argv[1]);
        return 1;
    }
    return 0;
}
