/* Board support: CMSDK UART0, stacks, semihosting exit, the few libc functions GCC may call. */
#include "board.h"

#include <stddef.h>

#define UART0_BASE 0x49303000u
#define UART_DATA REG32(UART0_BASE + 0x00u)
#define UART_STATE REG32(UART0_BASE + 0x04u) /* bit 0 TX full, bit 1 RX full */
#define UART_CTRL REG32(UART0_BASE + 0x08u)  /* bit 0 TX enable, bit 1 RX enable */
#define UART_BAUDDIV REG32(UART0_BASE + 0x10u)
#define SCB_AIRCR REG32(0xE000ED0Cu)

#define MAIN_STACK_BYTES 16384u
#define HANDLER_STACK_BYTES 4096u
#define STACK_GUARD_BYTES 256u

/* S32K timer: CMSDK APB timer (counts VALUE down at 32 kHz; at 0 it interrupts and reloads). */
#define TIMER_BASE 0x4802F000u
#define TIMER_CTRL REG32(TIMER_BASE + 0x00u) /* bit 0 enable, bit 3 interrupt enable */
#define TIMER_VALUE REG32(TIMER_BASE + 0x04u)
#define TIMER_RELOAD REG32(TIMER_BASE + 0x08u)
#define TIMER_INTCLEAR REG32(TIMER_BASE + 0x0Cu)
#define NVIC_ISER0 REG32(0xE000E100u)
#define TIMER_IRQ 2u

/* Laid out in this order by the linker script: the main stack grows down into the guard, not
 * into the handler stack (the stack-overflow scenario runs past the main stack's canary). */
__attribute__((section(".stacks.main"), aligned(8))) uint32_t g_main_stack_area[MAIN_STACK_BYTES / 4u];
__attribute__((section(".stacks.guard"), aligned(8), used)) uint32_t g_stack_guard[STACK_GUARD_BYTES / 4u];
__attribute__((section(".stacks.handler"), aligned(8))) uint32_t g_handler_stack_area[HANDLER_STACK_BYTES / 4u];

trc_stack g_stack_main = {"main", g_main_stack_area, MAIN_STACK_BYTES, 0u};
trc_stack g_stack_handler = {"handler", g_handler_stack_area, HANDLER_STACK_BYTES, 1u};

void uart_init(void)
{
    UART_BAUDDIV = 16u; /* the smallest legal divider; QEMU does not pace by baud rate */
    UART_CTRL = 3u;
}

void timer_init(void)
{
    TIMER_CTRL = 0u;
    TIMER_INTCLEAR = 1u;
    NVIC_ISER0 = 1u << TIMER_IRQ;
}

void timer_fire_in(uint32_t ticks)
{
    TIMER_CTRL = 0u;
    TIMER_INTCLEAR = 1u;
    TIMER_RELOAD = 0xFFFFFFFFu;
    TIMER_VALUE = ticks;
    TIMER_CTRL = 1u | (1u << 3);
}

void timer_ack(void)
{
    TIMER_CTRL = 0u;
    TIMER_INTCLEAR = 1u;
}

int uart_write(void *ctx, const uint8_t *bytes, uint32_t length)
{
    (void)ctx;
    for (uint32_t i = 0; i < length; i++) {
        while (UART_STATE & 1u) {
        }
        UART_DATA = bytes[i];
    }
    return 0;
}

uint8_t uart_getc(void)
{
    while ((UART_STATE & 2u) == 0u) {
    }
    return (uint8_t)UART_DATA;
}

/* Called on the handler stack before main() switches to the main stack. */
void board_stacks_paint(void)
{
    trc_stack_paint(&g_stack_main, (const uint8_t *)g_main_stack_area + MAIN_STACK_BYTES);
    trc_stack_paint_below_sp(&g_stack_handler, 64u);
}

static uint32_t semihost(uint32_t op, const void *arg)
{
    register uint32_t r0 __asm("r0") = op;
    register const void *r1 __asm("r1") = arg;
    __asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void board_exit(int code)
{
    static uint32_t block[2];
    while (UART_STATE & 1u) {
    }
    block[0] = 0x20026u; /* ADP_Stopped_ApplicationExit */
    block[1] = (uint32_t)code;
    (void)semihost(0x20u, block); /* SYS_EXIT_EXTENDED: QEMU exits with `code` */
    /* No semihosting: reset; QEMU -no-reboot then exits. */
    SCB_AIRCR = (0x5FAu << 16) | (1u << 2);
    for (;;) {
    }
}

/* GCC may emit calls to these even in freestanding code (struct copies, zero-fills). */
void *memset(void *dst, int value, size_t length);
void *memcpy(void *dst, const void *src, size_t length);

void *memset(void *dst, int value, size_t length)
{
    volatile uint8_t *d = (volatile uint8_t *)dst;
    while (length--) {
        *d++ = (uint8_t)value;
    }
    return dst;
}

void *memcpy(void *dst, const void *src, size_t length)
{
    volatile uint8_t *d = (volatile uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    while (length--) {
        *d++ = *s++;
    }
    return dst;
}
