/* Vector table and reset handler: copy .data, zero .bss, paint the stacks, move main() onto
 * its own stack (PSP) so interrupts and the network use separate stacks, run, exit. */
#include "board.h"

extern uint32_t __data_load, __data_start, __data_end, __bss_start, __bss_end;
extern uint32_t g_handler_stack_area[];
extern uint32_t g_main_stack_area[];
int main(void);

void Reset_Handler(void);
void Default_Handler(void);
void Fault_Handler(void);
void SysTick_Handler(void);
void Timer_Handler(void); /* the demo's (weak default: unexpected) */
void Sampling_Timer_Handler(void); /* npu-sampling scenario, sampling.c (weak default: unexpected) */
void PendSV_Handler(void); /* the demo's task switch (weak default: unexpected) */

#define SCB_VTOR REG32(0xE000ED08u)
#define SCB_SHCSR REG32(0xE000ED24u)
#define SCB_CFSR REG32(0xE000ED28u)
#define SCB_HFSR REG32(0xE000ED2Cu)

__attribute__((section(".vectors"), used)) void (*const g_vectors[16 + 48])(void) = {
    (void (*)(void))&g_handler_stack_area[4096u / 4u], /* initial SP: top of the handler stack */
    Reset_Handler,
    Default_Handler, /* NMI */
    Fault_Handler,   /* HardFault */
    Fault_Handler,   /* MemManage */
    Fault_Handler,   /* BusFault */
    Fault_Handler,   /* UsageFault */
    Fault_Handler,   /* SecureFault */
    0, 0, 0,
    Default_Handler, /* SVC */
    Default_Handler, /* DebugMon */
    0,
    PendSV_Handler,
    SysTick_Handler,
    [16 ... 17] = Default_Handler,
    Timer_Handler, /* 18: IRQ 2, the S32K timer */
    Sampling_Timer_Handler, /* 19: IRQ 3, SSE-300 timer 0 */
    [20 ... 63] = Default_Handler,
};

__attribute__((noinline, noreturn)) static void run_on_main_stack(void)
{
    uint32_t top = (uint32_t)(uintptr_t)g_main_stack_area + g_stack_main.size;
    __asm volatile("msr psp, %0\n\t"
                   "mov r0, #2\n\t"
                   "msr control, r0\n\t" /* SPSEL: thread mode uses PSP */
                   "isb" ::"r"(top)
                   : "r0", "memory");
    board_exit(main());
}

void Reset_Handler(void)
{
    uint32_t *src = &__data_load;
    for (uint32_t *dst = &__data_start; dst < &__data_end;) {
        *dst++ = *src++;
    }
    for (volatile uint32_t *dst = &__bss_start; dst < &__bss_end;) {
        *dst++ = 0u;
    }
    SCB_VTOR = (uint32_t)(uintptr_t)g_vectors;
    SCB_SHCSR |= (1u << 16) | (1u << 17) | (1u << 18) | (1u << 19);
    uart_init();
    board_stacks_paint();
    run_on_main_stack();
}

void SysTick_Handler(void) { trc_time_systick_isr(); }

static void fatal(const char *what, uint32_t code)
{
    trc_print("\nFATAL ");
    trc_print(what);
    trc_print(" cfsr=");
    trc_print_u32(SCB_CFSR);
    trc_print(" hfsr=");
    trc_print_u32(SCB_HFSR);
    trc_print("\n");
    board_exit((int)code);
}

void Default_Handler(void) { fatal("unexpected exception", 4u); }
__attribute__((weak)) void Timer_Handler(void) { fatal("unexpected timer interrupt", 4u); }
__attribute__((weak)) void Sampling_Timer_Handler(void) { fatal("unexpected sampling timer interrupt", 4u); }
__attribute__((weak)) void PendSV_Handler(void) { fatal("unexpected PendSV", 4u); }
void Fault_Handler(void) { fatal("fault", 3u); }
