/*
 * Calls every record function of the trc library with a scripted clock and captures the bytes
 * the software transport writes. Usage: harness OUT.bin  (key=value facts on stdout).
 *
 * The clock advances by CLOCK_STEP at every read and starts just below 2^32, so the 32-bit time
 * wraps during the run. One record of inference 1 is refused by the transport (a dropped write).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trc.h"

#define CLOCK_START 0xFFFF0000ull
#define CLOCK_STEP 0x1000u

void trc_ethosu_hooks_setup(uintptr_t npu_base, uint32_t npu, uint32_t count, const uint16_t *event_types);
struct ethosu_driver;
void ethosu_inference_begin(struct ethosu_driver *drv, void *user_arg);
void ethosu_inference_end(struct ethosu_driver *drv, void *user_arg);

static uint8_t g_out[1 << 16];
static size_t g_len;
static int g_refuse_next;
static uint64_t g_clock = CLOCK_START;

static int capture(void *ctx, const uint8_t *bytes, uint32_t length)
{
    (void)ctx;
    if (g_refuse_next) {
        g_refuse_next = 0;
        return 1;
    }
    memcpy(&g_out[g_len], bytes, length);
    g_len += length;
    return 0;
}

static uint32_t fake_now32(void)
{
    g_clock += CLOCK_STEP;
    return (uint32_t)g_clock;
}

static uint32_t g_stack_area[64];
static uint32_t g_npu_regs[0x1400 / 4];

int main(int argc, char **argv)
{
    static const uint16_t events[4] = {35u, 130u, 135u, 386u};
    static const uint8_t input[16] = "0123456789abcdef";
    trc_pmu_sample sample;

    if (argc != 2) {
        fprintf(stderr, "usage: harness OUT.bin\n");
        return 2;
    }
    trc_use_writer(capture, 0);
    trc_set_time(fake_now32, 0, 480000000u, TRC_TIME_DWT);
    trc_print("hello\n");
    trc_target_info(TRC_INFO_NPU_PMU_SIMULATED, 0x123u, 3u, 0x410FD220u);
    trc_pmu_config(55u, 4u, events, TRC_INFO_NPU_PMU_SIMULATED); /* the documented flag */
    trc_layer_info(0u, TRC_ENGINE_NPU, "CONV_2D", "conv0");
    trc_layer_info(1u, TRC_ENGINE_CPU, "DEPTHWISE_CONV_2D_WITH_A_VERY_LONG_NAME", 0);
    trc_layer_info_once(1u, TRC_ENGINE_CPU, "IGNORED", "ignored"); /* first sight: emitted */
    trc_layer_info_once(1u, TRC_ENGINE_CPU, "IGNORED", "ignored"); /* seen: nothing */
    trc_arena(1000u, 2000u);
    for (uint32_t n = 0; n < 3u; n++) {
        trc_inference_begin();
        trc_buffer_crc(TRC_BUFFER_INPUT, input, sizeof input);
        trc_layer_begin(0u, TRC_ENGINE_NPU);
        trc_cache_op(TRC_CACHE_CLEAN, (const void *)(uintptr_t)0x31000000u, 64u);
        trc_npu_job_begin(n);
        sample.cycles = 0x123456789ull + n;
        sample.count = 4u;
        sample.flags = TRC_PMU_SINCE_RESET;
        sample.counters[0] = 100u + n;
        sample.counters[1] = 200u;
        sample.counters[2] = 300u;
        sample.counters[3] = 400u;
        trc_pmu_snapshot(&sample);
        trc_npu_job_end(n, 0u);
        trc_layer_end(0u);
        trc_layer_begin(1u, TRC_ENGINE_CPU);
        trc_mark(7u);
        trc_value(8u, 99u + n);
        if (n == 1u) {
            g_refuse_next = 1; /* the transport refuses this layer end */
        }
        trc_layer_end(1u);
        trc_buffer_crc(TRC_BUFFER_OUTPUT, &input[8], 8u);
        trc_inference_end(n == 2u ? 5u : 0u);
    }
    trc_time_sync();

    /* Stacks on a host array: paint all but the top 10 words, "use" 6 of them. */
    trc_stack stack = {"worker", g_stack_area, sizeof g_stack_area, 2u};
    trc_stack_paint(&stack, &g_stack_area[54]);
    for (int i = 48; i < 54; i++) {
        g_stack_area[i] = 0x1234u;
    }
    trc_stack_report(&stack);
    printf("high_water=%u\n", (unsigned)trc_stack_high_water(&stack));
    g_stack_area[0] = 0u; /* overwrite the canary */
    printf("canary_after_overwrite=%d\n", trc_stack_canary_ok(&stack));
    printf("high_water_after_overwrite=%u\n", (unsigned)trc_stack_high_water(&stack));

    printf("crc32_check=%08x\n", (unsigned)trc_crc32(0u, "123456789", 9u));
    trc_print_u32(123456789u);
    trc_print("\nbye");

    /* Ethos-U PMU by register access, on a fake register block. */
    g_npu_regs[0x1A0 / 4] = 0x89ABCDEFu;
    g_npu_regs[0x1A4 / 4] = 0x12345u; /* only 16 bits count */
    for (int i = 0; i < 4; i++) {
        g_npu_regs[(0x300 + 4 * i) / 4] = 1000u + (uint32_t)i;
    }
    trc_ethosu_pmu_start((uintptr_t)g_npu_regs, 55u, 4u, events);
    printf("u55_pmcr=%u u55_cntenset=%08x u55_evtype=%u,%u,%u,%u\n", (unsigned)g_npu_regs[0x180 / 4],
           (unsigned)g_npu_regs[0x184 / 4], (unsigned)g_npu_regs[0x380 / 4], (unsigned)g_npu_regs[0x384 / 4],
           (unsigned)g_npu_regs[0x388 / 4], (unsigned)g_npu_regs[0x38C / 4]);
    trc_ethosu_pmu_read((uintptr_t)g_npu_regs, 55u, 6u, &sample);
    printf("u55_cycles=%llx u55_count=%u u55_counters=%u,%u,%u,%u\n", (unsigned long long)sample.cycles,
           (unsigned)sample.count, (unsigned)sample.counters[0], (unsigned)sample.counters[1],
           (unsigned)sample.counters[2], (unsigned)sample.counters[3]);
    trc_ethosu_pmu_stop((uintptr_t)g_npu_regs, 55u);
    printf("u55_cntenclr=%08x\n", (unsigned)g_npu_regs[0x188 / 4]);
    g_npu_regs[0x11A0 / 4] = 77u;
    g_npu_regs[(0x1300 + 4 * 7) / 4] = 8888u;
    trc_ethosu_pmu_read((uintptr_t)g_npu_regs, 85u, 8u, &sample);
    printf("u85_cycles=%llu u85_count=%u u85_counter7=%u\n", (unsigned long long)sample.cycles,
           (unsigned)sample.count, (unsigned)sample.counters[7]);

    /* The driver hooks around one more (fourth) inference's NPU job. */
    trc_ethosu_hooks_setup((uintptr_t)g_npu_regs, 55u, 4u, events);
    trc_inference_begin();
    trc_layer_begin(0u, TRC_ENGINE_NPU);
    ethosu_inference_begin(0, 0);
    ethosu_inference_end(0, 0);
    trc_layer_end(0u);
    trc_inference_end(0u);

    printf("emitted=%u dropped=%u clock=%llu\n", (unsigned)trc_emitted(), (unsigned)trc_dropped(),
           (unsigned long long)g_clock);
    FILE *out = fopen(argv[1], "wb");
    if (out == 0 || fwrite(g_out, 1, g_len, out) != g_len || fclose(out) != 0) {
        fprintf(stderr, "cannot write %s\n", argv[1]);
        return 1;
    }
    return 0;
}
