/* A tiny Cortex-M image for tracer's ELF tests: a vector table with named and default handlers,
 * a tensor arena, an arena-used counter and a painted stack. Never run; only linked and read. */
#include <stdint.h>

#define STACK_WORDS 256u

uint8_t tensor_arena[8192] __attribute__((aligned(16)));
volatile uint32_t arena_used_bytes;
uint32_t main_stack[STACK_WORDS];

void Reset_Handler(void);
void Default_Handler(void);
void HardFault_Handler(void);
void SysTick_Handler(void);
void TIMER0_IRQHandler(void);
void UART0_RX_IRQHandler(void);
int main(void);

static uint32_t ticks;

void Default_Handler(void) { for (;;) { } }
void HardFault_Handler(void) { for (;;) { } }
void SysTick_Handler(void) { ticks++; }
void TIMER0_IRQHandler(void) { arena_used_bytes += 16u; }
void UART0_RX_IRQHandler(void) { ticks += 2u; }

int compute_layer(int x) { return x * 3 + (int)ticks; }

int main(void) {
    int acc = 0;
    for (int i = 0; i < 10; i++) {
        acc += compute_layer(i);
    }
    arena_used_bytes = (uint32_t)acc;
    return acc;
}

void Reset_Handler(void) { (void)main(); for (;;) { } }

/* Exceptions 0..15, then IRQ0 (exception 16) = TIMER0, IRQ1 = default, IRQ2 = UART0 RX. */
__attribute__((section(".isr_vector"), used))
void (*const __Vectors[19])(void) = {
    (void (*)(void))(&main_stack[STACK_WORDS]),
    Reset_Handler,
    Default_Handler,   /* NMI */
    HardFault_Handler,
    Default_Handler,   /* MemManage */
    Default_Handler,   /* BusFault */
    Default_Handler,   /* UsageFault */
    Default_Handler,   /* SecureFault */
    0, 0, 0,
    Default_Handler,   /* SVCall */
    Default_Handler,   /* DebugMonitor */
    0,
    Default_Handler,   /* PendSV */
    SysTick_Handler,
    TIMER0_IRQHandler, /* IRQ0 */
    Default_Handler,   /* IRQ1 */
    UART0_RX_IRQHandler, /* IRQ2 */
};
