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

void uart_init(void);
int uart_write(void *ctx, const uint8_t *bytes, uint32_t length); /* trc_write_fn */
uint8_t uart_getc(void);
void board_stacks_paint(void);
void board_exit(int code) __attribute__((noreturn));

#endif
