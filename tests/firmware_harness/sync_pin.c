/*
 * trc_sync_pin on the host: a pin function that logs the level and the clock when it is set,
 * around three inferences. Usage: sync_pin OUT.bin  (prints "pin=<clock>:<level>" per call).
 */
#include <stdio.h>
#include <string.h>

#include "trc.h"

static uint8_t g_out[1 << 14];
static size_t g_len;
static uint64_t g_clock = 1000u;

static int capture(void *ctx, const uint8_t *bytes, uint32_t length)
{
    (void)ctx;
    memcpy(&g_out[g_len], bytes, length);
    g_len += length;
    return 0;
}

static uint32_t fake_now32(void)
{
    g_clock += 100u;
    return (uint32_t)g_clock;
}

static void set_pin(void *ctx, uint32_t level)
{
    unsigned *calls = (unsigned *)ctx;
    (*calls)++;
    printf("pin=%llu:%u\n", (unsigned long long)g_clock, (unsigned)level);
}

int main(int argc, char **argv)
{
    unsigned calls = 0;
    if (argc != 2) {
        fprintf(stderr, "usage: sync_pin OUT.bin\n");
        return 2;
    }
    trc_use_writer(capture, 0);
    trc_set_time(fake_now32, 0, 1000000u, TRC_TIME_DWT);
    trc_target_info(0u, 0xFFFFFFFFu, 0u, 0u);
    for (uint32_t n = 0; n < 3u; n++) {
        trc_sync_pin(set_pin, &calls, 2u);
        trc_inference_begin();
        trc_layer_begin(0, TRC_ENGINE_CPU);
        trc_layer_end(0);
        trc_inference_end(0);
    }
    printf("calls=%u\n", calls);
    FILE *f = fopen(argv[1], "wb");
    if (f == NULL || fwrite(g_out, 1, g_len, f) != g_len) {
        return 1;
    }
    fclose(f);
    return 0;
}
