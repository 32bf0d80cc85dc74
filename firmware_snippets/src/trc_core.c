/*
 * trc core: record framing and the record functions. A record is stamped, numbered and placed
 * in the ring with interrupts masked (trc_emit: a few dozen instructions whatever its size),
 * then encoded into its place with interrupts enabled and committed; trc_ring.c sends it.
 * Wire format: firmware_snippets/README.md.
 */
#include "trc_internal.h"

#define TRC_WITH_TIME64 1u
#define TRC_PAIR_BYTES 80u /* ring room per calibration pair: two 15-byte records + a CPU_COUNTERS record */

void trc_set_time(trc_now32_fn now32, trc_now64_fn now64, uint32_t clock_hz, uint32_t source)
{
    trc_g.now32 = now32 ? now32 : trc_time_zero;
    trc_g.now64 = now64;
    trc_g.clock_hz = clock_hz;
    trc_g.time_source = source;
    trc_g.t_last = trc_g.now32();
    trc_g.t_hi = 0u;
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
    /* The four CRC steps unrolled (it runs for every record). */
    uint32_t crc = 0xFFFFu;
    crc = ((crc << 8) ^ trc_crc16_table[((crc >> 8) ^ acc) & 0xFFu]) & 0xFFFFu;
    crc = ((crc << 8) ^ trc_crc16_table[((crc >> 8) ^ (acc >> 8)) & 0xFFu]) & 0xFFFFu;
    crc = ((crc << 8) ^ trc_crc16_table[((crc >> 8) ^ (acc >> 16)) & 0xFFu]) & 0xFFFFu;
    crc = ((crc << 8) ^ trc_crc16_table[((crc >> 8) ^ (acc >> 24)) & 0xFFu]) & 0xFFFFu;
    return crc & 0xFFFu;
}

/* A 4-byte SWIT packet: the header byte, then the value little-endian. */

static void trc_put_packet(uint8_t *out, uint8_t header, uint32_t value)
{
    out[0] = header;
#ifdef TRC_UNALIGNED_LE
    __builtin_memcpy(&out[1], &value, 4u);
#else
    out[1] = (uint8_t)value;
    out[2] = (uint8_t)(value >> 8);
    out[3] = (uint8_t)(value >> 16);
    out[4] = (uint8_t)(value >> 24);
#endif
}

/* The record's packets, straight into the ring when they do not wrap (the common case). */
static void trc_put_record(uint32_t pos, uint32_t header, const uint32_t *words, uint32_t count)
{
    uint32_t bytes = TRC_SWIT_BYTES * (count + 1u);
    uint32_t at = pos & TRC_RING_MASK;
    uint8_t copy[TRC_RECORD_BYTES_MAX];
    uint8_t *out = at + bytes <= TRC_RING_BYTES ? &trc_g.ring[at] : copy;
    trc_put_packet(out, TRC_SWIT4(TRC_PORT_HEADER), header);
    for (uint32_t i = 0; i < count; i++) {
        trc_put_packet(&out[TRC_SWIT_BYTES * (i + 1u)], TRC_SWIT4(TRC_PORT_DATA), words[i]);
    }
    if (out == copy) {
        trc_ring_copy(pos, copy, bytes);
    }
}

/* Emit one record; returns the low 32 bits of its time. words[0] receives the time, words[1]
 * the high 32 bits when TRC_WITH_TIME64.
 *
 * The time is read first, interrupts enabled. Masked: if another record was stamped since (an
 * interrupt emitted one in between), this record takes that record's time instead, so records
 * stay in time order on the wire; then the sequence number and the place in the ring. A full
 * ring drops the record, counted, and still uses its sequence number (up to 255 in a row) so
 * the host sees the gap. Not masked: the check, the encoding, the send. */
static uint32_t trc_emit(uint32_t type, uint32_t *words, uint32_t count, uint32_t options)
{
    const uint32_t bytes = TRC_SWIT_BYTES * (count + 1u);
    const uint32_t stamps = trc_g.stamps;
    uint32_t lo;
    uint32_t hi = 0u;
    int full = (options & TRC_WITH_TIME64) && trc_g.now64 != 0;
    if (full) {
        uint64_t now = trc_g.now64();
        lo = (uint32_t)now;
        hi = (uint32_t)(now >> 32);
    } else {
        lo = trc_g.now32();
    }
    uint32_t seq;
    uint32_t pos;
    int ok;
    {
        TRC_ENTER();
        if (trc_g.stamps != stamps) {
            lo = trc_g.t_last;
            hi = trc_g.t_hi;
        } else {
            if (!full) {
                hi = trc_g.t_hi + (lo < trc_g.t_last ? 1u : 0u);
            }
            trc_g.t_last = lo;
            trc_g.t_hi = hi;
        }
        trc_g.stamps = stamps + 1u;
        pos = trc_g.head;
        seq = trc_g.seq;
        ok = pos - trc_g.tail + bytes <= trc_g.capacity;
        if (ok) {
            trc_g.head = pos + bytes;
            trc_g.writers++;
            trc_g.seq = seq + 1u;
            trc_g.seq_after_ok = seq + 1u;
        } else {
            trc_g.dropped_full++;
            if (seq - trc_g.seq_after_ok < 255u) {
                trc_g.seq = seq + 1u;
            }
        }
        TRC_LEAVE(TRC_SITE_RESERVE);
    }
    if (ok) {
        words[0] = lo;
        if (options & TRC_WITH_TIME64) {
            words[1] = hi;
        }
        /* Header: type bits 0-5, payload words 6-11, sequence 12-19, check 20-31. */
        uint32_t head = (type & 0x3Fu) | (count << 6) | ((seq & 0xFFu) << 12);
        head |= trc_check(head, words, count) << 20;
        trc_put_record(pos, head, words, count);
        trc_ring_commit(pos, bytes);
    }
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
    w[2] = trc_g.clock_hz;
    w[3] = (trc_g.time_source & 0xFFu) | (flags & 0xFFFFFF00u);
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
    uint32_t before = trc_dropped();
    if (before != trc_g.dropped_reported) {
        uint32_t w[2];
        w[1] = before;
        (void)trc_emit(TRC_REC_DROPPED, w, 2u, 0u);
        if (trc_dropped() == before) {
            trc_g.dropped_reported = before;
        }
    }
}

uint32_t trc_inference_begin(void)
{
    uint32_t w[3];
    uint32_t number = trc_g.inference++;
    trc_sync();
    trc_report_dropped();
    trc_g.next_layer = 0u;
    w[2] = number;
    (void)trc_emit(TRC_REC_INFERENCE_BEGIN, w, 3u, TRC_WITH_TIME64);
    return number;
}

void trc_inference_end(uint32_t status)
{
    uint32_t w[3];
    w[1] = trc_g.inference - 1u;
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
        if (trc_g.described[index >> 5] & bit) {
            return;
        }
        trc_g.described[index >> 5] |= bit;
    }
    trc_layer_info(index, engine, op, name);
}

uint32_t trc_layer_begin(uint32_t index, uint32_t engine)
{
    uint32_t w[2];
    w[1] = (index & 0xFFFFu) | ((engine & 0xFu) << 16);
    trc_g.next_layer = index + 1u;
    uint32_t t = trc_emit(TRC_REC_LAYER_BEGIN, w, 2u, 0u);
    if (trc_g.counters_begin != 0) {
        trc_g.counters_begin();
    }
    return t;
}

uint32_t trc_layer_end(uint32_t index)
{
    uint32_t w[2];
    if (trc_g.counters_end != 0) {
        trc_g.counters_end(index);
    }
    w[1] = index & 0xFFFFu;
    return trc_emit(TRC_REC_LAYER_END, w, 2u, 0u);
}

uint32_t trc_next_layer_index(void) { return trc_g.next_layer; }

void trc_layer_work(uint32_t index, uint32_t amount)
{
    uint32_t w[3];
    w[1] = index & 0xFFFFu;
    w[2] = amount;
    (void)trc_emit(TRC_REC_WORK, w, 3u, 0u);
}

void trc_emit_counters(uint32_t type, uint32_t *words, uint32_t count) { (void)trc_emit(type, words, count, 0u); }

void trc_pmu_config(uint32_t npu, uint32_t count, const uint16_t *event_types, uint32_t flags)
{
    uint32_t w[2u + 4u];
    if (count > 8u) {
        count = 8u;
    }
    /* The record's flag byte: bit 0 "simulated". Accept the documented TARGET_INFO spelling
     * (TRC_INFO_NPU_PMU_SIMULATED, bit 8) as well as the record's own bit. */
    uint32_t record_flags = (flags & 0xFFu) | ((flags & TRC_INFO_NPU_PMU_SIMULATED) ? 1u : 0u);
    w[1] = (npu & 0xFFu) | (count << 8) | (record_flags << 16);
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

/* Records of one 32-bit value after the time (buffer marks take two). */
static void trc_emit_values(uint32_t type, uint32_t a, uint32_t b, uint32_t count)
{
    uint32_t w[3];
    w[1] = a;
    w[2] = b;
    (void)trc_emit(type, w, count, 0u);
}

void trc_cpu_write(const void *address, uint32_t length)
{
    trc_emit_values(TRC_REC_CPU_WRITE, (uint32_t)(uintptr_t)address, length, 3u);
}

void trc_cpu_read(const void *address, uint32_t length)
{
    trc_emit_values(TRC_REC_CPU_READ, (uint32_t)(uintptr_t)address, length, 3u);
}

void trc_isr_enter(uint32_t exception) { trc_emit_values(TRC_REC_ISR_ENTER, exception, 0u, 2u); }

void trc_isr_exit(uint32_t exception) { trc_emit_values(TRC_REC_ISR_EXIT, exception, 0u, 2u); }

/* An id, a small number and a name (up to 31 characters): ISR and task descriptions. */
static void trc_emit_named(uint32_t type, uint32_t id_and_flags, const uint32_t *extra, uint32_t extra_count,
                           const char *name)
{
    uint32_t w[3u + 8u];
    uint32_t name_len = trc_strlen(name, 31u);
    uint32_t count = 1u;
    w[count++] = id_and_flags;
    for (uint32_t i = 0; i < extra_count; i++) {
        w[count++] = extra[i];
    }
    w[count - 1u] |= name_len << 16;
    count += trc_pack(&w[count], name, name_len);
    (void)trc_emit(type, w, count, 0u);
}

void trc_isr_info(uint32_t exception, const char *name)
{
    trc_emit_named(TRC_REC_ISR_INFO, exception & 0x1FFu, 0, 0u, name);
}

void trc_task_switched_in(uint32_t task) { trc_emit_values(TRC_REC_TASK_SWITCH, task, 0u, 2u); }

void trc_task_info(uint32_t task, uint32_t priority, const char *name)
{
    uint32_t prio = priority & 0xFFu;
    trc_emit_named(TRC_REC_TASK_INFO, task, &prio, 1u, name);
}

void trc_task_deleted(uint32_t task) { trc_emit_values(TRC_REC_TASK_DELETE, task, 0u, 2u); }

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

void trc_mark(uint32_t id) { trc_emit_values(TRC_REC_MARK, id, 0u, 2u); }

void trc_value(uint32_t id, uint32_t value) { trc_emit_values(TRC_REC_VALUE, id, value, 3u); }

/* The sync pin's level and the marks made: one pin per firmware (a second call site shares it). */
static uint32_t trc_sync_level;
static uint32_t trc_sync_marks;

void trc_sync_pin(trc_pin_fn set_pin, void *ctx, uint32_t meter_input)
{
    uint32_t level;
    uint32_t mark;
    TRC_LOCK(); /* an interrupt's mark between the read and the write would repeat a level */
    level = trc_sync_level ^ 1u;
    trc_sync_level = level;
    mark = trc_sync_marks++;
    TRC_UNLOCK();
    if (set_pin != 0) {
        set_pin(ctx, level);
    }
    trc_emit_values(TRC_REC_SYNC_PIN, level | ((meter_input & 0xFFu) << 8), mark, 3u);
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

/* Raw bytes (text packets, the sync pattern) into the ring. Text has no sequence number: when
 * the ring is full the drain is tried once, then the bytes are dropped and counted. */
static void trc_put_raw(const uint8_t *bytes, uint32_t length)
{
    uint32_t pos;
    const int retry = trc_g.drain == TRC_DRAIN_DEFERRED;
    if (!trc_ring_reserve_raw(length, &pos, !retry)) {
        (void)trc_flush();
        if (!retry || !trc_ring_reserve_raw(length, &pos, 1)) {
            return;
        }
    }
    trc_ring_copy(pos, bytes, length);
    trc_ring_commit(pos, length);
}

void trc_print(const char *text)
{
    uint32_t length = trc_strlen(text, 0xFFFFFFFFu);
    uint32_t i = 0;
    while (i < length) {
        /* Up to 4 characters as one port-0 packet (size 1, 2 or 4; 3 characters go as 2 + 1). */
        uint32_t left = length - i;
        uint32_t take = left >= 4u ? 4u : (left >= 2u ? 2u : 1u);
        uint8_t packet[5];
        packet[0] = (uint8_t)((TRC_PORT_TEXT << 3) | (take == 4u ? 3u : take));
        for (uint32_t k = 0; k < take; k++) {
            packet[1u + k] = (uint8_t)text[i + k];
        }
        trc_put_raw(packet, 1u + take);
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
    static const uint8_t sync[TRC_SYNC_BYTES] = {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0x80u};
    if (trc_g.out == TRC_OUT_WRITER || trc_g.out == TRC_OUT_CONSUMER) {
        trc_put_raw(sync, TRC_SYNC_BYTES);
    }
}

/* ---- cost and counters -------------------------------------------------------------------- */

uint32_t trc_measure_marker_cost(uint32_t pairs)
{
    if (pairs == 0u) {
        return TRC_MARKER_COST_UNKNOWN;
    }
    /* Unless a writer sends on emit (then the send is part of each marker's cost), time batches
     * that fit the ring and drain between them, untimed: with a deferred drain the cost is what
     * markers add inside a layer, and a slow ITM port or consumer never makes the ring drop. */
    const int batched = trc_g.drain == TRC_DRAIN_DEFERRED || trc_g.out != TRC_OUT_WRITER;
    uint32_t ticks = 0u;
    uint32_t left = pairs;
    while (left != 0u) {
        uint32_t batch = left;
        if (batched) {
            if (!trc_ring_make_room(TRC_RING_BYTES)) {
                return TRC_MARKER_COST_UNKNOWN;
            }
            batch = TRC_RING_BYTES / TRC_PAIR_BYTES;
            batch = batch < left ? batch : left;
        }
        uint32_t start = trc_g.now32();
        for (uint32_t i = 0; i < batch; i++) {
            (void)trc_layer_begin(TRC_LAYER_CALIBRATION, TRC_ENGINE_CPU);
            (void)trc_layer_end(TRC_LAYER_CALIBRATION);
        }
        ticks += trc_g.now32() - start;
        left -= batch;
    }
    if (batched) {
        (void)trc_flush();
    }
    trc_g.next_layer = 0u;
    return (uint32_t)(((uint64_t)ticks * 16u + pairs / 2u) / pairs);
}

uint32_t trc_dropped(void) { return trc_g.dropped_full + trc_g.refused; }
uint32_t trc_emitted(void) { return trc_g.stamps - trc_g.dropped_full - trc_g.refused; }
uint32_t trc_text_dropped(void) { return trc_g.text_dropped; }
