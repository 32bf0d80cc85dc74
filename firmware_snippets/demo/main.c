/*
 * tracer demo firmware for QEMU mps3-an547 (Cortex-M55).
 *
 * Protocol on UART0 (everything the firmware sends is ITM packets; text goes on port 0):
 *   firmware: "tracer-demo mps3-an547 READY"
 *   host:     "START <inferences> [<scenario> [slow=<layer name>:<per mille>] [sync]]\n"
 *   firmware: target info, PMU configuration, layer descriptions, arena use, then per
 *             inference: input CRC, 10 layers (NPU layers with their buffers, cache clean and
 *             invalidate, NPU job and a simulated PMU snapshot; CPU layers with the buffers they
 *             read and write), output CRC, stack reports; at the end its own per-layer cycle
 *             totals as text ("TOTAL layer=... count=... cycles=...") and "EXIT 0", then QEMU
 *             exits through semihosting with the status.
 *
 * Scenarios (the fault is in the capture; the demo itself exits 0):
 *   clean            nothing wrong
 *   isr-jitter       the S32K timer (exception 18, "S32K_TIMER") fires inside layer 4 (pw4)
 *                    in every 4th inference (1, 5, 9 ...) and its handler runs for about as
 *                    long as the layer itself
 *   missing-clean    the same input frame every inference, and the cache clean of the input
 *                    before layer 0's NPU job (conv0) is left out: the NPU reads a mix of fresh
 *                    and stale lines (simulated cache, npu_sim.h), so outputs differ
 *   stack-overflow   layer 6 (pool6) of inference 2 puts a scratch buffer on the main stack
 *                    that runs 64 bytes past its canary; the canary is checked after every
 *                    layer and reported (STACK record) inside the layer that broke it
 *   arena-too-small  a 12 KiB arena for a 13 KiB plan: the allocation fails as in TFLite Micro
 *                    ("Failed to resize buffer. Requested: ..., available ..."), no inference
 *   task-preemption  the sensor task (tasks.h) preempts layer 2 (pw2) in every 4th inference
 *                    (2, 6, 10 ...): the S32K timer's handler wakes it, PendSV switches to it,
 *                    it works about half as long as the layer and switches back
 *   data-dependent   a detection post-process runs after the network as layer 10 (detect10,
 *                    postproc.h); every 3rd frame (2, 5, 8 ...) has an object in it, so more
 *                    candidates: more work by design, reported with trc_layer_work()
 *   npu-sampling     "START <n> npu-sampling <Hz>": after the ten layers, a Vela-compiled model
 *                    runs as one NPU job (layer 10) on the simulated NPU while a timer samples
 *                    QREAD/STATUS/PMU and the interrupted PC at <Hz> (sampling.h)
 *
 * Two tasks in every scenario: the inference task (main) and the sensor task, which only the
 * task-preemption scenario wakes. Records are drained deferred: trc_flush() runs between layers
 * (outside their spans) and after each inference, so a layer's span holds only the reservations
 * (npu-sampling sends them as they are made: its timer emits more than the ring holds).
 *
 * slow=<layer name>:<per mille> (tracer demo --slow) makes that layer slower by the given per mille
 * of its own time, in every inference: a build with a known regression in one layer.
 *
 * Time is SysTick on the processor clock extended to 64 bits, re-zeroed at START so that runs
 * under `qemu-system-arm -icount shift=0` are identical.
 */
#include "board.h"
#include "net.h"
#include "npu_sim.h"
#include "postproc.h"
#include "sampling.h"
#include "tasks.h"
#include "trc.h"

#define CALIBRATION_PAIRS 256u
#define MAX_INFERENCES 1000000u

#define JITTER_LAYER 4u          /* pw4 */
#define JITTER_EVERY 4u          /* inferences 1, 5, 9 ... */
#define JITTER_DELAY 6u          /* 32 kHz ticks into the layer: about 6000 SysTick ticks */
#define JITTER_WORK_LOOPS 90000u
#define STALE_INPUT_LAYER 0u     /* missing-clean: conv0's input */
#define OVERFLOW_LAYER 6u        /* pool6 */
#define OVERFLOW_INFERENCE 2u
#define OVERFLOW_BYTES 64u       /* past the main stack's base, into the guard below it */
#define SMALL_ARENA_BYTES 12288u
#define PREEMPTED_LAYER 2u       /* task-preemption: pw2 ... */
#define PREEMPT_EVERY 4u         /* ... in inferences 2, 6, 10 ... */
#define PREEMPT_AT 2u
#define SENSOR_WORK_LOOPS 50000u /* the sensor task's work: about half of pw2 */
#define SENSOR_READING 0x5E45u   /* its trc_value id */
#define OBJECT_EVERY 3u          /* data-dependent: frames 2, 5, 8 ... have an object */
#define OBJECT_AT 2u
#define ALL_LAYERS (NET_LAYERS + 1u) /* the network and the post-process */

__attribute__((section(".sram"), aligned(32))) static int8_t g_arena[NET_ARENA_BYTES];

/* Ethos-U55 events the simulated PMU reports (hardware event numbers, as MLEK configures). */
static const uint16_t k_pmu_events[4] = {
    35u,  /* NPU_ACTIVE */
    130u, /* AXI0_RD_DATA_BEAT_RECEIVED */
    135u, /* AXI0_WR_DATA_BEAT_WRITTEN */
    386u, /* AXI1_RD_DATA_BEAT_RECEIVED */
};

enum scenario_id {
    SCENARIO_CLEAN = 0,
    SCENARIO_ISR_JITTER = 1,
    SCENARIO_MISSING_CLEAN = 2,
    SCENARIO_STACK_OVERFLOW = 3,
    SCENARIO_ARENA_TOO_SMALL = 4,
    SCENARIO_TASK_PREEMPTION = 5,
    SCENARIO_DATA_DEPENDENT = 6,
    SCENARIO_NPU_SAMPLING = 7
};

typedef struct scenario {
    const char *name;
    uint32_t id;
} scenario;

static const scenario k_scenarios[] = {
    {"clean", SCENARIO_CLEAN},
    {"isr-jitter", SCENARIO_ISR_JITTER},
    {"missing-clean", SCENARIO_MISSING_CLEAN},
    {"stack-overflow", SCENARIO_STACK_OVERFLOW},
    {"arena-too-small", SCENARIO_ARENA_TOO_SMALL},
    {"task-preemption", SCENARIO_TASK_PREEMPTION},
    {"data-dependent", SCENARIO_DATA_DEPENDENT},
    {"npu-sampling", SCENARIO_NPU_SAMPLING},
};

static uint64_t g_layer_cycles[ALL_LAYERS];
static uint32_t g_layer_count[ALL_LAYERS];
static uint32_t g_npu_job;
static uint32_t g_scenario;
static uint32_t g_scenario_arg; /* the number after the scenario's name, 0 if none */
static uint32_t g_sync_pin;     /* "sync": trc_sync_pin before each inference (tracer demo --power) */
static volatile uint32_t g_pin_level; /* QEMU has no meter: the level stands in for a GPIO */
static uint32_t g_canary_reported;
static uint32_t g_slow_layer = 0xFFFFFFFFu; /* none */
static uint32_t g_slow_permille;
static volatile uint32_t g_sensor_sum;

static int text_equal(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

/* "slow=<layer name>:<per mille>": which layer to make slower, by how much; 0, or -1 if malformed. */
static int read_slow(char *text)
{
    static const char prefix[] = "slow=";
    for (uint32_t i = 0; i < sizeof prefix - 1u; i++) {
        if (text[i] != prefix[i]) {
            return -1;
        }
    }
    char *name = &text[sizeof prefix - 1u];
    char *colon = name;
    while (*colon != '\0' && *colon != ':') {
        colon++;
    }
    if (*colon != ':' || colon[1] < '0' || colon[1] > '9') {
        return -1;
    }
    *colon = '\0';
    uint32_t permille = 0u;
    for (char *d = colon + 1; *d != '\0'; d++) {
        if (*d < '0' || *d > '9') {
            return -1;
        }
        permille = permille * 10u + (uint32_t)(*d - '0');
    }
    for (uint32_t l = 0; l < NET_LAYERS; l++) {
        if (text_equal(name, g_net[l].name)) {
            g_slow_layer = l;
            g_slow_permille = permille;
            return 0;
        }
    }
    return -1;
}

static uint32_t parse_u32(const char *text)
{
    uint32_t n = 0u;
    while (*text >= '0' && *text <= '9') {
        n = n * 10u + (uint32_t)(*text++ - '0');
    }
    return n;
}

/* The sync pin a power meter would record on its digital input 0 (a GPIO on a board). */
static void set_sync_pin(void *ctx, uint32_t level)
{
    (void)ctx;
    g_pin_level = level;
}

/* Reads "START <n> [<scenario> [<number>] [slow=...] [sync]]"; returns 0 and fills the values, or -1. */
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
    for (uint32_t end = i; line[end] != '\0'; end++) {
        if (line[end] == ' ') {
            line[end] = '\0';
            /* What follows the scenario: its number (npu-sampling's rate) and slow=..., in any order. */
            for (char *token = &line[end + 1u]; *token != '\0';) {
                char *next = token;
                while (*next != '\0' && *next != ' ') {
                    next++;
                }
                if (*next == ' ') {
                    *next++ = '\0';
                }
                if (token[0] == 's' && token[1] == 'y') {
                    g_sync_pin = 1u;
                } else if (token[0] == 's') {
                    if (read_slow(token) != 0) {
                        trc_print("ERROR bad slow option ");
                        trc_print(token);
                        trc_print("\n");
                        return -1;
                    }
                } else {
                    g_scenario_arg = parse_u32(token);
                }
                token = next;
            }
            break;
        }
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
    const int8_t *npu_view = sim_npu_view();
    uint32_t zeros = 0u;
    for (uint32_t i = 0; i < 64u && i < out_bytes; i++) {
        zeros += npu_view[l->out_off + i] == 0 ? 1u : 0u;
    }
    sample->cycles = active + 32u + zeros;
    sample->count = 4u;
    sample->flags = TRC_PMU_SINCE_RESET;
    sample->counters[0] = active;
    sample->counters[1] = in_bytes / 8u;
    sample->counters[2] = out_bytes / 8u;
    sample->counters[3] = (net_layer_weight_bytes(index) + 4u * l->out_c) / 8u;
}

/* The sensor's work: a fixed number of loops (isr-jitter: in the handler; task-preemption: in the
 * sensor task). */
static uint32_t sensor_work(void)
{
    uint32_t sum = 0u;
    for (volatile uint32_t i = 0; i < SENSOR_WORK_LOOPS; i++) {
        sum += i;
    }
    return sum;
}

/* The sensor task: woken by the timer (task-preemption), works, reports, gives the CPU back. */
static void sensor_main(void)
{
    for (;;) {
        trc_value(SENSOR_READING, sensor_work());
        tasks_yield_to_inference();
    }
}

/* The S32K timer's handler. isr-jitter: it does "sensor work" itself for a fixed number of loops;
 * task-preemption: it only wakes the sensor task, which runs once the handler returns. */
void Timer_Handler(void)
{
    trc_isr_enter(BOARD_TIMER_EXCEPTION);
    timer_ack();
    if (g_scenario == SCENARIO_TASK_PREEMPTION) {
        tasks_switch_to(&g_task_sensor);
        trc_isr_exit(BOARD_TIMER_EXCEPTION);
        return;
    }
    uint32_t sum = 0u;
    for (volatile uint32_t i = 0; i < JITTER_WORK_LOOPS; i++) {
        sum += i;
    }
    g_sensor_sum = sum;
    trc_isr_exit(BOARD_TIMER_EXCEPTION);
}

/* stack-overflow: an operator that puts a scratch buffer on the stack, sized to end
 * OVERFLOW_BYTES below the stack's base (the canary, then the guard below the stack). */
__attribute__((noinline)) static uint32_t stack_scratch(uint32_t bytes)
{
    volatile uint8_t scratch[bytes];
    for (uint32_t i = 0; i < bytes; i++) {
        scratch[i] = (uint8_t)i;
    }
    return scratch[0] + scratch[bytes - 1u];
}

__attribute__((noinline)) static void overflow_main_stack(void)
{
    uintptr_t sp;
    __asm volatile("mov %0, sp" : "=r"(sp));
    uintptr_t base = (uintptr_t)g_stack_main.base;
    g_sensor_sum = stack_scratch((uint32_t)(sp - base) + OVERFLOW_BYTES);
}

/* What the fault scenarios do inside a layer (out of line, so that the clean run keeps its code). */
__attribute__((noinline)) static void scenario_layer_begins(uint32_t index, uint32_t inference)
{
    if (g_scenario == SCENARIO_ISR_JITTER && index == JITTER_LAYER && inference % JITTER_EVERY == 1u) {
        timer_fire_in(JITTER_DELAY);
    }
    if (g_scenario == SCENARIO_TASK_PREEMPTION && index == PREEMPTED_LAYER && inference % PREEMPT_EVERY == PREEMPT_AT) {
        timer_fire_in(JITTER_DELAY);
    }
}

__attribute__((noinline)) static void scenario_layer_ends(uint32_t index, uint32_t inference)
{
    if (g_scenario == SCENARIO_STACK_OVERFLOW) {
        if (index == OVERFLOW_LAYER && inference == OVERFLOW_INFERENCE) {
            overflow_main_stack();
        }
        /* The canary, checked after every layer (a few instructions); reported the moment it
         * breaks, inside the layer that broke it. */
        if (!g_canary_reported && !trc_stack_canary_ok(&g_stack_main)) {
            trc_stack_report(&g_stack_main);
            g_canary_reported = 1u;
        }
    }
}

static int clean_left_out(uint32_t index)
{
    return g_scenario == SCENARIO_MISSING_CLEAN && index == STALE_INPUT_LAYER;
}

static void run_npu_layer(uint32_t index)
{
    const net_layer *l = &g_net[index];
    trc_pmu_sample sample;
    /* The NPU reads memory, not the CPU's cache: clean what the CPU wrote before the job ... */
    if (!clean_left_out(index)) {
        trc_cache_op(TRC_CACHE_CLEAN, &g_arena[l->in_off], net_tensor_bytes(l->in_h, l->in_w, l->in_c));
    }
    trc_npu_job_begin(g_npu_job);
    net_run_layer(index, sim_npu_view());
    simulate_pmu(index, &sample);
    trc_pmu_snapshot(&sample);
    trc_npu_job_end(g_npu_job, 0u);
    g_npu_job++;
    /* ... and invalidate what it wrote before the CPU reads it. */
    trc_cache_op(TRC_CACHE_INVALIDATE, &g_arena[l->out_off], net_tensor_bytes(l->out_h, l->out_w, l->out_c));
}

/* Before a layer's span: the buffers it reads and writes (for the host's coherency checks), and
 * the simulated cache's side of the clean an NPU layer records (npu_sim.h). The simulation's
 * bookkeeping runs outside the span so that layers measure the network's work, scenario or not;
 * nothing touches the buffers between here and the job, so the data the NPU sees is the same. */
__attribute__((noinline)) static void before_layer(uint32_t index)
{
    const net_layer *l = &g_net[index];
    uint32_t in_bytes = net_tensor_bytes(l->in_h, l->in_w, l->in_c);
    if (l->engine == TRC_ENGINE_NPU) {
        trc_npu_buffer(g_npu_job, TRC_NPU_READS, &g_arena[l->in_off], in_bytes);
        trc_npu_buffer(g_npu_job, TRC_NPU_WRITES, &g_arena[l->out_off], net_tensor_bytes(l->out_h, l->out_w, l->out_c));
        if (!clean_left_out(index)) {
            sim_clean(g_arena, l->in_off, in_bytes);
        }
        sim_evict_some(g_arena);
        return;
    }
    trc_cpu_read(&g_arena[l->in_off], in_bytes);
    if (l->kind == NET_ADD) {
        trc_cpu_read(&g_arena[l->in2_off], in_bytes);
    }
}

/* After a layer's span: the simulated cache's side of its invalidate or of the CPU's stores, and
 * the CPU's write mark. */
__attribute__((noinline)) static void after_layer(uint32_t index)
{
    const net_layer *l = &g_net[index];
    uint32_t out_bytes = net_tensor_bytes(l->out_h, l->out_w, l->out_c);
    if (l->engine == TRC_ENGINE_NPU) {
        sim_invalidate(g_arena, l->out_off, out_bytes);
        return;
    }
    sim_cpu_wrote(l->out_off, out_bytes);
    trc_cpu_write(&g_arena[l->out_off], out_bytes);
}

/* Send what the layer recorded, outside its span. */
__attribute__((noinline)) static void between_layers(uint32_t index)
{
    after_layer(index);
    (void)trc_flush();
}

static void run_layer(uint32_t index, uint32_t inference)
{
    const net_layer *l = &g_net[index];
    before_layer(index);
    uint32_t begin = trc_layer_begin(index, l->engine);
    if (g_scenario != SCENARIO_CLEAN) {
        scenario_layer_begins(index, inference);
    }
    if (l->engine == TRC_ENGINE_NPU) {
        run_npu_layer(index);
    } else {
        net_run_layer(index, g_arena);
    }
    if (g_scenario != SCENARIO_CLEAN) {
        scenario_layer_ends(index, inference);
    }
    if (index == g_slow_layer) { /* spin until the layer has taken (1000 + per mille) / 1000 of its time */
        uint32_t target = (uint32_t)((uint64_t)(trc_time_systick_now32() - begin) * (1000u + g_slow_permille) / 1000u);
        while (trc_time_systick_now32() - begin < target) {
        }
    }
    uint32_t end = trc_layer_end(index);
    between_layers(index);
    g_layer_cycles[index] += (uint32_t)(end - begin);
    g_layer_count[index]++;
}

/* The CPU writes inference n's input frame (missing-clean: the same frame every time, so that the
 * outputs should all agree). */
__attribute__((noinline)) static void write_input(uint32_t n)
{
    net_make_input(&g_arena[g_net[0].in_off], g_scenario == SCENARIO_MISSING_CLEAN ? 0u : n);
    if (g_scenario == SCENARIO_DATA_DEPENDENT && n % OBJECT_EVERY == OBJECT_AT) {
        postproc_draw_object(&g_arena[g_net[0].in_off]);
    }
    sim_cpu_wrote(g_net[0].in_off, NET_INPUT_BYTES);
    trc_cpu_write(&g_arena[g_net[0].in_off], NET_INPUT_BYTES);
}

/* data-dependent: the detection post-process as layer 10, with the work it did. */
__attribute__((noinline)) static void run_postproc(void)
{
    uint32_t kept;
    uint32_t begin = trc_layer_begin(POSTPROC_LAYER, TRC_ENGINE_CPU);
    trc_layer_work(POSTPROC_LAYER, postproc_run(g_arena, &kept));
    uint32_t end = trc_layer_end(POSTPROC_LAYER);
    (void)trc_flush();
    g_sensor_sum = kept;
    g_layer_cycles[POSTPROC_LAYER] += (uint32_t)(end - begin);
    g_layer_count[POSTPROC_LAYER]++;
}

/* What TFLite Micro prints when the arena cannot hold the memory plan. */
__attribute__((noinline)) static void report_arena_too_small(uint32_t needed, uint32_t available)
{
    trc_print("Failed to resize buffer. Requested: ");
    trc_print_u32(needed);
    trc_print(", available ");
    trc_print_u32(available);
    trc_print(", missing: ");
    trc_print_u32(needed - available);
    trc_print("\nAllocateTensors() failed\n");
}

static void print_totals(void)
{
    trc_print("TOTALS firmware-measured cycles per layer\n");
    for (uint32_t i = 0; i < ALL_LAYERS; i++) {
        if (g_layer_count[i] == 0u && i >= NET_LAYERS) {
            continue;
        }
        trc_print("TOTAL layer=");
        trc_print_u32(i);
        trc_print(" count=");
        trc_print_u32(g_layer_count[i]);
        trc_print(" cycles=");
        trc_print_u64(g_layer_cycles[i]);
        trc_print("\n");
        (void)trc_flush();
    }
}

int main(void)
{
    uint32_t inferences;
    uint32_t scenario_id;

    trc_use_writer(uart_write, 0);
    trc_set_drain(TRC_DRAIN_DEFERRED);
    trc_time_systick_init(BOARD_CPU_HZ);
    timer_init();
    net_init();
    trc_print("tracer-demo " BOARD_NAME " READY\n");
    (void)trc_flush();
    if (read_start(&inferences, &scenario_id) != 0) {
        (void)trc_flush(); /* the ERROR line read_start printed */
        return 2;
    }
    if (inferences > MAX_INFERENCES) {
        inferences = MAX_INFERENCES;
    }
    /* Re-zero time at the host's command: how long we waited for it is host timing. */
    trc_time_systick_rezero();
    g_scenario = scenario_id;
    sim_reset(0x1234567u);

    uint32_t cost = trc_measure_marker_cost(CALIBRATION_PAIRS);
    trc_target_info(TRC_INFO_NPU_PMU_SIMULATED | TRC_INFO_EMULATED, cost, scenario_id, SCB_CPUID);
    trc_pmu_config(55u, 4u, k_pmu_events, TRC_INFO_NPU_PMU_SIMULATED);
    for (uint32_t i = 0; i < NET_LAYERS; i++) {
        trc_layer_info(i, g_net[i].engine, g_net[i].op, g_net[i].name);
    }
    if (g_scenario == SCENARIO_DATA_DEPENDENT) {
        trc_layer_info(POSTPROC_LAYER, TRC_ENGINE_CPU, "DETECTION_POSTPROCESS", "detect10");
    }
    tasks_init(sensor_main);
    if (g_scenario == SCENARIO_ISR_JITTER || g_scenario == SCENARIO_TASK_PREEMPTION) {
        trc_isr_info(BOARD_TIMER_EXCEPTION, "S32K_TIMER");
    }
    if (g_scenario == SCENARIO_ARENA_TOO_SMALL) {
        report_arena_too_small(NET_ARENA_PLANNED, SMALL_ARENA_BYTES);
        inferences = 0u;
    } else {
        trc_arena(NET_ARENA_PLANNED, NET_ARENA_BYTES);
    }
    if (g_scenario == SCENARIO_NPU_SAMPLING) {
        /* The sampler's interrupt emits a record or two every period for the whole NPU job: more
         * than the ring holds between two drains. Its records are sent as they are made. */
        trc_set_drain(TRC_DRAIN_ON_EMIT);
        if (sampling_start(g_scenario_arg) != 0) {
            inferences = 0u;
        }
    }
    trc_print("running ");
    trc_print_u32(inferences);
    trc_print(" inferences\n");
    (void)trc_flush();

    for (uint32_t n = 0; n < inferences; n++) {
        write_input(n);
        if (g_sync_pin) {
            trc_sync_pin(set_sync_pin, 0, 0u);
        }
        trc_inference_begin();
        trc_buffer_crc(TRC_BUFFER_INPUT, &g_arena[g_net[0].in_off], NET_INPUT_BYTES);
        for (uint32_t i = 0; i < NET_LAYERS; i++) {
            run_layer(i, n);
        }
        if (g_scenario == SCENARIO_NPU_SAMPLING) {
            sampling_npu_job(g_npu_job++);
        }
        if (g_scenario == SCENARIO_DATA_DEPENDENT) {
            run_postproc();
        }
        trc_buffer_crc(TRC_BUFFER_OUTPUT, &g_arena[g_net[NET_LAYERS - 1u].out_off], NET_OUTPUT_BYTES);
        trc_inference_end(0u);
        trc_stack_report(&g_stack_main);
        trc_stack_report(&g_stack_handler);
        (void)trc_flush();
    }
    if (g_scenario == SCENARIO_NPU_SAMPLING) {
        sampling_stop();
    }
    print_totals();
    trc_print("records emitted=");
    trc_print_u32(trc_emitted());
    trc_print(" dropped=");
    trc_print_u32(trc_dropped());
    trc_print("\n");
#ifdef DEMO_MASKED
    masked_report();
#endif
    trc_print("EXIT 0\n");
    (void)trc_flush();
    return 0;
}
