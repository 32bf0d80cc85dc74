/* Zephyr's user tracing hooks from trc_rtos.h, compiled as an application would (one C file). */
#define TRC_RTOS_ZEPHYR_HOOKS
#include "trc_rtos.h"
