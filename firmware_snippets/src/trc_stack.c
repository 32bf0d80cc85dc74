/*
 * Stack painting, high-water scan and canary check. A stack grows down towards `base`; its
 * lowest word holds the canary, the words above it the paint. Whatever the code ever wrote
 * replaced paint, so the first non-paint word from the bottom marks the deepest use.
 */
#include "trc.h"

void trc_stack_paint(const trc_stack *stack, const void *limit)
{
    volatile uint32_t *word = stack->base;
    volatile uint32_t *top = stack->base + stack->size / 4u;
    volatile uint32_t *end = (volatile uint32_t *)(uintptr_t)limit;
    if (end > top) {
        end = top;
    }
    /* volatile: the compiler must neither turn this into a memset call (no libc) nor drop it. */
    *word++ = TRC_STACK_CANARY;
    while (word < end) {
        *word++ = TRC_STACK_PAINT;
    }
}

void trc_stack_paint_below_sp(const trc_stack *stack, uint32_t margin_bytes)
{
    uintptr_t sp;
#if defined(__arm__)
    __asm volatile("mov %0, sp" : "=r"(sp));
#else
    volatile uint32_t here = 0u;
    sp = (uintptr_t)&here;
#endif
    trc_stack_paint(stack, (const void *)((sp - margin_bytes) & ~(uintptr_t)3u));
}

int trc_stack_canary_ok(const trc_stack *stack)
{
    return stack->base[0] == TRC_STACK_CANARY;
}

uint32_t trc_stack_high_water(const trc_stack *stack)
{
    const volatile uint32_t *word = stack->base + 1;
    const volatile uint32_t *top = stack->base + stack->size / 4u;
    if (!trc_stack_canary_ok(stack)) {
        return stack->size;  /* it ran into (or past) the canary */
    }
    while (word < top && *word == TRC_STACK_PAINT) {
        word++;
    }
    return (uint32_t)((uintptr_t)top - (uintptr_t)word);
}
