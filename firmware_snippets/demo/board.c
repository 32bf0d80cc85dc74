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

__attribute__((section(".stacks"), aligned(8))) uint32_t g_main_stack_area[MAIN_STACK_BYTES / 4u];
__attribute__((section(".stacks"), aligned(8))) uint32_t g_handler_stack_area[HANDLER_STACK_BYTES / 4u];

trc_stack g_stack_main = {"main", g_main_stack_area, MAIN_STACK_BYTES, 0u};
trc_stack g_stack_handler = {"handler", g_handler_stack_area, HANDLER_STACK_BYTES, 1u};

void uart_init(void)
{
    UART_BAUDDIV = 16u; /* the smallest legal divider; QEMU does not pace by baud rate */
    UART_CTRL = 3u;
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
