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

#endif
