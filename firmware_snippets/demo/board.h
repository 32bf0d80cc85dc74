/* Board support of the demo firmware: QEMU mps3-an547 (Cortex-M55). */
#ifndef DEMO_BOARD_H
#define DEMO_BOARD_H

#include <stdint.h>

#include "trc.h"

#define BOARD_NAME "mps3-an547"
#define BOARD_CPU_HZ 32000000u /* QEMU's an547 processor clock: what SysTick counts */

#define REG32(addr) (*(volatile uint32_t *)(uintptr_t)(addr))
#define SCB_CPUID REG32(0xE000ED00u)

extern trc_stack g_stack_main;    /* thread mode (PSP): main() and the network */
extern trc_stack g_stack_handler; /* handler mode (MSP): reset, interrupts, faults */

/* The SSE-300 S32K timer (a CMSDK APB timer on the 32 kHz clock), IRQ 2. */
#define BOARD_TIMER_EXCEPTION 18u /* 16 + IRQ 2 */
#define BOARD_TIMER_HZ 32000u

void uart_init(void);
void timer_init(void);                 /* stopped, its IRQ enabled in the NVIC */
void timer_fire_in(uint32_t ticks);    /* one interrupt `ticks` 32 kHz ticks from now */
void timer_ack(void);                  /* in the handler: stop the timer, clear its interrupt */
int uart_write(void *ctx, const uint8_t *bytes, uint32_t length); /* trc_write_fn */
uint8_t uart_getc(void);
void board_stacks_paint(void);
void board_exit(int code) __attribute__((noreturn));

#endif
