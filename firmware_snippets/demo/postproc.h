/*
 * The data-dependent scenario's detection post-process: it reads the network's 8x8x16 score map
 * (pool6's output), keeps a candidate wherever a cell's summed score passes a threshold, decodes
 * its box and drops it if a kept box with a better score overlaps it. Its work depends on the
 * frame by design: frames with an object (a bright square drawn into the input) have more
 * candidates. 0.1 to 0.4 % of an inference; it reports its work with trc_layer_work().
 */
#ifndef DEMO_POSTPROC_H
#define DEMO_POSTPROC_H

#include <stdint.h>

#define POSTPROC_LAYER 10u

/* Draw the object (a bright square) into a 32x32x3 input frame. */
void postproc_draw_object(int8_t *input);
/* Run on the arena after the network; returns the candidates processed, *kept the boxes kept. */
uint32_t postproc_run(const int8_t *arena, uint32_t *kept);

#endif
