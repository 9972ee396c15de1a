/* hearth quantize: convert a model's weight matrices to another type or llama.cpp mix. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "formats/types.h"
#include "sparse/quant_mix.h"
#include "sparse/quantize.h"

#define CMD "quantize"

static void list_types(FILE *f) {
    fprintf(f, "Types: llama-quantize's names (any case) or llama_ftype numbers; bits per weight of the base type:\n");
    for (size_t i = 0; i < hr_qmix_count(); i++) {
        const hr_qmix *m = hr_qmix_at(i);
        fprintf(f, "  %2u  or  %-9s : %5.2f bpw %-6s %s\n", m->ftype, m->name, hr_type_bpw(m->base),
                hr_type_name(m->base), m->rules);
    }
    fprintf(f, "          Q3_K, Q4_K, Q5_K : the _M mixes, as in llama-quantize\n"
               "          (output: output.weight, or token_embd when the output is tied to it)\n"
               "          MXFP4     : %5.2f bpw, every matrix mxfp4 (MXFP4_MOE --pure)\n",
            hr_type_bpw(HR_MXFP4));
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: hearth quantize [-q] [--pure] IN.gguf OUT.gguf TYPE\n"
            "Converts a dense or PowerInfer model to TYPE, giving each tensor the type llama.cpp's\n"
            "llama-quantize gives it for that mix (same per-tensor rules by tensor, layer and head\n"
            "grouping; bit-exact reference quantizers, no importance matrix). Vectors (norms, biases),\n"
            "the MoE router and learned positions are copied. A matrix whose rows are not whole\n"
            "256-blocks falls back as in llama.cpp: q2_k and q3_k to q4_0, q4_k to q5_0, q5_k to q5_1,\n"
            "q6_k to q8_0, iq4_xs to iq4_nl; rows that are not whole 32-blocks become f16. The PWRI\n"
            "magic, the predictors (base type) and ffn_down_t (ffn_down's rules) are kept;\n"
            "general.file_type is set as llama.cpp sets it and every other key copied.\n\n"
            "  --pure        every matrix in the mix's base type (no per-tensor rules), as\n"
            "                llama-quantize --pure\n"
            "  -q, --quiet   no progress or summary on stderr\n"
            "  -h, --help    this help\n\n");
    list_types(f);
}

/* Prints when the whole percentage changes (a log: every 10%); ud holds the last one printed. */
static void progress(void *ud, uint64_t done, uint64_t total) {
    int *last = ud;
    const int pct = total ? (int)(100.0 * (double)done / (double)total) : 100;
    const char *pre = hr_progress_step(last, pct, false);
    if (!pre) return;
    fprintf(stderr, "%shearth quantize: converted %llu / %llu MiB (%3d%%)%s", pre, (unsigned long long)(done >> 20),
            (unsigned long long)(total >> 20), pct, done == total ? ", writing...\n" : hr_progress_tty() ? "" : "\n");
    fflush(stderr);
}

/* A mix name, or a type no mix is named after (mxfp4), which means that type throughout. */
static const hr_qmix *parse_type(const char *name, bool *pure) {
    const hr_qmix *m = hr_qmix_find(name);
    if (m) return m;
    const int t = hr_type_from_name(name);
    m = t >= 0 && hr_type_is_weight((uint32_t)t) ? hr_qmix_for_type((uint32_t)t) : NULL;
    if (m) *pure = true;
    return m;
}

static void summary(const char *out, const hr_qmix *mix, bool pure, const hr_quantize_result *r) {
    fprintf(stderr, "hearth quantize: wrote %s (%s%s%s): %llu matrices converted, %llu tensors copied, %.2f -> %.2f MiB\n",
            out, mix->name, pure ? ", pure" : "", r->sparse ? ", PowerInfer" : "", (unsigned long long)r->n_converted,
            (unsigned long long)r->n_copied, (double)r->in_bytes / 1048576.0, (double)r->out_bytes / 1048576.0);
    fprintf(stderr, "hearth quantize: tensor types:");
    for (uint32_t t = 0; t < HR_TYPE_MAX; t++)
        if (r->n_of_type[t]) fprintf(stderr, " %s %llu", hr_type_name(t) ? hr_type_name(t) : "?", (unsigned long long)r->n_of_type[t]);
    fprintf(stderr, "\n");
    if (r->n_fallback)
        fprintf(stderr, "hearth quantize: %u matrices have rows that are not whole blocks of their type: given llama.cpp's fallback type\n",
                r->n_fallback);
    if (r->n_requant)
        fprintf(stderr, "hearth quantize: %llu matrices were already quantized; converting them again loses accuracy\n",
                (unsigned long long)r->n_requant);
}

int hr_cmd_quantize(int argc, char **argv) {
    const char *pos[3];
    int n = 0;
    bool quiet = false, pure = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) quiet = true;
        else if (!strcmp(a, "--pure")) pure = true;
        else if (a[0] == '-' && a[1]) return hr_usage_error(CMD, "unknown flag '%s'", a);
        else if (n == 3) return hr_usage_error(CMD, "unexpected argument '%s'", a);
        else pos[n++] = a;
    }
    if (n < 3) return hr_usage_error(CMD, "needs IN.gguf OUT.gguf TYPE");
    const hr_qmix *mix = parse_type(pos[2], &pure);
    if (!mix) return hr_usage_error(CMD, "unknown type '%s' (the list: hearth quantize --help)", pos[2]);
    FILE *probe = fopen(pos[0], "rb");
    if (!probe) {
        fprintf(stderr, "hearth quantize: cannot open %s\n", pos[0]);
        return 1;
    }
    long size = fseek(probe, 0, SEEK_END) ? 0 : ftell(probe);
    fclose(probe);
    int last = -1;
    hr_err e = {{0}};
    hr_quantize_result r;
    hr_quantize_progress_fn fn = !quiet && size >= (64L << 20) ? progress : NULL;
    if (hr_quantize_file(pos[0], pos[1], mix, pure, fn, &last, &r, &e)) {
        fprintf(stderr, "hearth quantize: %s\n", e.msg);
        return 1;
    }
    if (!quiet) summary(pos[1], mix, pure, &r);
    return 0;
}
