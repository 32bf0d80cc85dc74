/*
 * The trc ring and its drains on the host: what reaches the wire when the ring fills, when a
 * consumer of one's own (a DMA, a TX-empty interrupt) takes the bytes in spans, and when records
 * are emitted from inside the transport or the clock (as an interrupt would).
 *
 * Usage: harness_ring MODE OUT.bin   (key=value facts on stdout). Modes:
 *   full       deferred drain, 100 layer begin/end records into a 1024-byte ring, then a flush
 *              and a second inference (which reports the drops)
 *   long_drop  deferred drain, 300 records dropped in a row between two flushes
 *   writer     a fixed sequence of records and text through the software writer
 *   consumer   the same sequence taken by a consumer in spans of at most 7 bytes, one span
 *              partly sent; the kick is counted
 *   nested     on emit, with a record emitted from inside the writer and from inside the clock
 *   text_full  a consumer that takes nothing: records fill the ring, then console text is dropped
 *              and counted (text has no sequence number)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trc.h"

static uint8_t g_out[1 << 20];
static size_t g_len;
static uint32_t g_clock = 1000u;
static int g_nest_in_writer;
static int g_nest_in_clock;
static uint32_t g_kicks;

static uint32_t fake_now32(void)
{
    if (g_nest_in_clock) {
        g_nest_in_clock = 0;
        trc_mark(0xC10Cu); /* an "interrupt" between this record's clock read and its reservation */
    }
    g_clock += 16u;
    return g_clock;
}

static int capture(void *ctx, const uint8_t *bytes, uint32_t length)
{
    (void)ctx;
    memcpy(&g_out[g_len], bytes, length);
    g_len += length;
    if (g_nest_in_writer) {
        g_nest_in_writer = 0;
        trc_mark(0x1E57u); /* an "interrupt" while this chunk is being sent */
    }
    return 0;
}

static void kick(void *ctx)
{
    (void)ctx;
    g_kicks++;
}

/* The consumer: spans of at most 7 bytes (records are cut anywhere), the second span sent only
 * in part (the rest must come again). */
static void consume(void)
{
    const uint8_t *bytes;
    uint32_t n;
    uint32_t spans = 0u;
    while ((n = trc_tx_span(&bytes, 7u)) != 0u) {
        uint32_t sent = spans == 1u ? n - 3u : n;
        if (trc_tx_span(&bytes, 7u) != 0u) { /* one span at a time */
            printf("second_span_while_out=1\n");
        }
        memcpy(&g_out[g_len], bytes, sent);
        g_len += sent;
        trc_tx_done(sent);
        spans++;
    }
}

static void sequence(void (*drain)(void))
{
    trc_print("ring\n");
    trc_inference_begin();
    for (uint32_t i = 0; i < 5u; i++) {
        trc_layer_begin(i, TRC_ENGINE_CPU);
        trc_value(i, 100u + i);
        trc_layer_end(i);
        if (drain != 0) {
            drain();
        }
    }
    trc_inference_end(0u);
    if (drain != 0) {
        drain();
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: harness_ring MODE OUT.bin\n");
        return 2;
    }
    const char *mode = argv[1];
    trc_set_time(fake_now32, 0, 1000000u, TRC_TIME_USER);
    if (strcmp(mode, "full") == 0) {
        trc_use_writer(capture, 0);
        trc_set_drain(TRC_DRAIN_DEFERRED);
        trc_inference_begin();
        for (uint32_t i = 0; i < 50u; i++) {
            trc_layer_begin(i, TRC_ENGINE_CPU);
            trc_layer_end(i);
        }
        printf("pending_before_flush=%u dropped_before_flush=%u\n", (unsigned)trc_pending(), (unsigned)trc_dropped());
        printf("left_after_flush=%u\n", (unsigned)trc_flush());
        trc_inference_end(0u);
        trc_inference_begin();
        trc_layer_begin(0u, TRC_ENGINE_CPU);
        trc_layer_end(0u);
        trc_inference_end(0u);
        (void)trc_flush();
    } else if (strcmp(mode, "long_drop") == 0) {
        trc_use_writer(capture, 0);
        trc_set_drain(TRC_DRAIN_DEFERRED);
        trc_inference_begin();
        (void)trc_flush();
        for (uint32_t i = 0; i < 368u; i++) { /* 68 fit (15 bytes each), 300 do not */
            trc_mark(i);
        }
        (void)trc_flush();
        trc_inference_end(0u);
        trc_inference_begin();
        trc_inference_end(0u);
        (void)trc_flush();
    } else if (strcmp(mode, "writer") == 0) {
        trc_use_writer(capture, 0);
        sequence(0);
    } else if (strcmp(mode, "consumer") == 0) {
        trc_use_consumer(kick, 0);
        sequence(consume);
        printf("kicks=%u\n", (unsigned)g_kicks);
    } else if (strcmp(mode, "nested") == 0) {
        trc_use_writer(capture, 0);
        trc_inference_begin();
        trc_layer_begin(0u, TRC_ENGINE_CPU);
        g_nest_in_writer = 1;
        trc_layer_end(0u);
        trc_layer_begin(1u, TRC_ENGINE_CPU);
        g_nest_in_clock = 1;
        trc_layer_end(1u);
        trc_inference_end(0u);
    } else if (strcmp(mode, "text_full") == 0) {
        trc_use_consumer(0, 0);
        trc_set_drain(TRC_DRAIN_DEFERRED);
        for (uint32_t i = 0; i < 100u; i++) {
            trc_mark(i);
        }
        trc_print("lost");
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    printf("emitted=%u dropped=%u pending=%u text_dropped=%u\n", (unsigned)trc_emitted(), (unsigned)trc_dropped(),
           (unsigned)trc_pending(), (unsigned)trc_text_dropped());
    FILE *out = fopen(argv[2], "wb");
    if (out == 0 || fwrite(g_out, 1, g_len, out) != g_len || fclose(out) != 0) {
        fprintf(stderr, "cannot write %s\n", argv[2]);
        return 1;
    }
    return 0;
}
