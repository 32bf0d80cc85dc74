/* Test firmware for inlined-function naming (tests/test_hotspots.py): two small kernels the
 * compiler folds into their caller, one of them calling a third inlined helper, and one kept out
 * of line. Built with -O2 -g; never run. */
#include <stdint.h>

volatile int32_t g_out[64];
volatile int32_t g_in[64];

static int32_t clamp(int32_t v) { return v < -128 ? -128 : (v > 127 ? 127 : v); }

static void scale(int32_t factor)
{
    for (int i = 0; i < 64; i++) {
        g_out[i] = clamp(g_in[i] * factor >> 4);
    }
}

static void accumulate(void)
{
    int32_t acc = 0;
    for (int i = 0; i < 64; i++) {
        acc += g_in[i];
        g_out[i] = acc;
    }
}

__attribute__((noinline)) void kernel_out_of_line(int32_t n)
{
    for (int i = 0; i < n; i++) {
        g_out[i & 63] += i;
    }
}

void run_layer(int which, int32_t factor)
{
    if (which == 0) {
        scale(factor);
    } else if (which == 1) {
        accumulate();
    } else {
        kernel_out_of_line(factor);
    }
}

void Reset_Handler(void)
{
    for (;;) {
        run_layer(0, 3);
        run_layer(1, 0);
        run_layer(2, 5);
    }
}
