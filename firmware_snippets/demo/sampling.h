/*
 * The npu-sampling scenario of the demo firmware ("START <n> npu-sampling <rate in Hz>"): after
 * the demo network's ten layers, every inference runs sampling_net's Vela command stream as one
 * NPU job (layer 10, "ethos-u") on the simulated NPU (npu_sim.h), while SSE-300 timer 0 interrupts
 * at the rate the host asked for (period dithered +-25%) and samples the NPU (QREAD, STATUS,
 * QBASE, QSIZE, PMU) during the job and the interrupted PC all the time (trc_sampler.h).
 */
#ifndef DEMO_SAMPLING_H
#define DEMO_SAMPLING_H

#include <stdint.h>

#define SAMPLING_LAYER 10u           /* the NPU job's layer index (after the network's ten) */
#define SAMPLING_DEFAULT_HZ 1000u
#define SAMPLING_MAX_HZ 100000u

/* Describes layer 10, measures and reports the sampler's cost, starts the timer.
 * Returns 0, or -1 (rate out of range, stream unusable: a message says which). */
int sampling_start(uint32_t rate_hz);
void sampling_stop(void);
/* One NPU job: layer 10 begin, job begin, the simulated NPU runs the stream while the CPU waits,
 * PMU snapshot, job end, layer end. */
void sampling_npu_job(uint32_t job);

#endif
