/* Seeded weight values. The generator is counter based (splitmix64 of a per-tensor key plus
 * the element index), so any element can be computed on its own: transposed variants and
 * tensors of other files with the same seed get exactly the same numbers, whatever the
 * generation order. Values come from integer arithmetic and one float multiply, so files
 * are byte-identical across compilers and C libraries. */
#include <math.h>
#include <stdlib.h>
#include "formats/types.h"
#include "synth_internal.h"

#define GOLDEN 0x9E3779B97F4A7C15ull

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t tensor_key(uint64_t seed, const char *name) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (const unsigned char *s = (const unsigned char *)name; *s; s++) h = (h ^ *s) * 0x100000001b3ull;
    return mix64(mix64(seed) ^ h);
}

/* Irwin-Hall sum of four 16-bit uniforms, centred and scaled to unit variance:
 * close enough to normal for random weights, bounded by +-3.46. */
static float approx_normal(uint64_t key, uint64_t idx) {
    uint64_t b = mix64(key + (idx + 1) * GOLDEN);
    int64_t s = (int64_t)(b & 0xffff) + (int64_t)((b >> 16) & 0xffff) + (int64_t)((b >> 32) & 0xffff) + (int64_t)(b >> 48);
    return (float)(s + 2 - 131072) * (1.7320508f / 65536.0f);
}

/* Element (row r, col i) of a rank-t->rank slice: sum over k of A[r][k] B[k][i] / sqrt(rank),
 * A and B unit normals of their own keys, B per slice (expert) of ne1 rows; std as given. */
static float low_rank(const synth_tensor *t, uint64_t key, uint64_t r, uint64_t i) {
    const uint64_t R = t->rank, slice = r / t->ne[1], ka = key ^ 0xA5A5A5A5A5A5A5A5ull, kb = key ^ 0x5A5A5A5A5A5A5A5Aull;
    float s = 0;
    for (uint64_t k = 0; k < R; k++) s += approx_normal(ka, r * R + k) * approx_normal(kb, (slice * R + k) * t->ne[0] + i);
    return s * (t->std / sqrtf((float)R));
}

int synth_fill_tensor(const synth_tensor *t, uint64_t seed, void *dst, hr_err *e) {
    const uint64_t ne0 = t->ne[0];
    const uint64_t rows = t->ne[1] * (t->n_dims > 2 ? t->ne[2] : 1);
    const uint64_t row_bytes = hr_row_bytes(t->type, ne0);
    if (!row_bytes || row_bytes * rows != t->nbytes) return hr_errf(e, "%s: inconsistent size", t->name);
    float *row = malloc(ne0 * sizeof *row);
    if (!row) return hr_errf(e, "%s: out of memory", t->name);
    const uint64_t key = tensor_key(seed, t->seed_name);
    for (uint64_t r = 0; r < rows; r++) {
        for (uint64_t i = 0; i < ne0; i++) {
            /* element (row r, col i); the transposed source has rows of length `rows` */
            const uint64_t idx = t->transpose ? i * rows + r : r * ne0 + i;
            const float z = approx_normal(key, idx);
            row[i] = t->fill == SYNTH_FILL_NORM ? 1.0f + HR_SYNTH_NORM_NOISE * z : t->std * z;
            if (t->rank) row[i] = low_rank(t, key, r, i);
            if (t->fill == SYNTH_FILL_RAMP) {
                const float u = ne0 > 1 ? (float)i / (float)(ne0 - 1) : 0.0f;
                row[i] = 1.0f + (t->std - 1.0f) * (u * u);
            }
        }
        hr_quant_row_file(t->type, row, (uint8_t *)dst + r * row_bytes, (int64_t)ne0);
    }
    free(row);
    return 0;
}
