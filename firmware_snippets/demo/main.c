/*
 * tracer demo firmware for QEMU mps3-an547 (Cortex-M55).
 *
 * Protocol on UART0 (everything the firmware sends is ITM packets; text goes on port 0):
 *   firmware: "tracer-demo mps3-an547 READY"
 *   host:     "START <inferences> [<scenario>]\n"
 *   firmware: target info, PMU configuration, layer descriptions, arena use, then per
 *             inference: input CRC, 10 layers (NPU layers with cache clean/invalidate, NPU job
 *             and a simulated PMU snapshot), output CRC, stack reports; at the end its own
 *             per-layer cycle totals as text ("TOTAL layer=... count=... cycles=...") and
 *             "EXIT 0", then QEMU exits through semihosting with the status.
 *
 * Time is SysTick on the processor clock extended to 64 bits, re-zeroed at START so that runs
 * under `qemu-system-arm -icount shift=0` are identical.
 */
#include "board.h"
#include "net.h"
#include "trc.h"

#define CALIBRATION_PAIRS 256u
#define MAX_INFERENCES 1000000u

__attribute__((section(".sram"), aligned(32))) static int8_t g_arena[NET_ARENA_BYTES];

/* Ethos-U55 events the simulated PMU reports (hardware event numbers, as MLEK configures). */
static const uint16_t k_pmu_events[4] = {
    35u,  /* NPU_ACTIVE */
    130u, /* AXI0_RD_DATA_BEAT_RECEIVED */
    135u, /* AXI0_WR_DATA_BEAT_WRITTEN */
    386u, /* AXI1_RD_DATA_BEAT_RECEIVED */
};

/* Scenarios: only "clean" so far; fault scenarios take the next ids. */
typedef struct scenario {
    const char *name;
    uint32_t id;
} scenario;

static const scenario k_scenarios[] = {{"clean", 0u}};

static uint64_t g_layer_cycles[NET_LAYERS];
static uint32_t g_layer_count[NET_LAYERS];
static uint32_t g_npu_job;

static int text_equal(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

/* Reads "START <n> [<scenario>]"; returns 0 and fills the values, or -1. */
static int read_start(uint32_t *inferences, uint32_t *scenario_id)
{
    char line[64];
    uint32_t length = 0u;
    for (;;) {
        char c = (char)uart_getc();
        if (c == '\n' || c == '\r') {
            if (length != 0u) {
                break;
            }
            continue;
        }
        if (length < sizeof line - 1u) {
            line[length++] = c;
        }
    }
    line[length] = '\0';
    if (length < 5u || line[0] != 'S' || line[1] != 'T' || line[2] != 'A' || line[3] != 'R' || line[4] != 'T') {
        return -1;
    }
    uint32_t i = 5u;
    uint32_t n = 0u;
    while (line[i] == ' ') {
        i++;
    }
    while (line[i] >= '0' && line[i] <= '9') {
        n = n * 10u + (uint32_t)(line[i] - '0');
        i++;
    }
    while (line[i] == ' ') {
        i++;
    }
    *inferences = n;
    *scenario_id = 0u;
    if (line[i] == '\0') {
        return 0;
    }
    for (uint32_t s = 0; s < sizeof k_scenarios / sizeof k_scenarios[0]; s++) {
        if (text_equal(&line[i], k_scenarios[s].name)) {
            *scenario_id = k_scenarios[s].id;
            return 0;
        }
    }
    trc_print("ERROR unknown scenario ");
    trc_print(&line[i]);
    trc_print("\n");
    return -1;
}

/* What an Ethos-U55 PMU might count for this layer. QEMU has no NPU: the values are computed
 * from the layer's shape (and, for idle cycles, from how sparse its real output is) and the
 * capture says they are simulated. */
static void simulate_pmu(uint32_t index, trc_pmu_sample *sample)
{
    const net_layer *l = &g_net[index];
    uint32_t in_bytes = net_tensor_bytes(l->in_h, l->in_w, l->in_c);
    uint32_t out_bytes = net_tensor_bytes(l->out_h, l->out_w, l->out_c);
    uint32_t active = net_layer_macs(index) / 64u + out_bytes / 16u + 96u;
    uint32_t zeros = 0u;
    for (uint32_t i = 0; i < 64u && i < out_bytes; i++) {
        zeros += g_arena[l->out_off + i] == 0 ? 1u : 0u;
    }
    sample->cycles = active + 32u + zeros;
    sample->count = 4u;
    sample->flags = TRC_PMU_SINCE_RESET;
    sample->counters[0] = active;
    sample->counters[1] = in_bytes / 8u;
    sample->counters[2] = out_bytes / 8u;
    sample->counters[3] = (net_layer_weight_bytes(index) + 4u * l->out_c) / 8u;
}

static void run_layer(uint32_t index)
{
    const net_layer *l = &g_net[index];
    uint32_t begin = trc_layer_begin(index, l->engine);
    if (l->engine == TRC_ENGINE_NPU) {
        trc_pmu_sample sample;
        /* The CPU wrote the input: a real port cleans it before the NPU reads it, and
         * invalidates the output before the CPU reads it (QEMU models no cache). */
        trc_cache_op(TRC_CACHE_CLEAN, &g_arena[l->in_off], net_tensor_bytes(l->in_h, l->in_w, l->in_c));
        trc_npu_job_begin(g_npu_job);
        net_run_layer(index, g_arena);
        simulate_pmu(index, &sample);
        trc_pmu_snapshot(&sample);
        trc_npu_job_end(g_npu_job, 0u);
        g_npu_job++;
        trc_cache_op(TRC_CACHE_INVALIDATE, &g_arena[l->out_off], net_tensor_bytes(l->out_h, l->out_w, l->out_c));
    } else {
        net_run_layer(index, g_arena);
    }
    uint32_t end = trc_layer_end(index);
    g_layer_cycles[index] += (uint32_t)(end - begin);
    g_layer_count[index]++;
}

static void print_totals(void)
{
    trc_print("TOTALS firmware-measured cycles per layer\n");
    for (uint32_t i = 0; i < NET_LAYERS; i++) {
        trc_print("TOTAL layer=");
        trc_print_u32(i);
        trc_print(" count=");
        trc_print_u32(g_layer_count[i]);
        trc_print(" cycles=");
        trc_print_u64(g_layer_cycles[i]);
        trc_print("\n");
    }
}

int main(void)
{
    uint32_t inferences;
    uint32_t scenario_id;

    trc_use_writer(uart_write, 0);
    trc_time_systick_init(BOARD_CPU_HZ);
    net_init();
    trc_print("tracer-demo " BOARD_NAME " READY\n");
    if (read_start(&inferences, &scenario_id) != 0) {
        return 2;
    }
    if (inferences > MAX_INFERENCES) {
        inferences = MAX_INFERENCES;
    }
    /* Re-zero time at the host's command: how long we waited for it is host timing. */
    trc_time_systick_rezero();

    uint32_t cost = trc_measure_marker_cost(CALIBRATION_PAIRS);
    trc_target_info(TRC_INFO_NPU_PMU_SIMULATED | TRC_INFO_EMULATED, cost, scenario_id, SCB_CPUID);
    trc_pmu_config(55u, 4u, k_pmu_events, 1u);
    for (uint32_t i = 0; i < NET_LAYERS; i++) {
        trc_layer_info(i, g_net[i].engine, g_net[i].op, g_net[i].name);
    }
    trc_arena(NET_ARENA_PLANNED, NET_ARENA_BYTES);
    trc_print("running ");
    trc_print_u32(inferences);
    trc_print(" inferences\n");

    for (uint32_t n = 0; n < inferences; n++) {
        net_make_input(&g_arena[g_net[0].in_off], n);
        trc_inference_begin();
        trc_buffer_crc(TRC_BUFFER_INPUT, &g_arena[g_net[0].in_off], NET_INPUT_BYTES);
        for (uint32_t i = 0; i < NET_LAYERS; i++) {
            run_layer(i);
        }
        trc_buffer_crc(TRC_BUFFER_OUTPUT, &g_arena[g_net[NET_LAYERS - 1u].out_off], NET_OUTPUT_BYTES);
        trc_inference_end(0u);
        trc_stack_report(&g_stack_main);
        trc_stack_report(&g_stack_handler);
    }
    print_totals();
    trc_print("records emitted=");
    trc_print_u32(trc_emitted());
    trc_print(" dropped=");
    trc_print_u32(trc_dropped());
    trc_print("\nEXIT 0\n");
    return 0;
}
