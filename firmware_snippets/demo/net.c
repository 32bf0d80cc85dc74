/* The demo network (see net.h). */
#include "net.h"

#include "trc.h"

#define MAX_WEIGHTS 4608u
#define MAX_OUT_C 32u

/* Arena plan (offsets in bytes); lifetimes let later tensors reuse dead ones:
 *   input 0..3072, conv0 3072..5120, dw1 0..2048, pw2 5120..9216 (kept for add5),
 *   dw3 0..4096, pw4 9216..13312, add5 0..4096, pool6 4096..5120, conv7 5120..5632,
 *   gap8 5632..5664, fc9 5664..5674                                  peak 13312 bytes */
const net_layer g_net[NET_LAYERS] = {
    /* op                   name     kind         engine k s p relu  in: h  w  c  out: h  w  c  in   in2   out   mult */
    {"CONV_2D",           "conv0", NET_CONV,    TRC_ENGINE_NPU, 3, 2, 1, 1, 32, 32, 3, 16, 16, 8, 0, 0, 3072, 410},
    {"DEPTHWISE_CONV_2D", "dw1",   NET_DWCONV,  TRC_ENGINE_NPU, 3, 1, 1, 1, 16, 16, 8, 16, 16, 8, 3072, 0, 0, 1771},
    {"CONV_2D",           "pw2",   NET_CONV,    TRC_ENGINE_NPU, 1, 1, 0, 1, 16, 16, 8, 16, 16, 16, 0, 0, 5120, 3068},
    {"DEPTHWISE_CONV_2D", "dw3",   NET_DWCONV,  TRC_ENGINE_NPU, 3, 1, 1, 1, 16, 16, 16, 16, 16, 16, 5120, 0, 0, 1538},
    {"CONV_2D",           "pw4",   NET_CONV,    TRC_ENGINE_NPU, 1, 1, 0, 1, 16, 16, 16, 16, 16, 16, 0, 0, 9216, 1402},
    {"ADD",               "add5",  NET_ADD,     TRC_ENGINE_CPU, 0, 0, 0, 1, 16, 16, 16, 16, 16, 16, 5120, 9216, 0, 44705},
    {"MAX_POOL_2D",       "pool6", NET_MAXPOOL, TRC_ENGINE_CPU, 2, 2, 0, 0, 16, 16, 16, 8, 8, 16, 0, 0, 4096, 65536},
    {"CONV_2D",           "conv7", NET_CONV,    TRC_ENGINE_NPU, 3, 2, 1, 1, 8, 8, 16, 4, 4, 32, 4096, 0, 5120, 410},
    {"AVERAGE_POOL_2D",   "gap8",  NET_AVGPOOL, TRC_ENGINE_CPU, 4, 4, 0, 0, 4, 4, 32, 1, 1, 32, 5120, 0, 5632, 4482},
    {"FULLY_CONNECTED",   "fc9",   NET_FC,      TRC_ENGINE_CPU, 0, 0, 0, 0, 1, 1, 32, 1, 1, 10, 5632, 0, 5664, 529},
};

static int8_t g_weights[NET_LAYERS][MAX_WEIGHTS];
static int32_t g_bias[NET_LAYERS][MAX_OUT_C];

static uint32_t xorshift32(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return x;
}

uint32_t net_tensor_bytes(uint32_t h, uint32_t w, uint32_t c) { return h * w * c; }

uint32_t net_layer_weight_bytes(uint32_t index)
{
    const net_layer *l = &g_net[index];
    switch (l->kind) {
    case NET_CONV:
        return (uint32_t)l->out_c * l->k * l->k * l->in_c;
    case NET_DWCONV:
        return (uint32_t)l->k * l->k * l->in_c;
    case NET_FC:
        return (uint32_t)l->out_c * l->in_c;
    default:
        return 0u;
    }
}

uint32_t net_layer_macs(uint32_t index)
{
    const net_layer *l = &g_net[index];
    uint32_t outputs = net_tensor_bytes(l->out_h, l->out_w, l->out_c);
    switch (l->kind) {
    case NET_CONV:
        return outputs * l->k * l->k * l->in_c;
    case NET_DWCONV:
        return outputs * l->k * l->k;
    case NET_FC:
        return outputs * l->in_c;
    case NET_MAXPOOL:
        return outputs * l->k * l->k;
    case NET_AVGPOOL:
        return net_tensor_bytes(l->in_h, l->in_w, l->in_c);
    default:
        return outputs;
    }
}

void net_init(void)
{
    uint32_t seed = 0x2545F491u;
    for (uint32_t i = 0; i < NET_LAYERS; i++) {
        uint32_t n = net_layer_weight_bytes(i);
        for (uint32_t j = 0; j < n; j++) {
            g_weights[i][j] = (int8_t)((int32_t)(xorshift32(&seed) >> 26) - 32);
        }
        for (uint32_t j = 0; j < MAX_OUT_C; j++) {
            g_bias[i][j] = (int32_t)(xorshift32(&seed) >> 22) - 512;
        }
    }
}

void net_make_input(int8_t *input, uint32_t inference)
{
    uint32_t seed = 0x9E3779B9u ^ (inference * 0x85EBCA6Bu);
    if (seed == 0u) {
        seed = 1u;
    }
    for (uint32_t i = 0; i < NET_INPUT_BYTES; i++) {
        input[i] = (int8_t)(xorshift32(&seed) >> 24);
    }
}

static int8_t requantize(int32_t acc, int32_t mult, int32_t low)
{
    int64_t v = ((int64_t)acc * mult + (1 << 15)) >> 16;
    if (v < low) {
        v = low;
    }
    if (v > 127) {
        v = 127;
    }
    return (int8_t)v;
}

static void conv(const net_layer *l, const int8_t *w, const int32_t *bias, const int8_t *in, int8_t *out)
{
    const int32_t low = l->relu ? 0 : -128;
    for (int32_t oy = 0; oy < l->out_h; oy++) {
        for (int32_t ox = 0; ox < l->out_w; ox++) {
            for (int32_t oc = 0; oc < l->out_c; oc++) {
                int32_t acc = bias[oc];
                for (int32_t ky = 0; ky < l->k; ky++) {
                    int32_t iy = oy * l->stride - l->pad + ky;
                    if (iy < 0 || iy >= l->in_h) {
                        continue;
                    }
                    for (int32_t kx = 0; kx < l->k; kx++) {
                        int32_t ix = ox * l->stride - l->pad + kx;
                        if (ix < 0 || ix >= l->in_w) {
                            continue;
                        }
                        const int8_t *px = &in[(iy * l->in_w + ix) * l->in_c];
                        const int8_t *pw = &w[((oc * l->k + ky) * l->k + kx) * l->in_c];
                        for (int32_t ic = 0; ic < l->in_c; ic++) {
                            acc += px[ic] * pw[ic];
                        }
                    }
                }
                out[(oy * l->out_w + ox) * l->out_c + oc] = requantize(acc, l->mult, low);
            }
        }
    }
}

static void dwconv(const net_layer *l, const int8_t *w, const int32_t *bias, const int8_t *in, int8_t *out)
{
    const int32_t low = l->relu ? 0 : -128;
    for (int32_t oy = 0; oy < l->out_h; oy++) {
        for (int32_t ox = 0; ox < l->out_w; ox++) {
            for (int32_t c = 0; c < l->out_c; c++) {
                int32_t acc = bias[c];
                for (int32_t ky = 0; ky < l->k; ky++) {
                    int32_t iy = oy * l->stride - l->pad + ky;
                    if (iy < 0 || iy >= l->in_h) {
                        continue;
                    }
                    for (int32_t kx = 0; kx < l->k; kx++) {
                        int32_t ix = ox * l->stride - l->pad + kx;
                        if (ix < 0 || ix >= l->in_w) {
                            continue;
                        }
                        acc += in[(iy * l->in_w + ix) * l->in_c + c] * w[(ky * l->k + kx) * l->in_c + c];
                    }
                }
                out[(oy * l->out_w + ox) * l->out_c + c] = requantize(acc, l->mult, low);
            }
        }
    }
}

static void add(const net_layer *l, const int8_t *a, const int8_t *b, int8_t *out)
{
    const int32_t low = l->relu ? 0 : -128;
    uint32_t n = net_tensor_bytes(l->out_h, l->out_w, l->out_c);
    for (uint32_t i = 0; i < n; i++) {
        out[i] = requantize((int32_t)a[i] + (int32_t)b[i], l->mult, low);
    }
}

static void maxpool(const net_layer *l, const int8_t *in, int8_t *out)
{
    for (int32_t oy = 0; oy < l->out_h; oy++) {
        for (int32_t ox = 0; ox < l->out_w; ox++) {
            for (int32_t c = 0; c < l->out_c; c++) {
                int32_t best = -128;
                for (int32_t ky = 0; ky < l->k; ky++) {
                    for (int32_t kx = 0; kx < l->k; kx++) {
                        int32_t iy = oy * l->stride + ky;
                        int32_t ix = ox * l->stride + kx;
                        int32_t v = in[(iy * l->in_w + ix) * l->in_c + c];
                        best = v > best ? v : best;
                    }
                }
                out[(oy * l->out_w + ox) * l->out_c + c] = (int8_t)best;
            }
        }
    }
}

static void avgpool(const net_layer *l, const int8_t *in, int8_t *out)
{
    for (int32_t c = 0; c < l->out_c; c++) {
        int32_t acc = 0;
        for (int32_t i = 0; i < l->in_h * l->in_w; i++) {
            acc += in[i * l->in_c + c];
        }
        out[c] = requantize(acc, l->mult, -128);
    }
}

static void fully_connected(const net_layer *l, const int8_t *w, const int32_t *bias, const int8_t *in, int8_t *out)
{
    for (int32_t o = 0; o < l->out_c; o++) {
        int32_t acc = bias[o];
        for (int32_t i = 0; i < l->in_c; i++) {
            acc += in[i] * w[o * l->in_c + i];
        }
        out[o] = requantize(acc, l->mult, -128);
    }
}

void net_run_layer(uint32_t index, int8_t *arena)
{
    const net_layer *l = &g_net[index];
    const int8_t *in = &arena[l->in_off];
    int8_t *out = &arena[l->out_off];
    switch (l->kind) {
    case NET_CONV:
        conv(l, g_weights[index], g_bias[index], in, out);
        break;
    case NET_DWCONV:
        dwconv(l, g_weights[index], g_bias[index], in, out);
        break;
    case NET_ADD:
        add(l, in, &arena[l->in2_off], out);
        break;
    case NET_MAXPOOL:
        maxpool(l, in, out);
        break;
    case NET_AVGPOOL:
        avgpool(l, in, out);
        break;
    default:
        fully_connected(l, g_weights[index], g_bias[index], in, out);
        break;
    }
}
