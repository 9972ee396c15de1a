/* hearth quantize: convert a model's weight matrices to another type. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "formats/types.h"
#include "sparse/quantize.h"

#define CMD "quantize"

static void usage(FILE *f) {
    fprintf(f,
            "usage: hearth quantize [-q] IN.gguf OUT.gguf TYPE\n"
            "Converts every weight matrix of a dense or PowerInfer model to TYPE: f32, f16, bf16,\n"
            "q8_0 or q4_0 (llama.cpp's blocks, bit-exact reference quantizers). Vectors (norms,\n"
            "biases), the MoE router and learned positions are copied; a matrix whose rows are\n"
            "not whole blocks of TYPE is kept as it is. The PWRI magic, the predictors and\n"
            "ffn_down_t are kept; general.file_type is updated and every other key copied.\n\n"
            "  -q, --quiet   no progress or summary on stderr\n"
            "  -h, --help    this help\n");
}

/* Prints when the whole percentage changes; ud holds the last one printed. */
static void progress(void *ud, uint64_t done, uint64_t total) {
    int *last = ud;
    const int pct = total ? (int)(100.0 * (double)done / (double)total) : 100;
    if (pct == *last) return;
    *last = pct;
    fprintf(stderr, "\rhearth quantize: converted %llu / %llu MiB (%3d%%)%s", (unsigned long long)(done >> 20),
            (unsigned long long)(total >> 20), pct, done == total ? ", writing...\n" : "");
    fflush(stderr);
}

int hr_cmd_quantize(int argc, char **argv) {
    const char *pos[3];
    int n = 0;
    bool quiet = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) quiet = true;
        else if (a[0] == '-' && a[1]) return hr_usage_error(CMD, "unknown flag '%s'", a);
        else if (n == 3) return hr_usage_error(CMD, "unexpected argument '%s'", a);
        else pos[n++] = a;
    }
    if (n < 3) return hr_usage_error(CMD, "needs IN.gguf OUT.gguf TYPE");
    int t = hr_type_from_name(pos[2]);
    if (t < 0 || hr_quantize_ftype((uint32_t)t) == UINT32_MAX)
        return hr_usage_error(CMD, "unknown type '%s' (use f32, f16, bf16, q8_0 or q4_0)", pos[2]);
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
    if (hr_quantize_file(pos[0], pos[1], (uint32_t)t, fn, &last, &r, &e)) {
        fprintf(stderr, "hearth quantize: %s\n", e.msg);
        return 1;
    }
    if (!quiet) {
        fprintf(stderr, "hearth quantize: wrote %s (%s%s): %llu matrices converted, %llu tensors copied, %.2f -> %.2f MiB\n",
                pos[1], hr_type_name((uint32_t)t), r.sparse ? ", PowerInfer" : "", (unsigned long long)r.n_converted,
                (unsigned long long)r.n_copied, (double)r.in_bytes / 1048576.0, (double)r.out_bytes / 1048576.0);
        if (r.n_unfit)
            fprintf(stderr, "hearth quantize: %llu matrices kept in their type: rows are not whole %s blocks\n",
                    (unsigned long long)r.n_unfit, hr_type_name((uint32_t)t));
        if (r.n_requant)
            fprintf(stderr, "hearth quantize: %llu matrices were already quantized; converting them again loses accuracy\n",
                    (unsigned long long)r.n_requant);
    }
    return 0;
}
