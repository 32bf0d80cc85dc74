/*
 * trc: telemetry markers for microcontrollers running neural networks.
 *
 * C99, no heap, no libc. The firmware calls these functions; each call emits one *record* as ITM
 * software (SWIT) packets, either through the ITM stimulus ports (SWO on hardware) or through a
 * software encoder that hands the same ITM packet bytes to a write function you supply (UART,
 * RTT, semihosting). The host tool `tracer` decodes the records into inferences, layer spans,
 * NPU PMU deltas and memory samples. The wire format is specified in firmware_snippets/README.md.
 *
 * Every record carries the low 32 bits of a cycle counter, a sequence number, its payload length
 * and a 12-bit check, so that a lost or damaged record is detected on the host and never turns
 * into a plausible wrong number.
 *
 * Non-blocking: a record is *reserved* in a ring buffer (its time, sequence number and place)
 * with interrupts masked for a few dozen instructions, written into the ring with interrupts
 * enabled, and *drained* to the transport outside any lock: right away by the emitting code
 * (TRC_DRAIN_ON_EMIT, the default), or later by trc_flush() from a loop or idle hook, by your
 * UART's TX-empty interrupt or by a DMA (trc_tx_span()/trc_tx_done()). A full ring drops whole
 * records and counts them; the host sees the gap in the sequence numbers. The masked time per
 * record and how it was measured: docs/firmware.md.
 */
#ifndef TRC_H
#define TRC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- wire constants (the host decoder uses the same numbers) ---------------------------- */

#define TRC_WIRE_VERSION 1u

#ifndef TRC_PORT_TEXT
#define TRC_PORT_TEXT 0u    /* firmware console text (printf-style), 1..4 chars per packet */
#endif
#ifndef TRC_PORT_HEADER
#define TRC_PORT_HEADER 24u /* one 32-bit record header per record */
#endif
#ifndef TRC_PORT_DATA
#define TRC_PORT_DATA 25u   /* the record's payload words */
#endif

#define TRC_MAX_WORDS 24u   /* largest payload this library emits, in 32-bit words (the wire allows 63) */

/* The ring the records wait in (bytes, a power of two; at least the largest record, 125 bytes).
 * With TRC_DRAIN_ON_EMIT it only holds what interrupts emit while a record is being sent; with a
 * deferred drain it must hold everything emitted between two drains. */
#ifndef TRC_RING_BYTES
#define TRC_RING_BYTES 1024u
#endif

/* Record types (6 bits). 0x00 is never valid. Reserved for later: 0x2E-0x2F, 0x36-0x37,
 * 0x3B-0x3F. */
enum trc_record_type {
    TRC_REC_TARGET_INFO = 0x01,
    TRC_REC_TIME_SYNC = 0x02,
    TRC_REC_DROPPED = 0x03,
    TRC_REC_INFERENCE_BEGIN = 0x08,
    TRC_REC_INFERENCE_END = 0x09,
    TRC_REC_LAYER_BEGIN = 0x0A,
    TRC_REC_LAYER_END = 0x0B,
    TRC_REC_LAYER_INFO = 0x0C,
    TRC_REC_PMU_CONFIG = 0x10,
    TRC_REC_PMU_SNAPSHOT = 0x11,
    TRC_REC_NPU_JOB_BEGIN = 0x12,
    TRC_REC_NPU_JOB_END = 0x13,
    TRC_REC_ARENA = 0x18,
    TRC_REC_STACK = 0x19,
    TRC_REC_CACHE_OP = 0x1A,
    TRC_REC_BUFFER_CRC = 0x1B,
    TRC_REC_MARK = 0x20,
    TRC_REC_VALUE = 0x21,
    TRC_REC_ISR_ENTER = 0x28,   /* an interrupt handler started (exception number) */
    TRC_REC_ISR_EXIT = 0x29,    /* it returns (exception number) */
    TRC_REC_CPU_WRITE = 0x2A,   /* the CPU finished writing a buffer (address, length) */
    TRC_REC_ISR_INFO = 0x2B,    /* the name of an exception number (exception, name) */
    TRC_REC_NPU_BUFFER = 0x2C,  /* an NPU job reads or writes a buffer (job, role, address, length) */
    TRC_REC_CPU_READ = 0x2D,    /* the CPU starts reading a buffer (address, length) */
    TRC_REC_WORK = 0x30,        /* the open layer's work count (layer, amount) */
    TRC_REC_CPU_COUNTERS = 0x31, /* CPU counter deltas over the layer that ends (layer, source, values) */
    TRC_REC_CPU_COUNTER_CONFIG = 0x32, /* what the CPU counters count (source, event numbers) */
    TRC_REC_TASK_SWITCH = 0x33, /* an RTOS task was switched in (task id) */
    TRC_REC_TASK_INFO = 0x34,   /* an RTOS task's name and priority (task id, priority, name) */
    TRC_REC_TASK_DELETE = 0x35, /* an RTOS task was deleted (task id): its id may be reused */
    /* Sampling from a periodic interrupt (trc_sampler.h). */
    TRC_REC_NPU_SAMPLE = 0x38,   /* Ethos-U QREAD, STATUS, QBASE, QSIZE, PMU counters */
    TRC_REC_PC_SAMPLE = 0x39,    /* the interrupted code's PC */
    TRC_REC_SAMPLER_INFO = 0x3A, /* what is sampled, the period, its cost */
    TRC_REC_SYNC_PIN = 0x3B      /* a sync pin the power meter records was set (level, input, mark) */
};

/* Where the timestamps come from (TARGET_INFO word 3, bits 0-7). */
enum trc_time_source {
    TRC_TIME_UNKNOWN = 0,
    TRC_TIME_DWT = 1,        /* DWT CYCCNT: CPU cycles */
    TRC_TIME_SYSTICK = 2,    /* SysTick on the processor clock, extended to 64 bits by its IRQ */
    TRC_TIME_SYSCOUNTER = 3, /* a 64-bit system counter (e.g. SSE-300 CNTCV) */
    TRC_TIME_PMU = 4,        /* Armv8.1-M PMU cycle counter */
    TRC_TIME_USER = 5        /* another counter the firmware supplies */
};

/* TARGET_INFO flags (word 3, bits 8-31). */
#define TRC_INFO_NPU_PMU_SIMULATED (1u << 8)  /* NPU PMU values are computed, not read from an NPU */
#define TRC_INFO_EMULATED (1u << 9)           /* running on an emulator: cycles are not real CPU cycles */

enum trc_engine { TRC_ENGINE_CPU = 0, TRC_ENGINE_NPU = 1 };

enum trc_cache_op { TRC_CACHE_CLEAN = 1, TRC_CACHE_INVALIDATE = 2, TRC_CACHE_CLEAN_INVALIDATE = 3 };

enum trc_buffer { TRC_BUFFER_INPUT = 0, TRC_BUFFER_OUTPUT = 1 /* 2.. : your own buffer ids */ };

/* What an NPU job does with a buffer (NPU_BUFFER record). */
enum trc_npu_role { TRC_NPU_READS = 0, TRC_NPU_WRITES = 1 };

#define TRC_LAYER_CALIBRATION 0xFFFFu   /* layer index used by trc_measure_marker_cost() */
#define TRC_MARKER_COST_UNKNOWN 0xFFFFFFFFu

/* PMU_SNAPSHOT flags */
#define TRC_PMU_SINCE_RESET 1u  /* counters were reset at the start of this NPU job: values are deltas */

/* ---- configuration ------------------------------------------------------------------------ */

/* Software transport: write `len` ITM packet bytes (one record, one console text packet or one
 * synchronisation pattern per call). Called with interrupts enabled, from one context at a time.
 * Return 0 if they were all taken, non-zero if the record was dropped (the library counts it; the
 * host sees a sequence gap). */
typedef int (*trc_write_fn)(void *ctx, const uint8_t *bytes, uint32_t len);
/* A consumer of your own (TX-empty interrupt, DMA): called when records wait and no span is out,
 * from the code that emitted the last record (any context, interrupts enabled). Typically it
 * enables the UART's TX-empty interrupt or starts the DMA; see trc_tx_span(). */
typedef void (*trc_kick_fn)(void *ctx);
/* Time: the low 32 bits of a free-running up-counter. */
typedef uint32_t (*trc_now32_fn)(void);
/* Time: the full 64-bit counter (optional: NULL lets the library extend now32 itself). */
typedef uint64_t (*trc_now64_fn)(void);

/* Interrupt lock around the short sections that reserve a record in the ring, commit it, and
 * hand bytes to a consumer (never around a transport write). Override both (e.g. with your RTOS
 * critical section) or define TRC_NO_LOCK when records are emitted from one context only. */
#if !defined(TRC_LOCK) && !defined(TRC_NO_LOCK) && defined(__arm__)
#define TRC_LOCK()                                                              \
    uint32_t trc_primask_;                                                      \
    __asm volatile("mrs %0, primask\n\tcpsid i" : "=r"(trc_primask_)::"memory")
#define TRC_UNLOCK() __asm volatile("msr primask, %0" ::"r"(trc_primask_) : "memory")
#endif
#ifndef TRC_LOCK
#define TRC_LOCK() do { } while (0)
#define TRC_UNLOCK() do { } while (0)
#endif

/* Measurement builds only: TRC_MASKED_PROBE_BEGIN() runs first inside every masked section and
 * returns a counter value, TRC_MASKED_PROBE_END(site, begin) runs last (site: enum
 * trc_masked_site). The demo's masked-time build uses SysTick (docs/firmware.md). */
enum trc_masked_site {
    TRC_SITE_RESERVE = 0,   /* a record: time stamp, sequence number, place in the ring */
    TRC_SITE_COMMIT = 1,    /* a record or text written: publish it to the drain */
    TRC_SITE_RAW = 2,       /* console text or a synchronisation pattern: place in the ring */
    TRC_SITE_DRAIN = 3,     /* the drain takes or gives back the ring's oldest bytes */
    TRC_SITES = 4
};
#ifndef TRC_MASKED_PROBE_BEGIN
#define TRC_MASKED_PROBE_BEGIN() 0u
#define TRC_MASKED_PROBE_END(site, begin) ((void)(site), (void)(begin))
#endif

/* Emit through the ITM stimulus ports (the debugger or trc_itm_enable() enables ITM).
 * Returns 0, or -1 when ITM is not enabled for ports 0, 24 and 25 (records are then dropped
 * and counted). */
int trc_use_itm(void);
/* Enable ITM from the firmware (unlock, ITMENA, SYNCENA, ports 0/24/25 enabled, trace bus ID 1).
 * Returns 0, or -1 when no ITM answers (e.g. QEMU). The SWO/TPIU set-up stays the debugger's. */
int trc_itm_enable(void);
/* Emit through a software encoder: `write` receives the ITM packet bytes of each record. */
void trc_use_writer(trc_write_fn write, void *ctx);
/* Emit through a consumer of your own: the bytes wait in the ring until your TX-empty interrupt
 * or DMA takes them with trc_tx_span()/trc_tx_done(); `kick` (may be NULL) says records wait. */
void trc_use_consumer(trc_kick_fn kick, void *ctx);

/* When the ring is drained. TRC_DRAIN_ON_EMIT (default): each record is sent right after it is
 * written, by the code that emitted it, interrupts enabled (an interrupt's record emitted while
 * another is being sent waits for that send to finish). TRC_DRAIN_DEFERRED: records wait for
 * trc_flush() (writer, ITM) or for your consumer (no kick until trc_flush()); size the ring
 * (TRC_RING_BYTES) for what is emitted between two drains. */
enum trc_drain { TRC_DRAIN_ON_EMIT = 0, TRC_DRAIN_DEFERRED = 1 };
void trc_set_drain(uint32_t mode);
/* Send what waits (writer, ITM: here, with interrupts enabled; ITM waits at most
 * TRC_ITM_SPIN_LIMIT polls per word, then stops and keeps the rest for the next call; your own
 * consumer: calls its kick). Returns without sending when another context is draining. Returns
 * the bytes still waiting. Call it from your main loop or idle hook. */
uint32_t trc_flush(void);
/* Bytes waiting in the ring (written or being written, not yet sent). */
uint32_t trc_pending(void);
/* Your own consumer (TX-empty interrupt, DMA): the oldest committed bytes, as one contiguous
 * span of at most `max` bytes that stays valid until trc_tx_done(). Returns its length, 0 when
 * nothing waits or a span is already out. Spans are ITM packet bytes, exactly as the software
 * encoder would write them. */
uint32_t trc_tx_span(const uint8_t **bytes, uint32_t max);
/* `sent` bytes of the span went out (<= its length; the rest is offered again). Ends the span. */
void trc_tx_done(uint32_t sent);
/* The time base. `clock_hz` is the counter's rate, `source` a trc_time_source. */
void trc_set_time(trc_now32_fn now32, trc_now64_fn now64, uint32_t clock_hz, uint32_t source);

/* DWT CYCCNT as the time base: sets DEMCR.TRCENA, unlocks the DWT (Cortex-M7 DWT_LAR), checks
 * DWT_CTRL.NOCYCCNT, starts CYCCNT and checks that it advances. Returns 0, or -1 if the core
 * has no working cycle counter (then use trc_time_systick_init or your own counter). */
int trc_time_dwt_init(uint32_t cpu_hz);
/* SysTick on the processor clock as the time base, extended to 64 bits by its wrap interrupt:
 * call trc_time_systick_isr() from SysTick_Handler. Takes SysTick over (reload 2^24 - 1). */
void trc_time_systick_init(uint32_t cpu_hz);
void trc_time_systick_isr(void);
/* Restart the SysTick time base at 0 (e.g. when the host says start: makes runs repeatable). */
void trc_time_systick_rezero(void);
uint32_t trc_time_systick_now32(void);
uint64_t trc_time_systick_now64(void);

/* ---- records -------------------------------------------------------------------------------- */

/* Who we are: clock, time source, flags (TRC_INFO_*), marker cost in 1/16 cycles per layer
 * begin/end pair (TRC_MARKER_COST_UNKNOWN if not measured), a scenario/app id, the CPUID. */
void trc_target_info(uint32_t flags, uint32_t marker_cost_q4, uint32_t scenario, uint32_t cpuid);
/* A full 64-bit time anchor (the host also gets one at every inference begin). */
void trc_time_sync(void);

/* Start an inference; returns its number (0, 1, 2 ...). Resets the automatic layer index. */
uint32_t trc_inference_begin(void);
/* End it; `status` 0 = ok, anything else = the inference failed (the host marks it). */
void trc_inference_end(uint32_t status);

/* Describe a layer once (the host names layers from these). `op` e.g. "CONV_2D", `name` may be
 * NULL. Strings longer than 31 (op) / 47 (name) characters are cut. */
void trc_layer_info(uint32_t index, uint32_t engine, const char *op, const char *name);
/* The same, emitted only the first time an index is seen (indices < 256). */
void trc_layer_info_once(uint32_t index, uint32_t engine, const char *op, const char *name);
/* Layer begin/end; both return the 32-bit time they stamped. */
uint32_t trc_layer_begin(uint32_t index, uint32_t engine);
uint32_t trc_layer_end(uint32_t index);
/* The next automatic layer index of this inference (0, 1, 2 ...), for profiler adapters. */
uint32_t trc_next_layer_index(void);

/* NPU PMU: which NPU (55, 65, 85), how many event counters (U55/U65 4, U85 8), their hardware
 * event numbers (PMEVTYPER values), and TRC_INFO_NPU_PMU_SIMULATED in `flags` if the values are
 * not read from an NPU (1u, the record's own bit, means the same). */
void trc_pmu_config(uint32_t npu, uint32_t count, const uint16_t *event_types, uint32_t flags);

typedef struct trc_pmu_sample {
    uint64_t cycles;        /* PMCCNTR (48 bits used) */
    uint32_t count;         /* number of event counters, <= 8 */
    uint32_t flags;         /* TRC_PMU_SINCE_RESET */
    uint32_t counters[8];   /* PMEVCNTR0..7 */
} trc_pmu_sample;

void trc_pmu_snapshot(const trc_pmu_sample *sample);
void trc_npu_job_begin(uint32_t job);
void trc_npu_job_end(uint32_t job, uint32_t status);

/* Ethos-U PMU by direct register access (U55/U65: npu 55/65, U85: 85). */
void trc_ethosu_pmu_start(uintptr_t npu_base, uint32_t npu, uint32_t count, const uint16_t *event_types);
void trc_ethosu_pmu_stop(uintptr_t npu_base, uint32_t npu);
void trc_ethosu_pmu_read(uintptr_t npu_base, uint32_t npu, uint32_t count, trc_pmu_sample *sample);

/* Memory. */
void trc_arena(uint32_t used_bytes, uint32_t size_bytes);

typedef struct trc_stack {
    const char *name;   /* up to 15 characters are sent */
    uint32_t *base;     /* lowest address of the stack (it grows down towards it) */
    uint32_t size;      /* bytes */
    uint32_t id;        /* 0..255, your numbering */
} trc_stack;

#define TRC_STACK_PAINT 0xC5C5C5C5u
#define TRC_STACK_CANARY 0x5AFEC0DEu

/* Paint [base, limit) with TRC_STACK_PAINT and put the canary in the lowest word. For the stack
 * in use pass limit = current SP minus a margin (trc_stack_paint_below_sp does that), for an
 * unused stack pass base + size. */
void trc_stack_paint(const trc_stack *stack, const void *limit);
void trc_stack_paint_below_sp(const trc_stack *stack, uint32_t margin_bytes);
uint32_t trc_stack_high_water(const trc_stack *stack);  /* bytes ever used (scan of the paint) */
int trc_stack_canary_ok(const trc_stack *stack);
void trc_stack_report(const trc_stack *stack);          /* scans and emits a STACK record */

/* Cache maintenance: record only (call next to your SCB_CleanDCache_by_Addr ...). */
void trc_cache_op(uint32_t op, const void *address, uint32_t length);

/* Cache coherency evidence. The host checks, per NPU job, that the buffers it reads were cleaned
 * after the CPU's last write and before the job, and that the buffers it writes were invalidated
 * after the job and before the CPU reads them (ranges covering the buffers, cache-line aligned).
 * Call trc_npu_buffer() for each buffer of a job just before trc_npu_job_begin(job);
 * trc_cpu_write() when the CPU has finished writing a buffer the NPU will read, and
 * trc_cpu_read() before the CPU reads one the NPU wrote. */
void trc_npu_buffer(uint32_t job, uint32_t role, const void *address, uint32_t length);
void trc_cpu_write(const void *address, uint32_t length);
void trc_cpu_read(const void *address, uint32_t length);

/* Interrupts, for targets without DWT exception trace (QEMU, an RTT/UART transport) or to name
 * them: call trc_isr_enter() first thing in a handler and trc_isr_exit() last, with the
 * exception number (16 + IRQn; SysTick 15; trc_active_exception() reads it from IPSR).
 * Entries and exits must nest. trc_isr_info() names an exception number once ("TIMER0"). */
void trc_isr_enter(uint32_t exception);
void trc_isr_exit(uint32_t exception);
void trc_isr_info(uint32_t exception, const char *name);
uint32_t trc_active_exception(void); /* IPSR: 0 in thread mode (and on a host build) */

/* CRC-32 (IEEE, as zlib.crc32) of a buffer, emitted as a BUFFER_CRC record; returns the CRC. */
uint32_t trc_buffer_crc(uint32_t which, const void *data, uint32_t length);
uint32_t trc_crc32(uint32_t crc, const void *data, uint32_t length);

/* Your own marks and values. Ids >= 0xFFFFFF00 are reserved. */
void trc_mark(uint32_t id);
void trc_value(uint32_t id, uint32_t value);

/* Energy (docs/energy.md): a sync mark a power meter sees on a digital input. `set_pin(ctx,
 * level)` is yours: it drives the GPIO wired to the meter's input `meter_input` to `level` (0 or
 * 1). trc_sync_pin flips the pin and then emits a SYNC_PIN record, whose time is read right
 * after set_pin returns, with the new level and the mark's number. tracer matches the meter's
 * edges to these records and fits target cycles to meter time (offset and drift). Call it at
 * irregular moments (e.g. before each inference: latencies vary) a few times a second at most;
 * keep set_pin short (a register write): its own time lies before the record's. */
typedef void (*trc_pin_fn)(void *ctx, uint32_t level);
void trc_sync_pin(trc_pin_fn set_pin, void *ctx, uint32_t meter_input);

/* Work counts, for layers whose time depends on their input by design (a detection
 * post-process: candidates scored; a tokenizer: tokens): how much work layer `index` did this
 * time. Call between trc_layer_begin(index) and trc_layer_end(index); the host puts the amount
 * on that layer's span (the last call counts), so that more time with more work is not taken
 * for contention. */
void trc_layer_work(uint32_t index, uint32_t amount);

/* CPU counters per layer span, where the core has them: every trc_layer_end() then first emits
 * a CPU_COUNTERS record with the counters' change over the layer (from just after its begin
 * record to just before its end record). One source at a time; both return 0 when the core has
 * none (QEMU models neither: its registers read 0).
 *
 * Armv8.1-M PMU (Cortex-M55, M85): INST_RETIRED (instructions) first, then up to 3 more events
 * of yours (Armv8.1-M PMU event numbers, e.g. 0x0024 STALL_BACKEND, 0x0013 MEM_ACCESS); 16-bit
 * counters are chained in pairs to 32 bits. Returns the number of events counted. */
uint32_t trc_cpu_pmu_init(const uint16_t *more_events, uint32_t more_count);
/* Armv7-M/Armv8-M DWT profiling counters (Cortex-M3/M4/M7/M33): CPI, exception overhead, sleep,
 * load/store and folded-instruction counts. They are 8 bits wide and wrap: the record carries
 * their raw values at the layer's begin and end, and only the counter-overflow packets the DWT
 * sends through ITM (DWT_CTRL *EVTENA, set here) give the number of wraps in between (see
 * docs/firmware.md). Returns 5, or 0 without DWT profiling counters. */
uint32_t trc_cpu_dwt_counters_init(void);
/* The same on a register block of your choice (tests, or a core whose PMU/DWT sits elsewhere). */
uint32_t trc_cpu_pmu_init_at(uintptr_t pmu_base, const uint16_t *more_events, uint32_t more_count);
uint32_t trc_cpu_dwt_counters_init_at(uintptr_t dwt_base);
/* Stop emitting CPU counter records. */
void trc_cpu_counters_off(void);

/* Armv8.1-M PMU event numbers used above. */
#define TRC_PMU_INST_RETIRED 0x0008u
#define TRC_PMU_CHAIN 0x001Eu

/* CPU_COUNTERS / CPU_COUNTER_CONFIG sources. */
enum trc_counter_source { TRC_COUNTERS_PMU = 1, TRC_COUNTERS_DWT = 2 };

/* RTOS tasks: the host draws a task lane, gives each task its CPU share and each layer span the
 * time other tasks took from it. `task` is a 32-bit id the task keeps while it lives (its TCB's
 * address). trc_rtos.h has the FreeRTOS trace macros and Zephyr tracing hooks that call these. */
void trc_task_switched_in(uint32_t task);
/* Name a task once (up to 31 characters are sent), with its priority (0..255; the RTOS's own
 * numbering). */
void trc_task_info(uint32_t task, uint32_t priority, const char *name);
void trc_task_deleted(uint32_t task);

/* Console text on port 0 (4 characters per packet). */
void trc_print(const char *text);
void trc_print_u32(uint32_t value);
void trc_print_u64(uint64_t value);

/* For the software transport: an ITM synchronisation packet (so a host that lost bytes can
 * find packet boundaries again). Emitted automatically at every inference begin. */
void trc_sync(void);

/* Times `pairs` layer begin/end pairs (index TRC_LAYER_CALIBRATION, which the host ignores) and
 * returns the cost of one pair in 1/16 counter ticks (put it in trc_target_info). With a deferred
 * drain the pairs are timed in batches that fit the ring, drained (untimed) in between: the cost
 * is what markers add inside a layer. Returns TRC_MARKER_COST_UNKNOWN if the ring never empties
 * (a consumer that takes no spans). */
uint32_t trc_measure_marker_cost(uint32_t pairs);

/* Emit a record of `type` built by another module (trc_sampler.c): words[0] receives the time,
 * words[1..count-1] are the payload (count <= TRC_MAX_WORDS). Returns the 32-bit time stamped. */
uint32_t trc_record(uint32_t type, uint32_t *words, uint32_t count);

/* Records the library could not emit (ring full, transport refused, ITM not enabled). */
uint32_t trc_dropped(void);
/* Records emitted so far (put in the ring and not refused by the transport since). */
uint32_t trc_emitted(void);
/* Console text bytes dropped because the ring was full (text has no sequence number). */
uint32_t trc_text_dropped(void);

#ifdef __cplusplus
}
#endif

#endif /* TRC_H */
