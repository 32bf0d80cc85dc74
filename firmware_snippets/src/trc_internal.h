/*
 * Inside the trc library (not part of its API): the state every source file shares, the ring
 * the records wait in, and the helpers that reserve, commit and drain it.
 *
 * The ring holds ITM packet bytes exactly as they go on the wire. Four free-running byte
 * counters (they wrap at 2^32; ring index = counter & TRC_RING_MASK) cut it up:
 *
 *     tail <= committed <= head,   head - tail <= TRC_RING_BYTES
 *     [tail, committed)   written, waiting to be sent (a drain may hold [tail, tail + tx_len))
 *     [committed, head)   reserved, being written by `writers` contexts
 *
 * A context reserves [head, head + n) and counts itself in `writers` (masked), writes its bytes
 * (interrupts enabled), then leaves `writers` (masked); the last one to leave moves `committed`
 * to `head`. On one core an interrupt's reservation is written and committed before the code
 * it interrupted resumes, so `committed` only ever covers finished bytes. (An RTOS task switched
 * out between its reservation and its commit holds the drain back until it runs again.)
 */
#ifndef TRC_INTERNAL_H
#define TRC_INTERNAL_H

#include "trc.h"

#if (TRC_RING_BYTES & (TRC_RING_BYTES - 1u)) != 0u || TRC_RING_BYTES < 128u
#error "TRC_RING_BYTES must be a power of two of at least 128"
#endif
#define TRC_RING_MASK (TRC_RING_BYTES - 1u)

/* ITM packet header byte of a 4-byte software (SWIT) packet: port << 3 | size code 3. */
#define TRC_SWIT4(port) ((uint8_t)(((port) << 3) | 3u))
#define TRC_SWIT_BYTES 5u
#define TRC_RECORD_BYTES_MAX (TRC_SWIT_BYTES * (1u + TRC_MAX_WORDS))
#define TRC_SYNC_BYTES 10u
#define TRC_DESCRIBED_MAX 256u

/* Little-endian cores that load and store unaligned words (Armv7-M and later, x86 hosts): a
 * packet's value is one word access instead of four byte accesses. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && \
    (defined(__ARM_FEATURE_UNALIGNED) || defined(__x86_64__) || defined(__i386__))
#define TRC_UNALIGNED_LE 1
#endif

enum trc_out { TRC_OUT_NONE = 0, TRC_OUT_WRITER = 1, TRC_OUT_ITM = 2, TRC_OUT_CONSUMER = 3 };

typedef void (*trc_counters_begin_fn)(void);
typedef void (*trc_counters_end_fn)(uint32_t index);

typedef struct trc_state {
    /* where the bytes go, and when */
    uint32_t out;                  /* enum trc_out */
    uint32_t drain;                /* enum trc_drain */
    uint32_t send_on_commit;       /* draining on emit through the writer or ITM */
    trc_write_fn write;
    void *write_ctx;
    trc_kick_fn kick;
    void *kick_ctx;
    /* time */
    trc_now32_fn now32;
    trc_now64_fn now64;
    uint32_t clock_hz;
    uint32_t time_source;
    uint32_t t_last;               /* last 32-bit time read: extends the counter to 64 bits */
    uint32_t t_hi;
    /* records */
    volatile uint32_t stamps;      /* records stamped (reserved or dropped) */
    uint32_t seq;                  /* sequence numbers used (the header carries the low 8 bits) */
    uint32_t seq_after_ok;         /* `seq` after the last record reserved */
    uint32_t capacity;             /* TRC_RING_BYTES, or 0 without a transport (records drop) */
    uint32_t dropped_full;         /* records dropped: ring full or no transport */
    volatile uint32_t refused;     /* records the transport refused (counted by the drain) */
    uint32_t dropped_reported;
    uint32_t text_dropped;
    uint32_t inference;
    uint32_t next_layer;
    uint32_t described[TRC_DESCRIBED_MAX / 32u];
    /* CPU counters (trc_counters.c), NULL when off */
    trc_counters_begin_fn counters_begin;
    trc_counters_end_fn counters_end;
    /* the ring */
    uint32_t head;
    uint32_t writers;
    volatile uint32_t committed;
    volatile uint32_t tail;
    volatile uint32_t tx_busy;     /* a drain or a consumer's span holds the oldest bytes */
    uint32_t tx_len;
    uint8_t ring[TRC_RING_BYTES];
} trc_state;

extern trc_state trc_g;

/* The masked sections: the lock plus the measurement probe of measurement builds. */
#define TRC_ENTER() \
    TRC_LOCK();     \
    uint32_t trc_probe_ = TRC_MASKED_PROBE_BEGIN()
#define TRC_LEAVE(site)                        \
    TRC_MASKED_PROBE_END((site), trc_probe_); \
    TRC_UNLOCK()

/* Reserve `bytes` of raw ring space (console text, synchronisation); 0 if it does not fit (then
 * counted as dropped text if `count_drop`). */
int trc_ring_reserve_raw(uint32_t bytes, uint32_t *pos, int count_drop);
/* Copy `n` bytes into the ring at counter position `pos` (wrapping). */
void trc_ring_copy(uint32_t pos, const uint8_t *bytes, uint32_t n);
/* The reservation [pos, pos + bytes) is written: publish it, then drain if the drain mode says so. */
void trc_ring_commit(uint32_t pos, uint32_t bytes);
/* Room for `bytes` more, draining (and waiting a little for a consumer) if needed; 0 if none. */
int trc_ring_make_room(uint32_t bytes);
/* A CPU_COUNTERS or CPU_COUNTER_CONFIG record of `count` words (word 0 receives the time). */
void trc_emit_counters(uint32_t type, uint32_t *words, uint32_t count);
/* The time base before trc_set_time(): always 0. */
uint32_t trc_time_zero(void);

#endif
