/*
 * trc sampler: what a periodic timer interrupt samples, as trc records.
 *
 *   NPU_SAMPLE    the Ethos-U command-stream read offset (QREAD), STATUS, the stream's base and
 *                 size (QBASE, QSIZE) and, if asked, the PMU cycle counter and event counters.
 *                 tracer maps QREAD through Vela's debug database to the operation running,
 *                 which turns one opaque NPU job into a statistical per-operator timeline.
 *   PC_SAMPLE     the program counter of the code the interrupt stopped (from its exception
 *                 frame): CPU hot spots per layer on targets without SWO PC sampling.
 *   SAMPLER_INFO  what is sampled, at what period, and the measured cost of one sample.
 *
 * The rate is yours: run any timer at the period you choose and call these from its handler.
 * Vary the period a little from one interrupt to the next (trc_sampler_next_period) so that
 * samples do not lock onto a periodic workload. Wire format: firmware_snippets/README.md.
 *
 * Cost (QEMU mps3-an547, -icount shift=0, in instructions, loop overhead removed; measured by
 * `make cost` / sampler_cost.elf and reported at startup by trc_sampler_measure_cost): see the
 * table in firmware_snippets/README.md.
 */
#ifndef TRC_SAMPLER_H
#define TRC_SAMPLER_H

#include <stdint.h>

#include "trc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Ethos-U register offsets from the NPU base (U55, U65 and U85 alike for these). */
#define TRC_NPU_STATUS 0x004u
#define TRC_NPU_QBASE 0x010u     /* low 32 bits of the command stream's address */
#define TRC_NPU_QREAD 0x018u     /* byte offset of the command under execution */
#define TRC_NPU_QSIZE 0x020u     /* the command stream's size in bytes */
#define TRC_NPU_STATUS_RUNNING 1u /* STATUS bit 0: 1 running, 0 stopped */

/* NPU_SAMPLE word 5 (flags | PMCCNTR bits 32-47 << 16). */
#define TRC_NPU_SAMPLE_COUNTERS_MASK 0xFu /* event counters that follow (0..8) */
#define TRC_NPU_SAMPLE_CYCLES 0x10u       /* word 6 is PMCCNTR bits 0-31 */
#define TRC_SAMPLE_CALIBRATION 0x100u     /* taken by trc_sampler_measure_cost(): not a sample */
/* PC_SAMPLE word 2: the exception active when interrupted (bits 0-8, 0 thread) | flags */
#define TRC_PC_SAMPLE_CALIBRATION (1u << 16)

/* SAMPLER_INFO word 1 */
#define TRC_SAMPLER_NPU 1u        /* NPU_SAMPLE records are taken */
#define TRC_SAMPLER_PC 2u         /* PC_SAMPLE records are taken */
#define TRC_SAMPLER_TIMER (1u << 8) /* from a timer interrupt (bits 8-15: how) */

typedef struct trc_npu_sampler {
    uintptr_t npu_base; /* the Ethos-U's register base */
    uint32_t npu;       /* 55, 65 or 85 (the U85's PMU registers sit 0x1000 higher) */
    uint32_t counters;  /* PMU event counters to read, 0..8 (as configured by trc_pmu_config) */
    uint32_t cycles;    /* 1: read the PMU cycle counter PMCCNTR too */
} trc_npu_sampler;

/* Fill `sampler`; `counters` is limited to the NPU's (4 on U55/U65, 8 on U85). */
void trc_npu_sampler_init(trc_npu_sampler *sampler, uintptr_t npu_base, uint32_t npu, uint32_t counters,
                          uint32_t cycles);

/* Read QREAD, STATUS, QBASE, QSIZE (and the PMU counters asked for) and emit an NPU_SAMPLE.
 * Call it from your timer interrupt while an NPU job may run (e.g. armed between the driver's
 * ethosu_inference_begin and _end): a sample with STATUS stopped says the NPU was idle. */
uint32_t trc_npu_sample(const trc_npu_sampler *sampler); /* returns the time it stamped */

/* Emit a PC_SAMPLE for the code an exception interrupted. `frame` is the exception frame the
 * hardware stacked (r0-r3, r12, lr, pc, xpsr), `exc_return` the handler's entry LR; use
 * TRC_PC_SAMPLING_HANDLER to get both. */
uint32_t trc_pc_sample_frame(const uint32_t *frame, uint32_t exc_return);
/* The same from values you have: the PC and the exception number that was active (0 thread). */
uint32_t trc_pc_sample(uint32_t pc, uint32_t exception);

/* Say what is sampled (TRC_SAMPLER_* bits), the nominal period and its dither in time-base ticks,
 * and the cost of one interrupt's samples in 1/16 ticks (TRC_MARKER_COST_UNKNOWN if unknown). */
void trc_sampler_info(uint32_t what, uint32_t period_ticks, uint32_t dither_ticks, uint32_t cost_q4);

/* Times `rounds` rounds of what one interrupt does (an NPU sample if `npu` is not NULL, a PC
 * sample), each record flagged as calibration (the host ignores them), and returns the cost of
 * one round in 1/16 time-base ticks (the exception entry and return are not in it): put it in
 * trc_sampler_info. */
uint32_t trc_sampler_measure_cost(const trc_npu_sampler *npu, uint32_t rounds);

/* A period that varies uniformly over [period - dither/2, period + dither/2), so that samples do
 * not lock onto a periodic workload. Deterministic (xorshift) from `seed`. */
typedef struct trc_sample_period {
    uint32_t period;
    uint32_t dither;
    uint32_t state;
} trc_sample_period;

void trc_sample_period_init(trc_sample_period *p, uint32_t period, uint32_t dither, uint32_t seed);
uint32_t trc_sampler_next_period(trc_sample_period *p);

#if defined(__arm__) && defined(__thumb2__)
/* Defines the interrupt handler `handler` that calls `c_function(const uint32_t *frame, uint32_t
 * exc_return)` with the exception frame of the interrupted code (main or process stack, as
 * EXC_RETURN says) and returns from the exception when c_function returns. c_function must be
 * an external (non-static) function. Armv7-M and Armv8-M Mainline. */
#define TRC_PC_SAMPLING_HANDLER(handler, c_function)                                             \
    __attribute__((naked)) void handler(void)                                                    \
    {                                                                                            \
        __asm volatile("tst lr, #4\n\t"                                                          \
                       "ite eq\n\t"                                                              \
                       "mrseq r0, msp\n\t"                                                       \
                       "mrsne r0, psp\n\t"                                                       \
                       "mov r1, lr\n\t"                                                          \
                       "b " #c_function "\n\t");                                                \
    }
#endif

#ifdef __cplusplus
}
#endif

#endif /* TRC_SAMPLER_H */
