/* The masked-time measurement build's bookkeeping (see masked.h). */
#include "masked.h"

#include "trc.h"

#define SITES (TRC_SITES + 1u) /* the library's sites, then the empty calibration section */
#define SITE_EMPTY TRC_SITES

#define MODES 2u /* 0: the demo's deferred drain, 1: draining on emit (an exercise at the end) */

static uint32_t g_mode;
static uint32_t g_longest[MODES][SITES];
static uint32_t g_sections[MODES][SITES];

/* SysTick counts down and wraps at 2^24 (the time base's reload). */
void masked_note(uint32_t site, uint32_t begin, uint32_t end)
{
    uint32_t ticks = (begin - end) & 0xFFFFFFu;
    if (ticks > g_longest[g_mode][site]) {
        g_longest[g_mode][site] = ticks;
    }
    g_sections[g_mode][site]++;
}

/* Draining on emit, as a user who never calls trc_flush() has it: layers, marks, text. */
static void masked_exercise_on_emit(void)
{
    (void)trc_flush();
    g_mode = 1u;
    trc_set_drain(TRC_DRAIN_ON_EMIT);
    for (uint32_t i = 0; i < 64u; i++) {
        trc_layer_begin(TRC_LAYER_CALIBRATION, TRC_ENGINE_CPU);
        trc_value(0x0E0Eu, i);
        trc_layer_end(TRC_LAYER_CALIBRATION);
    }
    trc_print("on emit\n");
    trc_set_drain(TRC_DRAIN_DEFERRED);
    g_mode = 0u;
}

/* Fill the ring past full without draining, so that the drop path is measured too. */
static uint32_t masked_exercise_drops(void)
{
    uint32_t before = trc_dropped();
    (void)trc_flush();
    for (uint32_t i = 0; i < TRC_RING_BYTES / 15u + 8u; i++) {
        trc_mark(i);
    }
    (void)trc_flush();
    return trc_dropped() - before;
}

void masked_report(void)
{
    static const char *const names[SITES] = {"reserve", "commit", "raw", "drain", "empty"};
    uint32_t drops = masked_exercise_drops();
    masked_exercise_on_emit();
    for (uint32_t i = 0; i < 16u; i++) {
        TRC_LOCK();
        uint32_t probe = TRC_MASKED_PROBE_BEGIN();
        TRC_MASKED_PROBE_END(SITE_EMPTY, probe);
        TRC_UNLOCK();
    }
    static const char *const modes[MODES] = {"deferred", "on_emit"};
    uint32_t longest[MODES][SITES];
    uint32_t sections[MODES][SITES];
    for (uint32_t mode = 0; mode < MODES; mode++) { /* printing masks too: report a snapshot */
        for (uint32_t site = 0; site < SITES; site++) {
            longest[mode][site] = g_longest[mode][site];
            sections[mode][site] = g_sections[mode][site];
        }
    }
    for (uint32_t mode = 0; mode < MODES; mode++) {
        for (uint32_t site = 0; site < SITES; site++) {
            trc_print("MASKED drain=");
            trc_print(modes[mode]);
            trc_print(" site=");
            trc_print(names[site]);
            trc_print(" longest_ticks=");
            trc_print_u32(longest[mode][site]);
            trc_print(" sections=");
            trc_print_u32(sections[mode][site]);
            trc_print("\n");
            (void)trc_flush();
        }
    }
    trc_print("MASKED drops_measured=");
    trc_print_u32(drops);
    trc_print("\n");
    (void)trc_flush();
}
