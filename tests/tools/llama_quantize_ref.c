/* llama-quantize-ref: runs llama.cpp's own quantizer (llama_model_quantize from the prebuilt
 * libllama the conformance tests install) on a GGUF file, so tests can compare Hearth's
 * quantized files with llama.cpp's.
 *
 * usage: llama-quantize-ref [--lib PATH] [-t N] [--pure] [--allow-requantize] [-v] IN OUT MIX
 *   MIX: a llama-quantize name (Q4_K_M, Q4_K_S, Q5_K_M, Q5_K_S, Q6_K, Q3_K_S, Q3_K_M, Q3_K_L,
 *   Q2_K, IQ4_XS, IQ4_NL, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4_MOE, F16, BF16, F32), any case.
 * The library: --lib, else $HEARTH_LLAMA_LIB, else $HEARTH_SRC/tests/conformance/node_modules/
 * @node-llama-cpp/linux-x64/bins/linux-x64/libllama.v0.5.0.so.
 * Exit: 0 written, 77 the library is not there (one line), 2 bad arguments, 1 llama.cpp failed.
 *
 * The library is loaded with dlopen, so this tool builds without llama.cpp's headers; the
 * parameter struct below is declared here with the layout of include/llama.h of that version. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* llama_model_quantize_params of llama.cpp as bundled by node-llama-cpp 3.22.1 (libllama
 * v0.5.0). Enums are int-sized there (GGML_TYPE_COUNT is 43). On LP64 the header's struct is
 * 64 bytes: four 32-bit fields, six bools (padded to 8), four pointers, one size_t. */
typedef struct lq_params {
    int32_t nthread;
    int32_t ftype;                /* enum llama_ftype */
    int32_t output_tensor_type;   /* enum ggml_type; GGML_TYPE_COUNT: the mix decides */
    int32_t token_embedding_type; /* enum ggml_type */
    bool allow_requantize;
    bool quantize_output_tensor;
    bool only_copy;
    bool pure;
    bool keep_split;
    bool dry_run;
    const void *imatrix;      /* const struct llama_model_imatrix_data * */
    const void *kv_overrides; /* const struct llama_model_kv_override * */
    const void *tt_overrides; /* const struct llama_model_tensor_override * */
    const int32_t *prune_layers;
    size_t max_buf_size;
} lq_params;

#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(lq_params) == 64, "llama_model_quantize_params is 64 bytes on LP64");
_Static_assert(offsetof(lq_params, allow_requantize) == 16 && offsetof(lq_params, imatrix) == 24 &&
                   offsetof(lq_params, max_buf_size) == 56,
               "llama_model_quantize_params field offsets");
#endif

#define LQ_TYPE_COUNT 43 /* GGML_TYPE_COUNT of that version: default output/embedding type */
#define LQ_MAX_BUF (8ull << 30) /* LLAMA_QUANT_MAX_BUF_SIZE, the default max_buf_size */

typedef void (*lq_log_fn)(int level, const char *text, void *ud);
typedef void (*lq_init_fn)(void);
typedef lq_params (*lq_defaults_fn)(void);
typedef uint32_t (*lq_quantize_fn)(const char *in, const char *out, const lq_params *p);
typedef void (*lq_log_set_fn)(lq_log_fn fn, void *ud);

/* llama_ftype ids (include/llama.h). */
static const struct {
    const char *name;
    int ftype;
} mixes[] = {
    {"F32", 0},     {"F16", 1},     {"Q4_0", 2},    {"Q4_1", 3},    {"Q8_0", 7},       {"Q5_0", 8},
    {"Q5_1", 9},    {"Q2_K", 10},   {"Q3_K_S", 11}, {"Q3_K_M", 12}, {"Q3_K_L", 13},    {"Q4_K_S", 14},
    {"Q4_K_M", 15}, {"Q5_K_S", 16}, {"Q5_K_M", 17}, {"Q6_K", 18},   {"IQ4_NL", 25},    {"IQ4_XS", 30},
    {"BF16", 32},   {"MXFP4_MOE", 38},
};

static int mix_ftype(const char *name) {
    for (size_t i = 0; i < sizeof mixes / sizeof mixes[0]; i++)
        if (!strcasecmp(mixes[i].name, name)) return mixes[i].ftype;
    return -1;
}

/* Keeps llama.cpp's warnings and errors (fallbacks, failures) and drops its per-tensor info
 * lines unless verbose. A CONT(inuation) piece follows the level of the piece before it. */
typedef struct log_state {
    bool verbose;
    int last;
} log_state;

static void on_log(int level, const char *text, void *ud) {
    log_state *s = ud;
    if (level != 5) s->last = level; /* GGML_LOG_LEVEL_CONT */
    if (s->verbose || s->last >= 3) fputs(text, stderr); /* WARN, ERROR */
}

static int usage(FILE *f, int code) {
    fprintf(f, "usage: llama-quantize-ref [--lib PATH] [-t N] [--pure] [--allow-requantize] [-v] IN OUT MIX\n"
               "Quantizes IN to OUT with llama.cpp's llama_model_quantize (MIX: a llama-quantize type\n"
               "name such as Q4_K_M, Q6_K, IQ4_XS, MXFP4_MOE, F16). Exit 77 when libllama is not there.\n");
    return code;
}

/* The library path: --lib, $HEARTH_LLAMA_LIB, or the conformance tests' install under $HEARTH_SRC. */
static const char *lib_path(const char *arg, char *buf, size_t n) {
    if (arg) return arg;
    const char *env = getenv("HEARTH_LLAMA_LIB");
    if (env && *env) return env;
    const char *src = getenv("HEARTH_SRC");
    if (!src || !*src) return NULL;
    snprintf(buf, n, "%s/tests/conformance/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v0.5.0.so", src);
    return buf;
}

/* Default params must look like the layout declared above, else the call would be garbage. */
static bool layout_ok(const lq_params *p) {
    return p->output_tensor_type == LQ_TYPE_COUNT && p->token_embedding_type == LQ_TYPE_COUNT &&
           p->quantize_output_tensor && !p->allow_requantize && !p->only_copy && !p->pure && !p->dry_run &&
           !p->imatrix && !p->prune_layers && p->max_buf_size == LQ_MAX_BUF;
}

int main(int argc, char **argv) {
    const char *lib = NULL, *pos[3];
    int n = 0, nthread = 1;
    bool pure = false, requant = false;
    log_state ls = {false, 2};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout, 0);
        if (!strcmp(a, "--lib") && i + 1 < argc) lib = argv[++i];
        else if (!strcmp(a, "-t") && i + 1 < argc) nthread = atoi(argv[++i]);
        else if (!strcmp(a, "--pure")) pure = true;
        else if (!strcmp(a, "--allow-requantize")) requant = true;
        else if (!strcmp(a, "-v")) ls.verbose = true;
        else if (a[0] == '-' || n == 3) return usage(stderr, 2);
        else pos[n++] = a;
    }
    if (n != 3 || nthread < 1 || nthread > 64) return usage(stderr, 2);
    const int ftype = mix_ftype(pos[2]);
    if (ftype < 0) {
        fprintf(stderr, "llama-quantize-ref: unknown mix '%s'\n", pos[2]);
        return 2;
    }
    char buf[4096];
    const char *path = lib_path(lib, buf, sizeof buf);
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h) {
        printf("SKIP: llama.cpp library not available (%s)\n", path ? path : "set HEARTH_LLAMA_LIB or HEARTH_SRC");
        return 77;
    }
    /* POSIX guarantees the object-to-function pointer conversion dlsym needs. */
    lq_init_fn init = (lq_init_fn)dlsym(h, "llama_backend_init");
    lq_defaults_fn defaults = (lq_defaults_fn)dlsym(h, "llama_model_quantize_default_params");
    lq_quantize_fn quantize = (lq_quantize_fn)dlsym(h, "llama_model_quantize");
    lq_log_set_fn log_set = (lq_log_set_fn)dlsym(h, "llama_log_set");
    if (!defaults || !quantize) {
        printf("SKIP: %s lacks llama_model_quantize\n", path);
        return 77;
    }
    if (log_set) log_set(on_log, &ls);
    if (init) init();
    lq_params p = defaults();
    if (!layout_ok(&p)) {
        fprintf(stderr, "llama-quantize-ref: %s: default parameters do not match the declared layout\n", path);
        return 1;
    }
    p.ftype = ftype, p.nthread = nthread, p.pure = pure, p.allow_requantize = requant;
    uint32_t rc = quantize(pos[0], pos[1], &p);
    if (rc) {
        fprintf(stderr, "llama-quantize-ref: llama_model_quantize failed (%u) for %s -> %s (%s)\n", rc, pos[0], pos[1],
                pos[2]);
        return 1;
    }
    return 0;
}
