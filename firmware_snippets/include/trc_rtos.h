/*
 * RTOS task hooks for trc: FreeRTOS trace macros and Zephyr's user tracing hooks that send the
 * task records (trc_task_switched_in, trc_task_info, trc_task_deleted; see trc.h). The host then
 * draws a task lane, gives each task its CPU share, and each layer span the cycles other tasks
 * took from it. The task id is the address of the task's control block (FreeRTOS TCB, Zephyr
 * struct k_thread).
 *
 * FreeRTOS -- add these two lines at the end of FreeRTOSConfig.h:
 *
 *     #define TRC_RTOS_FREERTOS
 *     #include "trc_rtos.h"
 *
 *   They define traceTASK_SWITCHED_IN(), traceTASK_CREATE(pxNewTCB) and
 *   traceTASK_DELETE(pxTaskToDelete), which tasks.c expands where pxCurrentTCB and the TCB's
 *   pcTaskName and uxPriority are in scope. Assembler files that read FreeRTOSConfig.h get
 *   nothing from this header.
 *
 * Zephyr -- in prj.conf:
 *
 *     CONFIG_TRACING=y
 *     CONFIG_TRACING_USER=y
 *     CONFIG_THREAD_NAME=y
 *
 *   and in exactly one C file of the application:
 *
 *     #define TRC_RTOS_ZEPHYR_HOOKS
 *     #include "trc_rtos.h"
 *
 *   That file then defines Zephyr's weak user hooks sys_trace_thread_switched_in_user(),
 *   sys_trace_thread_create_user(), sys_trace_thread_name_set_user(),
 *   sys_trace_thread_abort_user(), sys_trace_isr_enter_user() and sys_trace_isr_exit_user().
 *
 * Task switches run inside the scheduler (FreeRTOS: vTaskSwitchContext in PendSV): prefer
 * trc_set_drain(TRC_DRAIN_DEFERRED) and call trc_flush() from the idle hook or a low-priority
 * task, so that a switch only reserves its record (a few dozen instructions masked) and never
 * waits for the transport.
 */
#ifndef TRC_RTOS_H
#define TRC_RTOS_H

#if !defined(__ASSEMBLER__) && !defined(__IAR_SYSTEMS_ASM__)

#include "trc.h"

#if defined(TRC_RTOS_FREERTOS)
#define traceTASK_SWITCHED_IN() trc_task_switched_in((uint32_t)(uintptr_t)pxCurrentTCB)
#define traceTASK_CREATE(pxNewTCB) \
    trc_task_info((uint32_t)(uintptr_t)(pxNewTCB), (uint32_t)(pxNewTCB)->uxPriority, (pxNewTCB)->pcTaskName)
#define traceTASK_DELETE(pxTaskToDelete) trc_task_deleted((uint32_t)(uintptr_t)(pxTaskToDelete))
#endif

#if defined(TRC_RTOS_ZEPHYR_HOOKS)
#include <zephyr/kernel.h>

/* Zephyr priorities are signed (cooperative threads are negative): sent as 8-bit two's complement. */
static void trc_zephyr_thread_info(struct k_thread *thread)
{
    const char *name = k_thread_name_get(thread);
    trc_task_info((uint32_t)(uintptr_t)thread, (uint32_t)k_thread_priority_get(thread), name != 0 ? name : "");
}

void sys_trace_thread_switched_in_user(void);
void sys_trace_thread_create_user(struct k_thread *thread);
void sys_trace_thread_name_set_user(struct k_thread *thread);
void sys_trace_thread_abort_user(struct k_thread *thread);
void sys_trace_isr_enter_user(void);
void sys_trace_isr_exit_user(void);

void sys_trace_thread_switched_in_user(void) { trc_task_switched_in((uint32_t)(uintptr_t)k_current_get()); }
void sys_trace_thread_create_user(struct k_thread *thread) { trc_zephyr_thread_info(thread); }
void sys_trace_thread_name_set_user(struct k_thread *thread) { trc_zephyr_thread_info(thread); }
void sys_trace_thread_abort_user(struct k_thread *thread) { trc_task_deleted((uint32_t)(uintptr_t)thread); }
void sys_trace_isr_enter_user(void) { trc_isr_enter(trc_active_exception()); }
void sys_trace_isr_exit_user(void) { trc_isr_exit(trc_active_exception()); }
#endif

#endif /* not assembler */

#endif /* TRC_RTOS_H */
