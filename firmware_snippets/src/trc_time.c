/*
 * Time bases for the records: DWT CYCCNT where the core has one, else SysTick on the processor
 * clock extended to 64 bits by its wrap interrupt (QEMU has no DWT; real cores count the same
 * CPU cycles either way).
 */
#include "trc.h"

#if defined(__arm__)

#define TRC_REG(addr) (*(volatile uint32_t *)(addr))
#define TRC_DEMCR TRC_REG(0xE000EDFCu)
#define TRC_DWT_CTRL TRC_REG(0xE0001000u)
#define TRC_DWT_CYCCNT TRC_REG(0xE0001004u)
#define TRC_DWT_LAR TRC_REG(0xE0001FB0u)
#define TRC_SYST_CSR TRC_REG(0xE000E010u)
#define TRC_SYST_RVR TRC_REG(0xE000E014u)
#define TRC_SYST_CVR TRC_REG(0xE000E018u)
#define TRC_SCB_ICSR TRC_REG(0xE000ED04u)

#define TRC_DEMCR_TRCENA (1u << 24)
#define TRC_DWT_NOCYCCNT (1u << 25)
#define TRC_DWT_CYCCNTENA 1u
#define TRC_ICSR_PENDSTSET (1u << 26)
#define TRC_SYSTICK_PERIOD (1u << 24) /* reload 0xFFFFFF: the longest period, fewest interrupts */

static uint32_t trc_dwt_now32(void) { return TRC_DWT_CYCCNT; }

int trc_time_dwt_init(uint32_t cpu_hz)
{
    TRC_DEMCR |= TRC_DEMCR_TRCENA;
    TRC_DWT_LAR = 0xC5ACCE55u;  /* Cortex-M7: the DWT is locked until this key is written */
    if (TRC_DWT_CTRL & TRC_DWT_NOCYCCNT) {
        return -1;
    }
    TRC_DWT_CYCCNT = 0u;
    TRC_DWT_CTRL |= TRC_DWT_CYCCNTENA;
    uint32_t before = TRC_DWT_CYCCNT;
    for (volatile uint32_t i = 0; i < 16u; i++) {
    }
    if (TRC_DWT_CYCCNT == before) {  /* present but dead (emulators read it as 0) */
        return -1;
    }
    /* now64 NULL: the library extends CYCCNT to 64 bits at each record. */
    trc_set_time(trc_dwt_now32, 0, cpu_hz, TRC_TIME_DWT);
    return 0;
}

static volatile uint32_t g_trc_systick_wraps;

void trc_time_systick_isr(void) { g_trc_systick_wraps++; }

uint64_t trc_time_systick_now64(void)
{
    /* The counter reaching 0 is the wrap (that is when SysTick pends), so a reading of 0
     * belongs to the next period: time = wraps * 2^24 + (2^24 - value) mod 2^24. */
    for (;;) {
        uint32_t wraps = g_trc_systick_wraps;
        uint32_t value = TRC_SYST_CVR;
        uint32_t hi = wraps;
        if (TRC_SCB_ICSR & TRC_ICSR_PENDSTSET) {
            /* Wrapped, interrupt not yet taken (we may be inside a lock): read again after
             * the wrap and count it ourselves. */
            value = TRC_SYST_CVR;
            hi = wraps + 1u;
        }
        if (wraps == g_trc_systick_wraps) {  /* no interrupt ran in between */
            return (uint64_t)hi * TRC_SYSTICK_PERIOD + ((TRC_SYSTICK_PERIOD - value) & (TRC_SYSTICK_PERIOD - 1u));
        }
    }
}

uint32_t trc_time_systick_now32(void) { return (uint32_t)trc_time_systick_now64(); }

void trc_time_systick_rezero(void)
{
    TRC_SYST_CSR = 0u;
    TRC_SYST_RVR = TRC_SYSTICK_PERIOD - 1u;
    TRC_SYST_CVR = 0u;               /* any write clears it; it reloads on the next tick */
    TRC_SCB_ICSR = 1u << 25;         /* PENDSTCLR */
    g_trc_systick_wraps = 0u;
    TRC_SYST_CSR = 7u;               /* processor clock, interrupt, enable */
    while (TRC_SYST_CVR == 0u) {     /* first reload: time starts at 0 */
    }
}

void trc_time_systick_init(uint32_t cpu_hz)
{
    trc_time_systick_rezero();
    trc_set_time(trc_time_systick_now32, trc_time_systick_now64, cpu_hz, TRC_TIME_SYSTICK);
}

#else /* host builds: no core peripherals */

int trc_time_dwt_init(uint32_t cpu_hz)
{
    (void)cpu_hz;
    return -1;
}
void trc_time_systick_init(uint32_t cpu_hz) { (void)cpu_hz; }
void trc_time_systick_isr(void) {}
void trc_time_systick_rezero(void) {}
uint32_t trc_time_systick_now32(void) { return 0u; }
uint64_t trc_time_systick_now64(void) { return 0u; }

#endif
