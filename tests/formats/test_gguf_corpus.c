/* Generator of the fuzzing seed corpus fuzz/corpus/gguf/ (also the fixtures of the
 * `hearth inspect` test). As a test it regenerates every seed deterministically,
 * checks it parses with the expected contents, and checks it is byte-identical to the
 * committed file, so any change to the writer's output format is noticed.
 * HEARTH_WRITE_CORPUS=<dir> writes the seeds there instead of comparing. */
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "formats/types.h"
#include "testutil.h"

typedef struct {
    uint8_t buf[16][2048];
    int used;
} pool;

static void *rand_bytes(pool *p, hr_rng *r, size_t n) {
    uint8_t *b = p->buf[p->used++];
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)hr_rng_next(r);
    return b;
}

/* A small llama-like model: the keys and tensor names the inspect test looks for. */
static gguf_writer *seed_basic(pool *p) {
    hr_rng r = {1};
    gguf_writer *w = gguf_writer_new(false);
    gguf_w_str(w, "general.architecture", "llama");
    gguf_w_str(w, "general.name", "tiny \"quoted\"\n model");
    gguf_w_u32(w, "llama.context_length", 128);
    gguf_w_u32(w, "llama.embedding_length", 32);
    gguf_w_u32(w, "llama.block_count", 1);
    gguf_w_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    gguf_w_str(w, "tokenizer.ggml.model", "llama");
    const char *toks[] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81the", "a", "b", "c", "d", "e", "f", "g", "h"};
    float scores[12];
    int32_t types[12];
    for (int i = 0; i < 12; i++) scores[i] = -(float)i, types[i] = i < 3 ? 3 : 1;
    gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, 12);
    gguf_w_arr_f32(w, "tokenizer.ggml.scores", scores, 12);
    gguf_w_arr_i32(w, "tokenizer.ggml.token_type", types, 12);
    gguf_w_u32(w, "tokenizer.ggml.bos_token_id", 1);
    uint64_t e[2] = {32, 12}, q[2] = {32, 4}, n[1] = {32};
    gguf_w_tensor(w, "token_embd.weight", HR_F16, 2, e, rand_bytes(p, &r, 768), 768);
    gguf_w_tensor(w, "blk.0.attn_q.weight", HR_Q8_0, 2, q, rand_bytes(p, &r, 136), 136);
    gguf_w_tensor(w, "blk.0.ffn_up.weight", HR_Q4_0, 2, q, rand_bytes(p, &r, 72), 72);
    gguf_w_tensor(w, "output_norm.weight", HR_F32, 1, n, rand_bytes(p, &r, 128), 128);
    return w;
}

/* PowerInfer-style: PWRI magic, old-id I32 tensors, a u64 key. */
static gguf_writer *seed_sparse(pool *p) {
    hr_rng r = {2};
    gguf_writer *w = gguf_writer_new(true);
    gguf_w_u64(w, "split.vram_capacity", 123456789012ull);
    gguf_w_f32(w, "powerinfer.sparse_threshold", 0.0f);
    uint64_t ff[1] = {16}, k[1] = {4}, fc[2] = {32, 2};
    gguf_w_tensor(w, "blk.0.gpu_idx", HR_I32_OLD, 1, ff, rand_bytes(p, &r, 64), 64);
    gguf_w_tensor(w, "blk.0.gpu_bucket", HR_I32_OLD, 1, k, rand_bytes(p, &r, 16), 16);
    gguf_w_tensor(w, "blk.0.fc1.weight", HR_BF16, 2, fc, rand_bytes(p, &r, 128), 128);
    return w;
}

/* Every KV type, nested arrays, alignment 64, the remaining tensor types. */
static gguf_writer *seed_kinds(pool *p) {
    hr_rng r = {3};
    gguf_writer *w = gguf_writer_new(false);
    gguf_w_u32(w, "general.alignment", 64);
    gguf_w_i32(w, "x.i32", -5);
    gguf_w_bool(w, "x.bool", true);
    gguf_w_str_n(w, "x.nul", "a\0b\xff", 4);
    for (int t = 0; t < GGUF_VT_COUNT; t++) {
        size_t sz = gguf_vtype_size((gguf_vtype)t);
        if (!sz) continue;
        char key[32];
        snprintf(key, sizeof key, "raw.%s", gguf_vtype_name((gguf_vtype)t));
        uint8_t raw[24];
        for (size_t i = 0; i < sizeof raw; i++) raw[i] = t == GGUF_VT_BOOL ? (uint8_t)(i & 1) : (uint8_t)(i * 29 + t);
        gguf_w_arr_raw(w, key, (gguf_vtype)t, raw, 3);
    }
    int16_t a[2] = {-1, 2};
    gguf_value inner[2] = {{.type = GGUF_VT_ARRAY, .v.a = {GGUF_VT_INT16, 2, (const uint8_t *)a, NULL}},
                           {.type = GGUF_VT_ARRAY, .v.a = {GGUF_VT_INT16, 0, NULL, NULL}}};
    gguf_kv kv = {.key = {"x.nested", 8}, .val = {.type = GGUF_VT_ARRAY, .v.a = {GGUF_VT_ARRAY, 2, NULL, inner}}};
    gguf_w_kv_copy(w, &kv);
    uint64_t s1[3] = {3, 2, 2}, s2[4] = {2, 1, 2, 1};
    gguf_w_tensor(w, "t.i8", HR_I8, 3, s1, rand_bytes(p, &r, 12), 12);
    gguf_w_tensor(w, "t.i16", HR_I16, 4, s2, rand_bytes(p, &r, 8), 8);
    gguf_w_tensor(w, "t.i32", HR_I32, 3, s1, rand_bytes(p, &r, 48), 48);
    return w;
}

/* One small tensor of every quantized weight type, random bytes: scales that are NaN, Inf or
 * subnormal included, for the fuzzer's dequantize / requantize pass. */
static const uint32_t quant_types[] = {HR_Q4_1, HR_Q5_0, HR_Q5_1, HR_Q2_K, HR_Q3_K, HR_Q4_K, HR_Q5_K,
                                       HR_Q6_K, HR_IQ4_NL, HR_IQ4_XS, HR_MXFP4};
#define N_QUANT_TYPES (sizeof quant_types / sizeof quant_types[0])

static gguf_writer *seed_quants(pool *p) {
    hr_rng r = {4};
    gguf_writer *w = gguf_writer_new(false);
    gguf_w_str(w, "general.architecture", "llama");
    for (size_t i = 0; i < N_QUANT_TYPES; i++) {
        const uint32_t t = quant_types[i];
        char name[32];
        snprintf(name, sizeof name, "q.%s", hr_type_name(t));
        uint64_t ne[2] = {hr_type_block_elems(t), 2};
        size_t nb = (size_t)(2 * hr_type_block_bytes(t));
        gguf_w_tensor(w, name, t, 2, ne, rand_bytes(p, &r, nb), nb);
    }
    return w;
}

typedef struct {
    const char *name;
    gguf_writer *(*make)(pool *);
    uint64_t n_kv, n_tensors;
    const char *some_tensor;
} seed;

static const seed seeds[] = {
    {"basic", seed_basic, 11, 4, "blk.0.attn_q.weight"},
    {"sparse", seed_sparse, 2, 3, "blk.0.gpu_idx"},
    {"kinds", seed_kinds, 16, 3, "t.i16"},
    {"quants", seed_quants, 1, N_QUANT_TYPES, "q.q4_k"},
};

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    uint8_t *b = malloc(1 << 16);
    *n = fread(b, 1, 1 << 16, fp);
    fclose(fp);
    return b;
}

int main(void) {
    const char *out = getenv("HEARTH_WRITE_CORPUS");
    const char *src = getenv("HEARTH_SRC");
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        const seed *s = &seeds[i];
        pool p = {.used = 0};
        char path[512];
        if (out) snprintf(path, sizeof path, "%s/%s", out, s->name);
        else hr_test_tmp(path, sizeof path, s->name);
        gguf_writer *w = s->make(&p);
        hr_err e = {{0}};
        CHECKF(gguf_w_write(w, path, &e) == 0, "%s: %s", s->name, e.msg);
        gguf_writer_free(w);
        gguf_file f;
        CHECKF(gguf_open(&f, path, &e) == 0, "%s: %s", s->name, e.msg);
        CHECK(f.n_kv == s->n_kv && f.n_tensors == s->n_tensors && gguf_find_tensor(&f, s->some_tensor));
        CHECKF(f.size < 20000, "%s is %zu bytes", s->name, f.size);
        gguf_close(&f);
        if (!out && src) {
            char ref[512];
            snprintf(ref, sizeof ref, "%s/fuzz/corpus/gguf/%s", src, s->name);
            size_t n1 = 0, n2 = 0;
            uint8_t *a = slurp(path, &n1), *b = slurp(ref, &n2);
            CHECKF(b != NULL, "missing committed seed %s", ref);
            CHECKF(a && b && n1 == n2 && !memcmp(a, b, n1), "%s differs from the regenerated seed", ref);
            free(a);
            free(b);
        }
        if (!out) remove(path);
    }
    return TEST_END();
}
