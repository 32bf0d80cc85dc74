/*
 * The demo network: a small int8 image classifier (32x32x3 in, 10 classes out) written in
 * plain C, with the operator mix of a MobileNet-style model: convolution, depthwise
 * convolution, a residual add, max and average pooling, fully connected. Weights and biases
 * are generated deterministically; activations live in one tensor arena planned by hand.
 */
#ifndef DEMO_NET_H
#define DEMO_NET_H

#include <stdint.h>

enum net_kind { NET_CONV, NET_DWCONV, NET_ADD, NET_MAXPOOL, NET_AVGPOOL, NET_FC };

typedef struct net_layer {
    const char *op;    /* TFLite operator name */
    const char *name;
    uint8_t kind;      /* enum net_kind */
    uint8_t engine;    /* TRC_ENGINE_CPU or TRC_ENGINE_NPU (simulated NPU: runs on the CPU) */
    uint8_t k;         /* kernel size */
    uint8_t stride;
    uint8_t pad;
    uint8_t relu;
    uint16_t in_h, in_w, in_c;
    uint16_t out_h, out_w, out_c;
    uint16_t in_off;   /* arena offsets of the input, second input (ADD) and output */
    uint16_t in2_off;
    uint16_t out_off;
    int32_t mult;      /* requantization: out = (acc * mult) >> 16, rounded */
} net_layer;

#define NET_LAYERS 10u
#define NET_INPUT_BYTES (32u * 32u * 3u)
#define NET_OUTPUT_BYTES 10u
#define NET_ARENA_BYTES 16384u
#define NET_ARENA_PLANNED 13312u /* peak of the plan in net.c */

extern const net_layer g_net[NET_LAYERS];

void net_init(void);                                   /* weights and biases */
void net_make_input(int8_t *input, uint32_t inference); /* a deterministic "image" */
void net_run_layer(uint32_t index, int8_t *arena);
uint32_t net_layer_macs(uint32_t index);
uint32_t net_layer_weight_bytes(uint32_t index);
uint32_t net_tensor_bytes(uint32_t h, uint32_t w, uint32_t c);

#endif
