/*
 * The demo's two tasks and the smallest preemptive scheduler that runs them: the inference task
 * (main() on its thread stack) and a sensor task with a stack of its own. A switch is a real
 * Cortex-M context switch: PendSV (lowest priority) saves r4-r11 on the running task's stack,
 * records the switch (trc_task_switched_in, as an RTOS's trace hook would), and restores the
 * other task's registers; the hardware stacks and restores the rest.
 */
#ifndef DEMO_TASKS_H
#define DEMO_TASKS_H

#include <stdint.h>

typedef struct demo_task {
    uint32_t sp;          /* saved process stack pointer while the task is switched out */
    const char *name;
    uint32_t priority;
} demo_task;

extern demo_task g_task_inference; /* main() */
extern demo_task g_task_sensor;

/* Name both tasks (TASK_INFO), record the inference task as running, build the sensor task's
 * first frame. Call once, from main(), after the time base starts. */
void tasks_init(void (*sensor_entry)(void));
/* Switch to `next` as soon as no interrupt is active (pends PendSV; callable from handlers). */
void tasks_switch_to(demo_task *next);
/* The running task gives the CPU back to the inference task and waits until switched in again. */
void tasks_yield_to_inference(void);

#endif
