/*
 * What QEMU lacks for the cache-coherency scenarios: the NPU's view of the tensor arena in
 * memory, and the CPU's write-back data cache in front of it (32-byte lines, as on Cortex-M55).
 *
 * The CPU works on the arena itself (its cached view); the simulated NPU reads and writes the
 * memory view. A line the CPU writes is dirty until a clean (or an eviction) copies it to
 * memory; an invalidate makes the CPU's lines memory's again (dropping dirty data, as the
 * hardware does). Dirty lines are also written back at random when an NPU job starts, the way
 * a real cache evicts them under pressure: a missing clean then gives the NPU a mix of fresh
 * and stale lines that changes from one inference to the next. Deterministic across runs.
 */
#ifndef DEMO_NPU_SIM_H
#define DEMO_NPU_SIM_H

#include <stdint.h>

#define SIM_CACHE_LINE 32u

void sim_reset(uint32_t seed);
int8_t *sim_npu_view(void);                              /* the arena as the NPU sees it */
void sim_cpu_wrote(uint32_t offset, uint32_t length);    /* CPU stores: lines become dirty */
void sim_clean(const int8_t *arena, uint32_t offset, uint32_t length);
void sim_invalidate(int8_t *arena, uint32_t offset, uint32_t length);
void sim_evict_some(const int8_t *arena);                /* random write-backs (at job start) */

/*
 * The simulated Ethos-U55 of the npu-sampling scenario: a register file in RAM laid out as the
 * NPU's (STATUS 0x004, QBASE 0x010, QREAD 0x018, QSIZE 0x020, PMCCNTR 0x1A0, PMEVCNTR 0x300),
 * read by the same code that reads a real NPU (trc_sampler.c, trc_ethosu_pmu.c). Its command
 * processor walks the real Vela command stream of model/sampling_stream.h, as a function of time
 * so that runs under -icount are identical:
 *
 * - it reads one command per NPU cycle; a kernel operation (NPU_OP_CONV, _DEPTHWISE, _POOL,
 *   _ELEMENTWISE) starts when the previous one has ended, and while an operation runs the
 *   processor reads ahead and waits at the next kernel command (or at NPU_OP_STOP after the
 *   last): QREAD lies after the running operation's kernel command, up to the next one;
 * - before the first operation the stream's opening weight transfer runs (SAMPLING_SETUP_CYCLES
 *   of operation 0), the processor waiting at its NPU_OP_DMA_WAIT;
 * - operation k lasts k_sampling_ops[k].npu_cycles NPU cycles of SAMPLING_TICKS_PER_NPU_CYCLE
 *   time-base ticks each; its PMU event counters grow evenly over it; PMCCNTR counts NPU cycles
 *   from the job's start; at the end STATUS says stopped, IRQ raised, command end reached.
 */
int sim_npu_init(void);                  /* parses the stream: its kernel operations, or -1 */
uintptr_t sim_npu_base(void);            /* the register file */
void sim_npu_start(uint64_t now);        /* QBASE, QSIZE set, counters reset, running from `now` */
int sim_npu_busy(uint64_t now);          /* 1 until the last operation has ended */
void sim_npu_update(uint64_t now);       /* the registers as they are at `now` */

#endif
