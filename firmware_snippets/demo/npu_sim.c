/* The simulated D-cache and NPU memory view (see npu_sim.h). */
#include "npu_sim.h"

#include "net.h"

#define SIM_LINES (NET_ARENA_BYTES / SIM_CACHE_LINE)

__attribute__((section(".sram"), aligned(32))) static int8_t g_npu_view[NET_ARENA_BYTES];
static uint32_t g_dirty[SIM_LINES / 32u];
static uint32_t g_seed = 1u;

static uint32_t next_random(void)
{
    uint32_t x = g_seed;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    g_seed = x;
    return x;
}

void sim_reset(uint32_t seed)
{
    g_seed = seed ? seed : 1u;
    for (uint32_t i = 0; i < SIM_LINES / 32u; i++) {
        g_dirty[i] = 0u;
    }
}

int8_t *sim_npu_view(void) { return g_npu_view; }

static void copy_line(int8_t *to, const int8_t *from, uint32_t line)
{
    uint32_t at = line * SIM_CACHE_LINE;
    for (uint32_t i = 0; i < SIM_CACHE_LINE; i++) {
        to[at + i] = from[at + i];
    }
}

/* Lines [first, last] that hold any byte of [offset, offset + length), clipped to the arena. */
static int line_range(uint32_t offset, uint32_t length, uint32_t *first, uint32_t *last)
{
    if (length == 0u || offset >= NET_ARENA_BYTES) {
        return 0;
    }
    uint32_t end = offset + length > NET_ARENA_BYTES ? NET_ARENA_BYTES : offset + length;
    *first = offset / SIM_CACHE_LINE;
    *last = (end - 1u) / SIM_CACHE_LINE;
    return 1;
}

void sim_cpu_wrote(uint32_t offset, uint32_t length)
{
    uint32_t first, last;
    if (line_range(offset, length, &first, &last)) {
        for (uint32_t line = first; line <= last; line++) {
            g_dirty[line / 32u] |= 1u << (line % 32u);
        }
    }
}

void sim_clean(const int8_t *arena, uint32_t offset, uint32_t length)
{
    uint32_t first, last;
    if (line_range(offset, length, &first, &last)) {
        for (uint32_t line = first; line <= last; line++) {
            uint32_t bit = 1u << (line % 32u);
            if (g_dirty[line / 32u] & bit) {
                copy_line(g_npu_view, arena, line);
                g_dirty[line / 32u] &= ~bit;
            }
        }
    }
}

void sim_invalidate(int8_t *arena, uint32_t offset, uint32_t length)
{
    uint32_t first, last;
    if (line_range(offset, length, &first, &last)) {
        for (uint32_t line = first; line <= last; line++) {
            copy_line(arena, g_npu_view, line);
            g_dirty[line / 32u] &= ~(1u << (line % 32u));
        }
    }
}

void sim_evict_some(const int8_t *arena)
{
    for (uint32_t word = 0; word < SIM_LINES / 32u; word++) {
        uint32_t dirty = g_dirty[word];
        if (dirty == 0u) {
            continue;
        }
        uint32_t evict = dirty & next_random();
        for (uint32_t bit = 0; bit < 32u; bit++) {
            if (evict & (1u << bit)) {
                copy_line(g_npu_view, arena, word * 32u + bit);
            }
        }
        g_dirty[word] = dirty & ~evict;
    }
}
