/* The detection post-process of the data-dependent scenario (see postproc.h). */
#include "postproc.h"

#include "net.h"

#define GRID 8
#define CHANNELS 16
#define SCORE_THRESHOLD 900 /* summed over a cell's channels (ReLU outputs, 0..127 each) */
#define ANCHORS 8
#define MAX_KEPT 32u
#define OBJECT_FIRST 8
#define OBJECT_LAST 20 /* the square covers rows and columns 8..19 */

typedef struct box {
    int32_t x, y, w, h, score;
} box;

void postproc_draw_object(int8_t *input)
{
    for (int32_t y = OBJECT_FIRST; y < OBJECT_LAST; y++) {
        for (int32_t x = OBJECT_FIRST; x < OBJECT_LAST; x++) {
            for (int32_t c = 0; c < 3; c++) {
                input[(y * 32 + x) * 3 + c] = 127;
            }
        }
    }
}

/* Anchor shapes' channel weights: each candidate is matched against every anchor. */
static int8_t anchor_weight(int32_t anchor, int32_t channel)
{
    return (int8_t)(((anchor * 7 + channel * 13) % 17) - 8);
}

static int overlaps(const box *a, const box *b)
{
    return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

uint32_t postproc_run(const int8_t *arena, uint32_t *kept)
{
    const int8_t *map = &arena[g_net[6].out_off]; /* pool6: 8 x 8 cells x 16 channels */
    box boxes[MAX_KEPT];
    uint32_t n_kept = 0u;
    uint32_t candidates = 0u;
    for (int32_t cell = 0; cell < GRID * GRID; cell++) {
        const int8_t *v = &map[cell * CHANNELS];
        int32_t score = 0;
        for (int32_t c = 0; c < CHANNELS; c++) {
            score += v[c];
        }
        if (score <= SCORE_THRESHOLD) {
            continue;
        }
        candidates++;
        /* Box decode: the best-matching anchor gives the size, channel differences move the centre. */
        int32_t best = 0;
        int32_t best_match = -0x7FFFFFFF;
        for (int32_t a = 0; a < ANCHORS; a++) {
            int32_t match = 0;
            for (int32_t c = 0; c < CHANNELS; c++) {
                match += v[c] * anchor_weight(a, c);
            }
            if (match > best_match) {
                best_match = match;
                best = a;
            }
        }
        box b;
        b.x = (cell % GRID) * 4 + (v[1] - v[2]) / 32;
        b.y = (cell / GRID) * 4 + (v[3] - v[4]) / 32;
        b.w = 4 + best;
        b.h = 4 + (ANCHORS - 1 - best);
        b.score = score;
        int suppressed = 0;
        for (uint32_t k = 0; k < n_kept; k++) {
            if (overlaps(&b, &boxes[k]) && boxes[k].score >= b.score) {
                suppressed = 1;
                break;
            }
        }
        if (!suppressed && n_kept < MAX_KEPT) {
            boxes[n_kept++] = b;
        }
    }
    *kept = n_kept;
    return candidates;
}
