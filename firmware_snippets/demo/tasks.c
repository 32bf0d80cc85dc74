/* The demo's two tasks and their scheduler (see tasks.h). */
#include "tasks.h"

#include "board.h"
#include "trc.h"

#define SENSOR_STACK_BYTES 2048u
#define SCB_ICSR REG32(0xE000ED04u)
#define SCB_SHPR3 REG32(0xE000ED20u)
#define ICSR_PENDSVSET (1u << 28)
#define XPSR_THUMB (1u << 24)

demo_task g_task_inference = {0u, "inference", 1u};
demo_task g_task_sensor = {0u, "sensor", 2u};

static demo_task *g_current = &g_task_inference;
static demo_task *volatile g_next = &g_task_inference;

__attribute__((aligned(8))) static uint32_t g_sensor_stack[SENSOR_STACK_BYTES / 4u];

static void task_returned(void)
{
    for (;;) { /* a task function must never return */
    }
}

void tasks_init(void (*sensor_entry)(void))
{
    SCB_SHPR3 |= 0xFFu << 16; /* PendSV: the lowest priority, after every interrupt */
    /* The sensor task's first frame: r4-r11, then what exception return pops (r0-r3, r12, lr,
     * pc, xPSR), so that the first switch to it "returns" into sensor_entry. */
    uint32_t *sp = &g_sensor_stack[SENSOR_STACK_BYTES / 4u] - 16;
    for (uint32_t i = 0; i < 16u; i++) {
        sp[i] = 0u;
    }
    sp[8 + 5] = (uint32_t)(uintptr_t)task_returned;       /* lr */
    sp[8 + 6] = (uint32_t)(uintptr_t)sensor_entry & ~1u;  /* pc */
    sp[8 + 7] = XPSR_THUMB;
    g_task_sensor.sp = (uint32_t)(uintptr_t)sp;
    trc_task_info((uint32_t)(uintptr_t)&g_task_inference, g_task_inference.priority, g_task_inference.name);
    trc_task_info((uint32_t)(uintptr_t)&g_task_sensor, g_task_sensor.priority, g_task_sensor.name);
    trc_task_switched_in((uint32_t)(uintptr_t)&g_task_inference);
}

void tasks_switch_to(demo_task *next)
{
    g_next = next;
    SCB_ICSR = ICSR_PENDSVSET;
    __asm volatile("dsb\n\tisb" ::: "memory");
}

void tasks_yield_to_inference(void) { tasks_switch_to(&g_task_inference); }

/* Called by PendSV_Handler with the outgoing task's stack pointer (r4-r11 already saved below
 * the hardware frame); returns the incoming task's. */
uint32_t tasks_switch_context(uint32_t sp);
uint32_t tasks_switch_context(uint32_t sp)
{
    g_current->sp = sp;
    g_current = g_next;
    trc_task_switched_in((uint32_t)(uintptr_t)g_current); /* traceTASK_SWITCHED_IN() */
    return g_current->sp;
}

__attribute__((naked)) void PendSV_Handler(void)
{
    __asm volatile("mrs r0, psp\n\t"
                   "stmdb r0!, {r4-r11}\n\t"
                   "push {r0, lr}\n\t" /* lr: EXC_RETURN (thread mode, process stack) */
                   "bl tasks_switch_context\n\t"
                   "pop {r1, lr}\n\t"
                   "ldmia r0!, {r4-r11}\n\t"
                   "msr psp, r0\n\t"
                   "bx lr\n");
}
