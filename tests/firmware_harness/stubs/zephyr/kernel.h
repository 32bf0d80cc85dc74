/*
 * Stand-in for Zephyr's <zephyr/kernel.h> in the host tests of trc_rtos.h: only the declarations
 * trc_rtos.h uses, with Zephyr's signatures (k_tid_t is a struct k_thread pointer;
 * k_current_get, k_thread_name_get and k_thread_priority_get as in the kernel's API). The test
 * harness defines them. Written for this project.
 */
#ifndef TRC_TEST_ZEPHYR_KERNEL_H
#define TRC_TEST_ZEPHYR_KERNEL_H

struct k_thread {
    int prio;          /* the harness's own fields */
    const char *name;
};
typedef struct k_thread *k_tid_t;

k_tid_t k_current_get(void);
const char *k_thread_name_get(k_tid_t thread);
int k_thread_priority_get(k_tid_t thread);

#endif
