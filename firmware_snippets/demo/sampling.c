/* The npu-sampling scenario (see sampling.h). */
#include "sampling.h"

#include "board.h"
#include "npu_sim.h"
#include "trc.h"
#include "trc_sampler.h"

/* SSE-300 timer 0: compares against the 64-bit system counter (32 MHz on QEMU's an547, the
 * processor clock: one count per SysTick tick); IRQ 3. The counter must be enabled first. */
#define SYSCOUNTER_CNTCR REG32(0x58100000u)
#define TIMER0_BASE 0x48000000u
#define TIMER0_CNTPCT_LO REG32(TIMER0_BASE + 0x00u)
#define TIMER0_CNTPCT_HI REG32(TIMER0_BASE + 0x04u)
#define TIMER0_CVAL_LO REG32(TIMER0_BASE + 0x20u)
#define TIMER0_CVAL_HI REG32(TIMER0_BASE + 0x24u)
#define TIMER0_CTL REG32(TIMER0_BASE + 0x2Cu)
#define TIMER0_IRQ 3u
#define NVIC_ISER0 REG32(0xE000E100u)
#define NVIC_ICER0 REG32(0xE000E180u)
#define NVIC_ICPR0 REG32(0xE000E280u)
#define CALIBRATION_ROUNDS 32u

static trc_npu_sampler g_npu;
static trc_sample_period g_period;
static uint64_t g_deadline;
static volatile uint32_t g_npu_armed;

static uint64_t counter_now(void)
{
    uint32_t hi;
    uint32_t lo;
    do {
        hi = TIMER0_CNTPCT_HI;
        lo = TIMER0_CNTPCT_LO;
    } while (hi != TIMER0_CNTPCT_HI);
    return ((uint64_t)hi << 32) | lo;
}

/* Absolute deadlines (no drift from the handler's latency); the high word is written first so
 * that the compare value never passes below the counter on the way (no spurious interrupt).
 * Deadlines fall on multiples of 4 counts: QEMU's timer model turns counts into whole
 * nanoseconds (31.25 ns per count) and, between two, can fire where the compare does not hold
 * yet and re-arm at the same instant forever. */
static void schedule_next(void)
{
    g_deadline = (g_deadline + trc_sampler_next_period(&g_period)) & ~(uint64_t)3u;
    TIMER0_CVAL_HI = (uint32_t)(g_deadline >> 32);
    TIMER0_CVAL_LO = (uint32_t)g_deadline;
}

/* Called by Sampling_Timer_Handler with the interrupted code's exception frame. */
void sampling_tick(const uint32_t *frame, uint32_t exc_return);
void sampling_tick(const uint32_t *frame, uint32_t exc_return)
{
    schedule_next();
    if (g_npu_armed) {
        sim_npu_update(trc_time_systick_now64());
        (void)trc_npu_sample(&g_npu);
    }
    (void)trc_pc_sample_frame(frame, exc_return);
}

TRC_PC_SAMPLING_HANDLER(Sampling_Timer_Handler, sampling_tick)

int sampling_start(uint32_t rate_hz)
{
    if (rate_hz == 0u) {
        rate_hz = SAMPLING_DEFAULT_HZ;
    }
    if (rate_hz > SAMPLING_MAX_HZ || sim_npu_init() < 0) {
        trc_print("ERROR npu-sampling: rate must be 1..100000 Hz and the stream must parse\n");
        return -1;
    }
    uint32_t period = BOARD_CPU_HZ / rate_hz; /* >= 320 counts */
    trc_layer_info(SAMPLING_LAYER, TRC_ENGINE_NPU, "ethos-u", "sampling_net");
    trc_npu_sampler_init(&g_npu, sim_npu_base(), 55u, 4u, 1u);
    trc_sample_period_init(&g_period, period, period / 2u, 0x5EED1234u);
    uint32_t cost = trc_sampler_measure_cost(&g_npu, CALIBRATION_ROUNDS);
    trc_sampler_info(TRC_SAMPLER_NPU | TRC_SAMPLER_PC | TRC_SAMPLER_TIMER, period, period / 2u, cost);
    SYSCOUNTER_CNTCR = 1u; /* EN */
    g_deadline = counter_now() & ~(uint64_t)3u;
    schedule_next();
    TIMER0_CTL = 1u; /* enabled, interrupt not masked */
    NVIC_ICPR0 = 1u << TIMER0_IRQ;
    NVIC_ISER0 = 1u << TIMER0_IRQ;
    return 0;
}

void sampling_stop(void)
{
    NVIC_ICER0 = 1u << TIMER0_IRQ;
    TIMER0_CTL = 0u;
}

/* What the CPU does while the NPU runs the job: polls for its end now and then (the delay
 * between polls keeps QEMU from emulating a device read every few instructions, which is slow). */
__attribute__((noinline)) static void wait_for_npu(void)
{
    while (sim_npu_busy(trc_time_systick_now64())) {
        for (volatile uint32_t i = 0; i < 128u; i++) {
        }
    }
}

void sampling_npu_job(uint32_t job)
{
    trc_pmu_sample sample;
    (void)trc_layer_begin(SAMPLING_LAYER, TRC_ENGINE_NPU);
    trc_npu_job_begin(job);
    sim_npu_start(trc_time_systick_now64());
    g_npu_armed = 1u;
    wait_for_npu();
    g_npu_armed = 0u;
    sim_npu_update(trc_time_systick_now64());
    trc_ethosu_pmu_read(sim_npu_base(), 55u, 4u, &sample);
    trc_pmu_snapshot(&sample);
    trc_npu_job_end(job, 0u);
    (void)trc_layer_end(SAMPLING_LAYER);
}
