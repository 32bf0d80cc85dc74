/* The simulated D-cache and NPU memory view (see npu_sim.h). */
#include "npu_sim.h"

#include "model/sampling_stream.h"
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

/* ---- the simulated Ethos-U55 (npu-sampling scenario) --------------------------------------- */

#define NPU_REG_BYTES 0x400u
#define NPU_REG(offset) g_npu_regs[(offset) / 4u]
#define NPU_STATUS 0x004u
#define NPU_QBASE 0x010u
#define NPU_QBASE_HI 0x014u
#define NPU_QREAD 0x018u
#define NPU_QSIZE 0x020u
#define NPU_PMCCNTR_LO 0x1A0u
#define NPU_PMCCNTR_HI 0x1A4u
#define NPU_PMEVCNTR 0x300u
#define NPU_STATUS_RUNNING 1u
#define NPU_STATUS_IRQ_RAISED 2u
#define NPU_STATUS_CMD_END 0x20u
#define NPU_COUNTERS 4u
#define CMD_PAYLOAD 0x4000u /* one payload word follows */
#define CMD_OP_STOP 0x000u
#define CMD_OP_DMA_WAIT 0x011u
#define STREAM_BYTES (SAMPLING_STREAM_WORDS * 4u)

static volatile uint32_t g_npu_regs[NPU_REG_BYTES / 4u] __attribute__((aligned(16)));
static uint32_t g_kickoff[SAMPLING_OPS];     /* byte offset of each operation's kernel command */
static uint32_t g_wait_at[SAMPLING_OPS];     /* where the processor waits while it runs */
static uint32_t g_setup_wait_at;             /* ... during the opening weight transfer */
static uint32_t g_op_end[SAMPLING_OPS];      /* NPU cycle at which each operation ends */
static uint32_t g_counted[SAMPLING_OPS][NPU_COUNTERS]; /* counters at each operation's start */
static uint32_t g_total_counts[NPU_COUNTERS];
static uint64_t g_npu_start;

static uint32_t command_bytes(uint32_t offset)
{
    return (k_sampling_stream[offset / 4u] & CMD_PAYLOAD) ? 8u : 4u;
}

static uint32_t command_op(uint32_t offset)
{
    uint32_t word = k_sampling_stream[offset / 4u];
    return (word & CMD_PAYLOAD) ? 0xFFFFFFFFu : (word & 0x3FFu);
}

static int is_kernel_op(uint32_t op) { return op == 0x002u || op == 0x003u || op == 0x005u || op == 0x006u; }

/* The first command from `offset` on where the processor waits while an operation runs: a kernel
 * command, NPU_OP_STOP, or (`dma`) an NPU_OP_DMA_WAIT. */
static uint32_t next_wait(uint32_t offset, int dma)
{
    while (offset < STREAM_BYTES) {
        uint32_t op = command_op(offset);
        if (is_kernel_op(op) || op == CMD_OP_STOP || (dma && op == CMD_OP_DMA_WAIT)) {
            return offset;
        }
        offset += command_bytes(offset);
    }
    return STREAM_BYTES;
}

/* The command read `n` commands after `from`, or `wait_at` if the processor gets there first. */
static uint32_t read_ahead(uint32_t from, uint32_t n, uint32_t wait_at)
{
    uint32_t at = from;
    while (n > 0u && at < wait_at) {
        at += command_bytes(at);
        n--;
    }
    return at < wait_at ? at : wait_at;
}

int sim_npu_init(void)
{
    uint32_t found = 0u;
    for (uint32_t at = 0u; at < STREAM_BYTES; at += command_bytes(at)) {
        if (is_kernel_op(command_op(at))) {
            if (found == SAMPLING_OPS) {
                return -1;
            }
            g_kickoff[found++] = at;
        }
    }
    if (found != SAMPLING_OPS) {
        return -1;
    }
    g_setup_wait_at = next_wait(0u, 1);
    uint32_t cycle = 0u;
    for (uint32_t c = 0; c < NPU_COUNTERS; c++) {
        g_total_counts[c] = 0u;
    }
    for (uint32_t k = 0; k < SAMPLING_OPS; k++) {
        g_wait_at[k] = next_wait(g_kickoff[k] + 4u, 0);
        for (uint32_t c = 0; c < NPU_COUNTERS; c++) {
            g_counted[k][c] = g_total_counts[c];
            g_total_counts[c] += k_sampling_ops[k].counters[c];
        }
        cycle += k_sampling_ops[k].npu_cycles;
        g_op_end[k] = cycle;
    }
    return (int)found;
}

uintptr_t sim_npu_base(void) { return (uintptr_t)g_npu_regs; }

void sim_npu_start(uint64_t now)
{
    g_npu_start = now;
    NPU_REG(NPU_QBASE) = (uint32_t)(uintptr_t)k_sampling_stream;
    NPU_REG(NPU_QBASE_HI) = 0u;
    NPU_REG(NPU_QSIZE) = STREAM_BYTES;
    sim_npu_update(now);
}

static uint32_t npu_cycle(uint64_t now) { return (uint32_t)(now - g_npu_start) / SAMPLING_TICKS_PER_NPU_CYCLE; }

int sim_npu_busy(uint64_t now) { return npu_cycle(now) < g_op_end[SAMPLING_OPS - 1u]; }

void sim_npu_update(uint64_t now)
{
    uint32_t cycle = npu_cycle(now);
    uint32_t k = 0u;
    while (k < SAMPLING_OPS && cycle >= g_op_end[k]) {
        k++;
    }
    if (k == SAMPLING_OPS) {
        NPU_REG(NPU_QREAD) = STREAM_BYTES;
        NPU_REG(NPU_PMCCNTR_LO) = g_op_end[SAMPLING_OPS - 1u];
        for (uint32_t c = 0; c < NPU_COUNTERS; c++) {
            NPU_REG(NPU_PMEVCNTR + 4u * c) = g_total_counts[c];
        }
        NPU_REG(NPU_STATUS) = NPU_STATUS_IRQ_RAISED | NPU_STATUS_CMD_END;
        return;
    }
    uint32_t within = cycle - (k == 0u ? 0u : g_op_end[k - 1u]);
    uint32_t qread;
    if (k == 0u && within < SAMPLING_SETUP_CYCLES) {
        qread = read_ahead(0u, within, g_setup_wait_at);
    } else {
        uint32_t running = within - (k == 0u ? SAMPLING_SETUP_CYCLES : 0u);
        qread = read_ahead(g_kickoff[k] + 4u, running, g_wait_at[k]);
    }
    NPU_REG(NPU_QREAD) = qread;
    NPU_REG(NPU_PMCCNTR_LO) = cycle;
    NPU_REG(NPU_PMCCNTR_HI) = 0u;
    for (uint32_t c = 0; c < NPU_COUNTERS; c++) {
        uint32_t part = (uint32_t)((uint64_t)k_sampling_ops[k].counters[c] * within / k_sampling_ops[k].npu_cycles);
        NPU_REG(NPU_PMEVCNTR + 4u * c) = g_counted[k][c] + part;
    }
    NPU_REG(NPU_STATUS) = NPU_STATUS_RUNNING;
}
