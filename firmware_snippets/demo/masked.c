/* The masked-time measurement build's bookkeeping (see masked.h). */
#include "masked.h"

#include "trc.h"

#define SITES (TRC_SITES + 1u) /* the library's sites, then the empty calibration section */
#define SITE_EMPTY TRC_SITES

static uint32_t g_longest[SITES];
static uint32_t g_sections[SITES];

/* SysTick counts down and wraps at 2^24 (the time base's reload). */
void masked_note(uint32_t site, uint32_t begin, uint32_t end)
{
    uint32_t ticks = (begin - end) & 0xFFFFFFu;
    if (ticks > g_longest[site]) {
        g_longest[site] = ticks;
    }
    g_sections[site]++;
}

void masked_report(void)
{
    static const char *const names[SITES] = {"reserve", "commit", "raw", "drain", "empty"};
    for (uint32_t i = 0; i < 16u; i++) {
        TRC_LOCK();
        uint32_t probe = TRC_MASKED_PROBE_BEGIN();
        TRC_MASKED_PROBE_END(SITE_EMPTY, probe);
        TRC_UNLOCK();
    }
    uint32_t longest[SITES];
    uint32_t sections[SITES];
    for (uint32_t site = 0; site < SITES; site++) { /* printing masks too: report a snapshot */
        longest[site] = g_longest[site];
        sections[site] = g_sections[site];
    }
    for (uint32_t site = 0; site < SITES; site++) {
        trc_print("MASKED site=");
        trc_print(names[site]);
        trc_print(" longest_ticks=");
        trc_print_u32(longest[site]);
        trc_print(" sections=");
        trc_print_u32(sections[site]);
        trc_print("\n");
        (void)trc_flush();
    }
}
