/*
 * trc ring: the transports and the drain. Records and text are reserved and written into the
 * ring by trc_core.c (trc_internal.h explains the counters); here the ring's oldest bytes go out
 * through the software writer, the ITM stimulus ports or a consumer of the user's own (TX-empty
 * interrupt, DMA), always with interrupts enabled. Only one context drains at a time (tx_busy).
 */
#include "trc_internal.h"

#ifndef TRC_ITM_SPIN_LIMIT
#define TRC_ITM_SPIN_LIMIT 10000u /* polls of a full ITM FIFO before a drain gives up for now */
#endif

#define TRC_CLAIM_TRIES 64u /* a drain that finds no room waits this many flushes for the consumer */

uint32_t trc_time_zero(void) { return 0u; }

trc_state trc_g = {
    .now32 = trc_time_zero,
    .time_source = TRC_TIME_UNKNOWN,
};

/* ---- the ring ------------------------------------------------------------------------------ */

int trc_ring_reserve_raw(uint32_t bytes, uint32_t *pos, int count_drop)
{
    int ok;
    TRC_ENTER();
    uint32_t head = trc_g.head;
    ok = head - trc_g.tail + bytes <= trc_g.capacity;
    if (ok) {
        trc_g.head = head + bytes;
        trc_g.writers++;
        *pos = head;
    } else if (count_drop) {
        trc_g.text_dropped += bytes;
    }
    TRC_LEAVE(TRC_SITE_RAW);
    return ok;
}

void trc_ring_copy(uint32_t pos, const uint8_t *bytes, uint32_t n)
{
    uint32_t at = pos & TRC_RING_MASK;
    uint32_t first = TRC_RING_BYTES - at;
    if (first > n) {
        first = n;
    }
    for (uint32_t i = 0; i < first; i++) {
        trc_g.ring[at + i] = bytes[i];
    }
    for (uint32_t i = first; i < n; i++) {
        trc_g.ring[i - first] = bytes[i];
    }
}

static void trc_send(uint32_t end);
static void trc_drain(void);
static void trc_send_writer_from(uint32_t tail, uint32_t end);

void trc_ring_commit(uint32_t pos, uint32_t bytes)
{
    uint32_t end;
    int send;
    {
        TRC_ENTER();
        end = trc_g.committed;
        if (--trc_g.writers == 0u) {
            end = trc_g.head;
            trc_g.committed = end;
        }
        /* Draining on emit: take the drain right here (one masked section less per record; if
         * nothing is left to send, the drain just gives it back). */
        send = trc_g.send_on_commit && trc_g.tx_busy == 0u;
        if (send) {
            trc_g.tx_busy = 1u;
        }
        TRC_LEAVE(TRC_SITE_COMMIT);
    }
    if (send) {
        uint32_t at = pos & TRC_RING_MASK;
        if (trc_g.out == TRC_OUT_WRITER && trc_g.tail == pos && end == pos + bytes && at + bytes <= TRC_RING_BYTES) {
            /* The usual case: only this chunk waits, in one piece. */
            if (trc_g.write(trc_g.write_ctx, &trc_g.ring[at], bytes) != 0 && trc_g.ring[at] == TRC_SWIT4(TRC_PORT_HEADER)) {
                trc_g.refused++;
            }
            trc_send_writer_from(end, end);
        } else {
            trc_send(end);
        }
    } else if (trc_g.out == TRC_OUT_CONSUMER && trc_g.drain == TRC_DRAIN_ON_EMIT) {
        trc_drain(); /* a consumer of the user's own: kick it if it is idle */
    }
}

uint32_t trc_pending(void) { return trc_g.head - trc_g.tail; }

/* Take the drain: 1 and the end of the committed bytes, or 0 (another context drains, or
 * nothing waits). */
static int trc_claim(uint32_t *end)
{
    int ok;
    TRC_ENTER();
    ok = trc_g.tx_busy == 0u && trc_g.tail != trc_g.committed;
    if (ok) {
        trc_g.tx_busy = 1u;
        *end = trc_g.committed;
    }
    TRC_LEAVE(TRC_SITE_DRAIN);
    return ok;
}

/* Sent up to `tail`: give the drain back, then take it again if more was committed meanwhile
 * (1 and the new end). Giving it back needs no masking: only the drain's holder writes `tail`
 * and `tx_busy`, and a commit that still saw the drain busy had published its bytes before this
 * looks at `committed` (one core: it ran to its end before this code resumed). */
static int trc_continue(uint32_t tail, uint32_t *end)
{
    trc_g.tail = tail;
    trc_g.tx_busy = 0u;
    return trc_g.committed != tail && trc_claim(end);
}

static uint8_t trc_ring_at(uint32_t pos) { return trc_g.ring[pos & TRC_RING_MASK]; }

static uint32_t trc_ring_word(uint32_t pos)
{
#ifdef TRC_UNALIGNED_LE
    uint32_t at = pos & TRC_RING_MASK;
    if (at + 4u <= TRC_RING_BYTES) {
        uint32_t word;
        __builtin_memcpy(&word, &trc_g.ring[at], 4u);
        return word;
    }
#endif
    return (uint32_t)trc_ring_at(pos) | ((uint32_t)trc_ring_at(pos + 1u) << 8) |
           ((uint32_t)trc_ring_at(pos + 2u) << 16) | ((uint32_t)trc_ring_at(pos + 3u) << 24);
}

/* Length of the chunk (a record, a text packet, a synchronisation pattern) starting at `pos`. */
static uint32_t trc_chunk_length(uint32_t pos, int *is_record)
{
    uint8_t header = trc_ring_at(pos);
    *is_record = 0;
    if (header == 0u) {
        return TRC_SYNC_BYTES;
    }
    if (header == TRC_SWIT4(TRC_PORT_HEADER)) {
        *is_record = 1;
        return TRC_SWIT_BYTES * (1u + ((trc_ring_word(pos + 1u) >> 6) & 0x3Fu));
    }
    return 1u + ((header & 3u) == 3u ? 4u : (header & 3u));
}

/* ---- the software writer ------------------------------------------------------------------- */

static void trc_send_writer_from(uint32_t tail, uint32_t end)
{
    uint8_t copy[TRC_RECORD_BYTES_MAX];
    do {
        while (tail != end) {
            int is_record;
            uint32_t length = trc_chunk_length(tail, &is_record);
            uint32_t at = tail & TRC_RING_MASK;
            const uint8_t *bytes = &trc_g.ring[at];
            if (at + length > TRC_RING_BYTES) { /* wraps: hand the writer one piece */
                for (uint32_t i = 0; i < length; i++) {
                    copy[i] = trc_ring_at(tail + i);
                }
                bytes = copy;
            }
            if (trc_g.write(trc_g.write_ctx, bytes, length) != 0 && is_record) {
                trc_g.refused++;
            }
            tail += length;
        }
    } while (trc_continue(tail, &end));
}

/* ---- choosing the transport ---------------------------------------------------------------- */

static void trc_update_send_on_commit(void)
{
    trc_g.send_on_commit = trc_g.drain == TRC_DRAIN_ON_EMIT && (trc_g.out == TRC_OUT_WRITER || trc_g.out == TRC_OUT_ITM);
}

/* Where the bytes go; without a transport the ring takes nothing and records drop (counted). */
static void trc_set_out(uint32_t out)
{
    trc_g.out = out;
    trc_g.capacity = out == TRC_OUT_NONE ? 0u : TRC_RING_BYTES;
    trc_update_send_on_commit();
}

/* ---- ITM stimulus ports -------------------------------------------------------------------- */

#if defined(__arm__)
#define TRC_ITM_STIM32(port) (*(volatile uint32_t *)(0xE0000000u + 4u * (port)))
#define TRC_ITM_STIM16(port) (*(volatile uint16_t *)(0xE0000000u + 4u * (port)))
#define TRC_ITM_STIM8(port) (*(volatile uint8_t *)(0xE0000000u + 4u * (port)))
#define TRC_ITM_TER (*(volatile uint32_t *)0xE0000E00u)
#define TRC_ITM_TCR (*(volatile uint32_t *)0xE0000E80u)
#define TRC_ITM_LAR (*(volatile uint32_t *)0xE0000FB0u)
#define TRC_DEMCR (*(volatile uint32_t *)0xE000EDFCu)
#define TRC_PORT_MASK ((1u << TRC_PORT_TEXT) | (1u << TRC_PORT_HEADER) | (1u << TRC_PORT_DATA))

/* Bit 0 of a stimulus port read is FIFOREADY: poll it at most TRC_ITM_SPIN_LIMIT times.
 * TRC_ITM_NO_WAIT skips the poll (only to measure the instruction cost on an emulator without
 * ITM, where the bit reads 0). */
static int trc_itm_ready(uint32_t port)
{
#ifdef TRC_ITM_NO_WAIT
    (void)port;
    return 1;
#else
    for (uint32_t spins = TRC_ITM_SPIN_LIMIT; spins != 0u; spins--) {
        if (TRC_ITM_STIM32(port) & 1u) {
            return 1;
        }
    }
    return 0;
#endif
}

/* Packet by packet, so that a full FIFO stops the drain between two packets: the rest of the
 * record follows at the next drain (nothing else writes the record ports). */
static void trc_send_itm(uint32_t end)
{
    uint32_t tail = trc_g.tail;
    do {
        while (tail != end) {
            uint8_t header = trc_ring_at(tail);
            if (header == 0u) { /* a synchronisation pattern: hardware ITM makes its own */
                tail += TRC_SYNC_BYTES;
                continue;
            }
            uint32_t port = header >> 3;
            uint32_t size = (header & 3u) == 3u ? 4u : (header & 3u);
            if (!trc_itm_ready(port)) {
                /* The FIFO stays full: keep the rest for the next drain, give the drain back. */
                trc_g.tail = tail;
                trc_g.tx_busy = 0u;
                return;
            }
            if (size == 4u) {
                TRC_ITM_STIM32(port) = trc_ring_word(tail + 1u);
            } else if (size == 2u) {
                TRC_ITM_STIM16(port) = (uint16_t)(trc_ring_at(tail + 1u) | (trc_ring_at(tail + 2u) << 8));
            } else {
                TRC_ITM_STIM8(port) = trc_ring_at(tail + 1u);
            }
            tail += 1u + size;
        }
    } while (trc_continue(tail, &end));
}

int trc_itm_enable(void)
{
    TRC_DEMCR |= 1u << 24;          /* TRCENA: ITM and DWT powered */
    TRC_ITM_LAR = 0xC5ACCE55u;      /* unlock (Cortex-M7 and others with a lock) */
    TRC_ITM_TCR |= (1u << 16) | (1u << 2) | 1u;  /* TraceBusID 1, SYNCENA, ITMENA */
    TRC_ITM_TER |= TRC_PORT_MASK;
    return (TRC_ITM_TCR & 1u) ? 0 : -1;
}

int trc_use_itm(void)
{
#ifndef TRC_ITM_NO_WAIT
    if ((TRC_ITM_TCR & 1u) == 0u || (TRC_ITM_TER & TRC_PORT_MASK) != TRC_PORT_MASK) {
        trc_set_out(TRC_OUT_NONE);
        return -1;
    }
#endif
    trc_set_out(TRC_OUT_ITM);
    return 0;
}
#else
/* Host builds (unit tests): there is no ITM. */
static void trc_send_itm(uint32_t end) { (void)trc_continue(end, &end); } /* never chosen */
int trc_itm_enable(void) { return -1; }
int trc_use_itm(void)
{
    trc_set_out(TRC_OUT_NONE);
    return -1;
}
#endif

/* ---- a consumer of the user's own ---------------------------------------------------------- */

uint32_t trc_tx_span(const uint8_t **bytes, uint32_t max)
{
    uint32_t end;
    if (!trc_claim(&end)) {
        return 0u;
    }
    uint32_t tail = trc_g.tail;
    uint32_t at = tail & TRC_RING_MASK;
    uint32_t length = end - tail;
    if (length > TRC_RING_BYTES - at) {
        length = TRC_RING_BYTES - at;
    }
    if (length > max) {
        length = max;
    }
    if (length == 0u) {
        trc_g.tx_busy = 0u;
        return 0u;
    }
    trc_g.tx_len = length;
    *bytes = &trc_g.ring[at];
    return length;
}

void trc_tx_done(uint32_t sent)
{
    if (trc_g.tx_busy == 0u) {
        return;
    }
    if (sent > trc_g.tx_len) {
        sent = trc_g.tx_len;
    }
    /* Only the span's holder writes these (see trc_continue). */
    trc_g.tail += sent;
    trc_g.tx_len = 0u;
    trc_g.tx_busy = 0u;
}

/* ---- choosing, draining -------------------------------------------------------------------- */

/* Send [tail, end) with the drain taken (writer, ITM). */
static void trc_send(uint32_t end)
{
    if (trc_g.out == TRC_OUT_ITM) {
        trc_send_itm(end);
    } else {
        trc_send_writer_from(trc_g.tail, end);
    }
}

static void trc_drain(void)
{
    uint32_t end;
    if (trc_g.out == TRC_OUT_CONSUMER) {
        if (trc_g.kick != 0 && trc_g.tx_busy == 0u && trc_g.committed != trc_g.tail) {
            trc_g.kick(trc_g.kick_ctx);
        }
    } else if (trc_g.out != TRC_OUT_NONE && trc_claim(&end)) {
        trc_send(end);
    }
}

uint32_t trc_flush(void)
{
    trc_drain();
    return trc_pending();
}

void trc_set_drain(uint32_t mode)
{
    trc_g.drain = mode == TRC_DRAIN_DEFERRED ? TRC_DRAIN_DEFERRED : TRC_DRAIN_ON_EMIT;
    trc_update_send_on_commit();
}

void trc_use_writer(trc_write_fn write, void *ctx)
{
    trc_g.write_ctx = ctx;
    trc_g.write = write;
    trc_set_out(write != 0 ? TRC_OUT_WRITER : TRC_OUT_NONE);
}

void trc_use_consumer(trc_kick_fn kick, void *ctx)
{
    trc_g.kick_ctx = ctx;
    trc_g.kick = kick;
    trc_set_out(TRC_OUT_CONSUMER);
}

/* Room for `bytes` more in the ring, draining (and waiting for a consumer) if needed; 0 if the
 * ring does not empty (a consumer that never takes its spans). For trc_measure_marker_cost(). */
int trc_ring_make_room(uint32_t bytes)
{
    for (uint32_t tries = 0; tries < TRC_CLAIM_TRIES; tries++) {
        if (TRC_RING_BYTES - trc_pending() >= bytes) {
            return 1;
        }
        (void)trc_flush();
    }
    return TRC_RING_BYTES - trc_pending() >= bytes;
}
