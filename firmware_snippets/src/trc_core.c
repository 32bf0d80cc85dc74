/*
 * trc core: record framing, the two transports (ITM stimulus ports, software encoder), and the
 * record functions. Wire format: firmware_snippets/README.md.
 */
#include "trc.h"

/* ITM packet header bytes of a 4-byte software (SWIT) packet: port << 3 | size code 3. */
#define TRC_SWIT4(port) ((uint8_t)(((port) << 3) | 3u))
#define TRC_SWIT_BYTES 5u
#define TRC_DESCRIBED_MAX 256u

#ifndef TRC_ITM_SPIN_LIMIT
#define TRC_ITM_SPIN_LIMIT 10000u /* polls of a full ITM FIFO before a record is dropped */
#endif

typedef struct trc_state {
    trc_write_fn write;
    void *write_ctx;
    int itm;
    trc_now32_fn now32;
    trc_now64_fn now64;
    uint32_t clock_hz;
    uint32_t time_source;
    uint32_t t_last;      /* last 32-bit time read: extends the counter to 64 bits */
    uint32_t t_hi;
    uint32_t seq;
    uint32_t emitted;
    uint32_t dropped;
    uint32_t dropped_reported;
    uint32_t inference;
    uint32_t next_layer;
    uint32_t described[TRC_DESCRIBED_MAX / 32u];
} trc_state;

static uint32_t trc_zero_time(void) { return 0u; }

static trc_state g_trc = {
    0, 0, 0, trc_zero_time, 0, 0u, TRC_TIME_UNKNOWN, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, {0u}
};

/* ---- transports --------------------------------------------------------------------------- */

#if defined(__arm__)
#define TRC_ITM_STIM32(port) (*(volatile uint32_t *)(0xE0000000u + 4u * (port)))
#define TRC_ITM_STIM8(port) (*(volatile uint8_t *)(0xE0000000u + 4u * (port)))
#define TRC_ITM_TER (*(volatile uint32_t *)0xE0000E00u)
#define TRC_ITM_TCR (*(volatile uint32_t *)0xE0000E80u)
#define TRC_ITM_LAR (*(volatile uint32_t *)0xE0000FB0u)
#define TRC_DEMCR (*(volatile uint32_t *)0xE000EDFCu)
#define TRC_PORT_MASK ((1u << TRC_PORT_TEXT) | (1u << TRC_PORT_HEADER) | (1u << TRC_PORT_DATA))

/* Bit 0 of a stimulus port read is FIFOREADY. TRC_ITM_NO_WAIT skips the poll (only to measure
 * the instruction cost on an emulator without ITM). */
static int trc_itm_wait(uint32_t port)
{
#ifdef TRC_ITM_NO_WAIT
    (void)port;
    return 0;
#else
    uint32_t spins = TRC_ITM_SPIN_LIMIT;
    while ((TRC_ITM_STIM32(port) & 1u) == 0u) {
        if (--spins == 0u) {
            return -1;
        }
    }
    return 0;
#endif
}

static int trc_itm_put32(uint32_t port, uint32_t value)
{
    if (trc_itm_wait(port) != 0) {
        return -1;
    }
    TRC_ITM_STIM32(port) = value;
    return 0;
}

static int trc_itm_put8(uint32_t port, uint8_t value)
{
    if (trc_itm_wait(port) != 0) {
        return -1;
    }
    TRC_ITM_STIM8(port) = value;
    return 0;
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
    g_trc.write = 0;
    g_trc.itm = 1;
#ifdef TRC_ITM_NO_WAIT
    return 0;
#endif
    if ((TRC_ITM_TCR & 1u) == 0u || (TRC_ITM_TER & TRC_PORT_MASK) != TRC_PORT_MASK) {
        g_trc.itm = 0;
        return -1;
    }
    return 0;
}
#else
/* Host builds (unit tests): there is no ITM. */
int trc_itm_enable(void) { return -1; }
int trc_use_itm(void)
{
    g_trc.write = 0;
    g_trc.itm = 0;
    return -1;
}
#endif

void trc_use_writer(trc_write_fn write, void *ctx)
{
    g_trc.itm = 0;
    g_trc.write_ctx = ctx;
    g_trc.write = write;
}

void trc_set_time(trc_now32_fn now32, trc_now64_fn now64, uint32_t clock_hz, uint32_t source)
{
    g_trc.now32 = now32 ? now32 : trc_zero_time;
    g_trc.now64 = now64;
    g_trc.clock_hz = clock_hz;
    g_trc.time_source = source;
    g_trc.t_last = g_trc.now32();
    g_trc.t_hi = 0u;
}

/* ---- framing ------------------------------------------------------------------------------ */

/* CRC-16/CCITT (polynomial 0x1021), byte-wise table. */
static const uint16_t trc_crc16_table[256] = {
    0x0000u, 0x1021u, 0x2042u, 0x3063u, 0x4084u, 0x50A5u, 0x60C6u, 0x70E7u,
    0x8108u, 0x9129u, 0xA14Au, 0xB16Bu, 0xC18Cu, 0xD1ADu, 0xE1CEu, 0xF1EFu,
    0x1231u, 0x0210u, 0x3273u, 0x2252u, 0x52B5u, 0x4294u, 0x72F7u, 0x62D6u,
    0x9339u, 0x8318u, 0xB37Bu, 0xA35Au, 0xD3BDu, 0xC39Cu, 0xF3FFu, 0xE3DEu,
    0x2462u, 0x3443u, 0x0420u, 0x1401u, 0x64E6u, 0x74C7u, 0x44A4u, 0x5485u,
    0xA56Au, 0xB54Bu, 0x8528u, 0x9509u, 0xE5EEu, 0xF5CFu, 0xC5ACu, 0xD58Du,
    0x3653u, 0x2672u, 0x1611u, 0x0630u, 0x76D7u, 0x66F6u, 0x5695u, 0x46B4u,
    0xB75Bu, 0xA77Au, 0x9719u, 0x8738u, 0xF7DFu, 0xE7FEu, 0xD79Du, 0xC7BCu,
    0x48C4u, 0x58E5u, 0x6886u, 0x78A7u, 0x0840u, 0x1861u, 0x2802u, 0x3823u,
    0xC9CCu, 0xD9EDu, 0xE98Eu, 0xF9AFu, 0x8948u, 0x9969u, 0xA90Au, 0xB92Bu,
    0x5AF5u, 0x4AD4u, 0x7AB7u, 0x6A96u, 0x1A71u, 0x0A50u, 0x3A33u, 0x2A12u,
    0xDBFDu, 0xCBDCu, 0xFBBFu, 0xEB9Eu, 0x9B79u, 0x8B58u, 0xBB3Bu, 0xAB1Au,
    0x6CA6u, 0x7C87u, 0x4CE4u, 0x5CC5u, 0x2C22u, 0x3C03u, 0x0C60u, 0x1C41u,
    0xEDAEu, 0xFD8Fu, 0xCDECu, 0xDDCDu, 0xAD2Au, 0xBD0Bu, 0x8D68u, 0x9D49u,
    0x7E97u, 0x6EB6u, 0x5ED5u, 0x4EF4u, 0x3E13u, 0x2E32u, 0x1E51u, 0x0E70u,
    0xFF9Fu, 0xEFBEu, 0xDFDDu, 0xCFFCu, 0xBF1Bu, 0xAF3Au, 0x9F59u, 0x8F78u,
    0x9188u, 0x81A9u, 0xB1CAu, 0xA1EBu, 0xD10Cu, 0xC12Du, 0xF14Eu, 0xE16Fu,
    0x1080u, 0x00A1u, 0x30C2u, 0x20E3u, 0x5004u, 0x4025u, 0x7046u, 0x6067u,
    0x83B9u, 0x9398u, 0xA3FBu, 0xB3DAu, 0xC33Du, 0xD31Cu, 0xE37Fu, 0xF35Eu,
    0x02B1u, 0x1290u, 0x22F3u, 0x32D2u, 0x4235u, 0x5214u, 0x6277u, 0x7256u,
    0xB5EAu, 0xA5CBu, 0x95A8u, 0x8589u, 0xF56Eu, 0xE54Fu, 0xD52Cu, 0xC50Du,
    0x34E2u, 0x24C3u, 0x14A0u, 0x0481u, 0x7466u, 0x6447u, 0x5424u, 0x4405u,
    0xA7DBu, 0xB7FAu, 0x8799u, 0x97B8u, 0xE75Fu, 0xF77Eu, 0xC71Du, 0xD73Cu,
    0x26D3u, 0x36F2u, 0x0691u, 0x16B0u, 0x6657u, 0x7676u, 0x4615u, 0x5634u,
    0xD94Cu, 0xC96Du, 0xF90Eu, 0xE92Fu, 0x99C8u, 0x89E9u, 0xB98Au, 0xA9ABu,
    0x5844u, 0x4865u, 0x7806u, 0x6827u, 0x18C0u, 0x08E1u, 0x3882u, 0x28A3u,
    0xCB7Du, 0xDB5Cu, 0xEB3Fu, 0xFB1Eu, 0x8BF9u, 0x9BD8u, 0xABBBu, 0xBB9Au,
    0x4A75u, 0x5A54u, 0x6A37u, 0x7A16u, 0x0AF1u, 0x1AD0u, 0x2AB3u, 0x3A92u,
    0xFD2Eu, 0xED0Fu, 0xDD6Cu, 0xCD4Du, 0xBDAAu, 0xAD8Bu, 0x9DE8u, 0x8DC9u,
    0x7C26u, 0x6C07u, 0x5C64u, 0x4C45u, 0x3CA2u, 0x2C83u, 0x1CE0u, 0x0CC1u,
    0xEF1Fu, 0xFF3Eu, 0xCF5Du, 0xDF7Cu, 0xAF9Bu, 0xBFBAu, 0x8FD9u, 0x9FF8u,
    0x6E17u, 0x7E36u, 0x4E55u, 0x5E74u, 0x2E93u, 0x3EB2u, 0x0ED1u, 0x1EF0u,
};

/* The header's 12-bit check: a rotate-and-xor accumulator over header bits 0-19 and every
 * payload word (cheap per word), folded by CRC-16/CCITT over its four bytes (so that bytes
 * moved within a word, as after a lost byte, change the check). */
static uint32_t trc_check(uint32_t head20, const uint32_t *words, uint32_t count)
{
    uint32_t acc = head20;
    for (uint32_t i = 0; i < count; i++) {
        acc = ((acc << 5) | (acc >> 27)) ^ words[i];
    }
    uint32_t crc = 0xFFFFu;
    for (uint32_t i = 0; i < 4u; i++) {
        crc = ((crc << 8) ^ trc_crc16_table[((crc >> 8) ^ (acc >> (8u * i))) & 0xFFu]) & 0xFFFFu;
    }
    return crc & 0xFFFu;
}

static void trc_put_packet(uint8_t *out, uint8_t header, uint32_t value)
{
    out[0] = header;
    out[1] = (uint8_t)value;
    out[2] = (uint8_t)(value >> 8);
    out[3] = (uint8_t)(value >> 16);
    out[4] = (uint8_t)(value >> 24);
}

static int trc_send(uint32_t header, const uint32_t *words, uint32_t count)
{
    if (g_trc.write != 0) {
        uint8_t bytes[TRC_SWIT_BYTES * (1u + TRC_MAX_WORDS)];
        trc_put_packet(bytes, TRC_SWIT4(TRC_PORT_HEADER), header);
        for (uint32_t i = 0; i < count; i++) {
            trc_put_packet(&bytes[TRC_SWIT_BYTES * (i + 1u)], TRC_SWIT4(TRC_PORT_DATA), words[i]);
        }
        return g_trc.write(g_trc.write_ctx, bytes, TRC_SWIT_BYTES * (count + 1u));
    }
#if defined(__arm__)
    if (g_trc.itm) {
        /* A word that cannot be written ends the record: the host sees it cut short. */
        if (trc_itm_put32(TRC_PORT_HEADER, header) != 0) {
            return -1;
        }
        for (uint32_t i = 0; i < count; i++) {
            if (trc_itm_put32(TRC_PORT_DATA, words[i]) != 0) {
                return -1;
            }
        }
        return 0;
    }
#endif
    return -1;
}

#define TRC_WITH_TIME64 1u

/* Emit one record. words[0] receives the time (low 32 bits), words[1] the high 32 bits when
 * TRC_WITH_TIME64. Time is read under the lock, so records are in time order on the wire. */
static uint32_t trc_emit(uint32_t type, uint32_t *words, uint32_t count, uint32_t options)
{
    uint32_t lo;
    TRC_LOCK();
    if ((options & TRC_WITH_TIME64) && g_trc.now64 != 0) {
        uint64_t now = g_trc.now64();
        lo = (uint32_t)now;
        g_trc.t_hi = (uint32_t)(now >> 32);
    } else {
        lo = g_trc.now32();
        if (lo < g_trc.t_last) {
            g_trc.t_hi++;
        }
    }
    g_trc.t_last = lo;
    words[0] = lo;
    if (options & TRC_WITH_TIME64) {
        words[1] = g_trc.t_hi;
    }
    /* Header: type bits 0-5, payload words 6-11, sequence 12-19, check 20-31. */
    uint32_t head = (type & 0x3Fu) | (count << 6) | (g_trc.seq << 12);
    g_trc.seq = (g_trc.seq + 1u) & 0xFFu;
    head |= trc_check(head, words, count) << 20;
    if (trc_send(head, words, count) == 0) {
        g_trc.emitted++;
    } else {
        g_trc.dropped++;
    }
    TRC_UNLOCK();
    return lo;
}

static uint32_t trc_strlen(const char *text, uint32_t limit)
{
    uint32_t n = 0;
    if (text == 0) {
        return 0;
    }
    while (n < limit && text[n] != '\0') {
        n++;
    }
    return n;
}

/* Pack `length` characters into little-endian words; returns the words used. */
static uint32_t trc_pack(uint32_t *words, const char *text, uint32_t length)
{
    uint32_t count = (length + 3u) / 4u;
    for (uint32_t i = 0; i < count; i++) {
        words[i] = 0u;
    }
    for (uint32_t i = 0; i < length; i++) {
        words[i >> 2] |= (uint32_t)(uint8_t)text[i] << (8u * (i & 3u));
    }
    return count;
}

/* ---- records ------------------------------------------------------------------------------ */

void trc_target_info(uint32_t flags, uint32_t marker_cost_q4, uint32_t scenario, uint32_t cpuid)
{
    uint32_t w[7];
    w[2] = g_trc.clock_hz;
    w[3] = (g_trc.time_source & 0xFFu) | (flags & 0xFFFFFF00u);
    w[4] = marker_cost_q4;
    w[5] = TRC_WIRE_VERSION | ((scenario & 0xFFu) << 8);
    w[6] = cpuid;
    (void)trc_emit(TRC_REC_TARGET_INFO, w, 7u, TRC_WITH_TIME64);
}

void trc_time_sync(void)
{
    uint32_t w[2];
    (void)trc_emit(TRC_REC_TIME_SYNC, w, 2u, TRC_WITH_TIME64);
}

static void trc_report_dropped(void)
{
    if (g_trc.dropped != g_trc.dropped_reported) {
        uint32_t w[2];
        uint32_t before = g_trc.dropped;
        w[1] = before;
        (void)trc_emit(TRC_REC_DROPPED, w, 2u, 0u);
        if (g_trc.dropped == before) {
            g_trc.dropped_reported = before;
        }
    }
}

uint32_t trc_inference_begin(void)
{
    uint32_t w[3];
    uint32_t number = g_trc.inference++;
    trc_sync();
    trc_report_dropped();
    g_trc.next_layer = 0u;
    w[2] = number;
    (void)trc_emit(TRC_REC_INFERENCE_BEGIN, w, 3u, TRC_WITH_TIME64);
    return number;
}

void trc_inference_end(uint32_t status)
{
    uint32_t w[3];
    w[1] = g_trc.inference - 1u;
    w[2] = status;
    (void)trc_emit(TRC_REC_INFERENCE_END, w, 3u, 0u);
}

void trc_layer_info(uint32_t index, uint32_t engine, const char *op, const char *name)
{
    uint32_t w[3u + 8u + 12u];
    uint32_t op_len = trc_strlen(op, 31u);
    uint32_t name_len = trc_strlen(name, 47u);
    w[1] = (index & 0xFFFFu) | ((engine & 0xFu) << 16);
    w[2] = op_len | (name_len << 8);
    uint32_t count = 3u;
    count += trc_pack(&w[count], op, op_len);
    count += trc_pack(&w[count], name, name_len);
    (void)trc_emit(TRC_REC_LAYER_INFO, w, count, 0u);
}

void trc_layer_info_once(uint32_t index, uint32_t engine, const char *op, const char *name)
{
    if (index < TRC_DESCRIBED_MAX) {
        uint32_t bit = 1u << (index & 31u);
        if (g_trc.described[index >> 5] & bit) {
            return;
        }
        g_trc.described[index >> 5] |= bit;
    }
    trc_layer_info(index, engine, op, name);
}

uint32_t trc_layer_begin(uint32_t index, uint32_t engine)
{
    uint32_t w[2];
    w[1] = (index & 0xFFFFu) | ((engine & 0xFu) << 16);
    g_trc.next_layer = index + 1u;
    return trc_emit(TRC_REC_LAYER_BEGIN, w, 2u, 0u);
}

uint32_t trc_layer_end(uint32_t index)
{
    uint32_t w[2];
    w[1] = index & 0xFFFFu;
    return trc_emit(TRC_REC_LAYER_END, w, 2u, 0u);
}

uint32_t trc_next_layer_index(void) { return g_trc.next_layer; }

void trc_pmu_config(uint32_t npu, uint32_t count, const uint16_t *event_types, uint32_t flags)
{
    uint32_t w[2u + 4u];
    if (count > 8u) {
        count = 8u;
    }
    w[1] = (npu & 0xFFu) | (count << 8) | ((flags & 0xFFu) << 16);
    uint32_t words = (count + 1u) / 2u;
    for (uint32_t i = 0; i < words; i++) {
        w[2u + i] = 0u;
    }
    for (uint32_t i = 0; i < count; i++) {
        w[2u + i / 2u] |= (uint32_t)event_types[i] << (16u * (i & 1u));
    }
    (void)trc_emit(TRC_REC_PMU_CONFIG, w, 2u + words, 0u);
}

void trc_pmu_snapshot(const trc_pmu_sample *sample)
{
    uint32_t w[4u + 8u];
    uint32_t count = sample->count > 8u ? 8u : sample->count;
    w[1] = count | ((sample->flags & 0xFFu) << 8);
    w[2] = (uint32_t)sample->cycles;
    w[3] = (uint32_t)(sample->cycles >> 32) & 0xFFFFu;
    for (uint32_t i = 0; i < count; i++) {
        w[4u + i] = sample->counters[i];
    }
    (void)trc_emit(TRC_REC_PMU_SNAPSHOT, w, 4u + count, 0u);
}

void trc_npu_job_begin(uint32_t job)
{
    uint32_t w[2];
    w[1] = job;
    (void)trc_emit(TRC_REC_NPU_JOB_BEGIN, w, 2u, 0u);
}

void trc_npu_job_end(uint32_t job, uint32_t status)
{
    uint32_t w[3];
    w[1] = job;
    w[2] = status;
    (void)trc_emit(TRC_REC_NPU_JOB_END, w, 3u, 0u);
}

void trc_arena(uint32_t used_bytes, uint32_t size_bytes)
{
    uint32_t w[3];
    w[1] = used_bytes;
    w[2] = size_bytes;
    (void)trc_emit(TRC_REC_ARENA, w, 3u, 0u);
}

void trc_stack_report(const trc_stack *stack)
{
    uint32_t w[4u + 4u];
    uint32_t ok = (uint32_t)trc_stack_canary_ok(stack);
    uint32_t name_len = trc_strlen(stack->name, 15u);
    w[1] = (stack->id & 0xFFu) | (ok << 8) | (name_len << 16);
    w[2] = stack->size;
    w[3] = trc_stack_high_water(stack);
    uint32_t count = 4u + trc_pack(&w[4], stack->name, name_len);
    (void)trc_emit(TRC_REC_STACK, w, count, 0u);
}

void trc_cache_op(uint32_t op, const void *address, uint32_t length)
{
    uint32_t w[4];
    w[1] = op;
    w[2] = (uint32_t)(uintptr_t)address;
    w[3] = length;
    (void)trc_emit(TRC_REC_CACHE_OP, w, 4u, 0u);
}

void trc_npu_buffer(uint32_t job, uint32_t role, const void *address, uint32_t length)
{
    uint32_t w[5];
    w[1] = job;
    w[2] = role;
    w[3] = (uint32_t)(uintptr_t)address;
    w[4] = length;
    (void)trc_emit(TRC_REC_NPU_BUFFER, w, 5u, 0u);
}

static void trc_buffer_access(uint32_t type, const void *address, uint32_t length)
{
    uint32_t w[3];
    w[1] = (uint32_t)(uintptr_t)address;
    w[2] = length;
    (void)trc_emit(type, w, 3u, 0u);
}

void trc_cpu_write(const void *address, uint32_t length) { trc_buffer_access(TRC_REC_CPU_WRITE, address, length); }

void trc_cpu_read(const void *address, uint32_t length) { trc_buffer_access(TRC_REC_CPU_READ, address, length); }

void trc_isr_enter(uint32_t exception)
{
    uint32_t w[2];
    w[1] = exception;
    (void)trc_emit(TRC_REC_ISR_ENTER, w, 2u, 0u);
}

void trc_isr_exit(uint32_t exception)
{
    uint32_t w[2];
    w[1] = exception;
    (void)trc_emit(TRC_REC_ISR_EXIT, w, 2u, 0u);
}

void trc_isr_info(uint32_t exception, const char *name)
{
    uint32_t w[2u + 8u];
    uint32_t name_len = trc_strlen(name, 31u);
    w[1] = (exception & 0x1FFu) | (name_len << 16);
    uint32_t count = 2u + trc_pack(&w[2], name, name_len);
    (void)trc_emit(TRC_REC_ISR_INFO, w, count, 0u);
}

uint32_t trc_active_exception(void)
{
#if defined(__arm__)
    uint32_t ipsr;
    __asm volatile("mrs %0, ipsr" : "=r"(ipsr));
    return ipsr & 0x1FFu;
#else
    return 0u;
#endif
}

uint32_t trc_buffer_crc(uint32_t which, const void *data, uint32_t length)
{
    uint32_t w[4];
    uint32_t crc = trc_crc32(0u, data, length);
    w[1] = which;
    w[2] = crc;
    w[3] = length;
    (void)trc_emit(TRC_REC_BUFFER_CRC, w, 4u, 0u);
    return crc;
}

void trc_mark(uint32_t id)
{
    uint32_t w[2];
    w[1] = id;
    (void)trc_emit(TRC_REC_MARK, w, 2u, 0u);
}

void trc_value(uint32_t id, uint32_t value)
{
    uint32_t w[3];
    w[1] = id;
    w[2] = value;
    (void)trc_emit(TRC_REC_VALUE, w, 3u, 0u);
}

/* ---- records of other modules (trc_sampler.c) -------------------------------------------- */

uint32_t trc_record(uint32_t type, uint32_t *words, uint32_t count)
{
    if (count == 0u || count > TRC_MAX_WORDS) {
        return 0u;
    }
    return trc_emit(type & 0x3Fu, words, count, 0u);
}

/* ---- text and sync ------------------------------------------------------------------------ */

/* Up to 4 characters as one port-0 packet (size 1, 2 or 4; 3 characters go as 2 + 1). */
static void trc_text_packet(const char *text, uint32_t length)
{
    uint32_t value = 0u;
    for (uint32_t i = 0; i < length; i++) {
        value |= (uint32_t)(uint8_t)text[i] << (8u * i);
    }
    if (g_trc.write != 0) {
        uint8_t bytes[5];
        uint8_t code = (uint8_t)(length == 4u ? 3u : length);
        bytes[0] = (uint8_t)((TRC_PORT_TEXT << 3) | code);
        for (uint32_t i = 0; i < length; i++) {
            bytes[1u + i] = (uint8_t)(value >> (8u * i));
        }
        (void)g_trc.write(g_trc.write_ctx, bytes, 1u + length);
        return;
    }
#if defined(__arm__)
    if (g_trc.itm) {
        if (length == 4u) {
            (void)trc_itm_put32(TRC_PORT_TEXT, value);
        } else {
            for (uint32_t i = 0; i < length; i++) {
                (void)trc_itm_put8(TRC_PORT_TEXT, (uint8_t)(value >> (8u * i)));
            }
        }
    }
#endif
}

void trc_print(const char *text)
{
    uint32_t length = trc_strlen(text, 0xFFFFFFFFu);
    uint32_t i = 0;
    while (i < length) {
        uint32_t left = length - i;
        uint32_t take = left >= 4u ? 4u : (left >= 2u ? 2u : 1u);
        TRC_LOCK();
        trc_text_packet(&text[i], take);
        TRC_UNLOCK();
        i += take;
    }
}

void trc_print_u64(uint64_t value)
{
    char digits[21];
    uint32_t n = 20u;
    digits[20] = '\0';
    do {
        digits[--n] = (char)('0' + (uint32_t)(value % 10u));
        value /= 10u;
    } while (value != 0u);
    trc_print(&digits[n]);
}

void trc_print_u32(uint32_t value) { trc_print_u64(value); }

void trc_sync(void)
{
    /* 9 zero bytes then 0x80: even if up to 4 zeros are swallowed as the payload of a packet
     * misread after lost bytes, 5 remain, which with 0x80 form an ITM synchronisation packet.
     * Hardware ITM makes its own sync packets (ITM_TCR.SYNCENA). */
    static const uint8_t sync[10] = {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0x80u};
    if (g_trc.write != 0) {
        TRC_LOCK();
        (void)g_trc.write(g_trc.write_ctx, sync, (uint32_t)sizeof sync);
        TRC_UNLOCK();
    }
}

/* ---- cost and counters -------------------------------------------------------------------- */

uint32_t trc_measure_marker_cost(uint32_t pairs)
{
    if (pairs == 0u) {
        return TRC_MARKER_COST_UNKNOWN;
    }
    uint32_t start = g_trc.now32();
    for (uint32_t i = 0; i < pairs; i++) {
        (void)trc_layer_begin(TRC_LAYER_CALIBRATION, TRC_ENGINE_CPU);
        (void)trc_layer_end(TRC_LAYER_CALIBRATION);
    }
    uint32_t ticks = g_trc.now32() - start;
    g_trc.next_layer = 0u;
    return (uint32_t)(((uint64_t)ticks * 16u + pairs / 2u) / pairs);
}

uint32_t trc_dropped(void) { return g_trc.dropped; }
uint32_t trc_emitted(void) { return g_trc.emitted; }
