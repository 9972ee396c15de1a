/* hearth tokenize: print the tokens of a text with a model file's vocabulary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "text_file.h"
#include "cli.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"

#define CMD "tokenize"

static void usage(FILE *f) {
    fprintf(f,
            "usage: hearth tokenize -m FILE.gguf (-p TEXT | -f TEXTFILE) [flags]\n"
            "Prints the tokens of a text as llama.cpp's tokenizer makes them.\n\n"
            "  -m, --model PATH   model file (only its vocabulary is read)\n"
            "  -p, --prompt TEXT  text to tokenize\n"
            "  -f, --file PATH    read the text from a file (bytes as they are)\n"
            "  --no-bos           do not add BOS even if the vocabulary asks for it\n"
            "  --no-special       treat special-token text (e.g. <s>) as plain text\n"
            "  --ids              print only the ids, space-separated, on one line\n"
            "  --delimiter STR    the text is several texts, each ending at STR (or at the end);\n"
            "                     each is tokenized on its own, one --ids line per text\n"
            "  -h, --help         this help\n"
            "Default output: one line per token, \"id<TAB>'piece'\".\n");
}

static void print_tokens(const hr_tokenizer *t, const int32_t *ids, size_t n, bool only_ids) {
    if (only_ids) {
        for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
        printf("\n");
        return;
    }
    char small[256];
    for (size_t i = 0; i < n; i++) {
        int len = hr_tok_piece(t, ids[i], true, small, sizeof small);
        char *p = small;
        if (len >= (int)sizeof small && (p = malloc((size_t)len + 1)) != NULL) hr_tok_piece(t, ids[i], true, p, (size_t)len + 1);
        printf("%d\t'", ids[i]);
        if (p && len > 0) fwrite(p, 1, (size_t)len, stdout);
        printf("'\n");
        if (p != small) free(p);
    }
}

static const char *find_delim(const char *s, size_t n, const char *d, size_t dl) {
    for (size_t i = 0; i + dl <= n; i++)
        if (s[i] == d[0] && !memcmp(s + i, d, dl)) return s + i;
    return NULL;
}

/* Tokenizes and prints text, or each delimited text of it (one line of ids each). */
static int encode_all(const hr_tokenizer *t, const char *text, size_t len, const char *delim, bool add_special,
                      bool parse_special, bool only_ids) {
    size_t dl = delim ? strlen(delim) : 0;
    for (size_t at = 0; at < len || (!dl && at == 0);) {
        const char *m = dl ? find_delim(text + at, len - at, delim, dl) : NULL;
        size_t n = m ? (size_t)(m - (text + at)) : len - at;
        int32_t *ids = NULL;
        size_t nid = 0;
        hr_err e = {{0}};
        if (hr_tok_encode(t, text + at, n, add_special, parse_special, &ids, &nid, &e) != 0) {
            fprintf(stderr, "hearth %s: %s\n", CMD, e.msg);
            return 1;
        }
        print_tokens(t, ids, nid, only_ids);
        free(ids);
        at += n + (m ? dl : 0);
        if (!dl) break;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

int hr_cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *file = NULL, *delim = NULL;
    bool no_bos = false, no_special = false, only_ids = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "-p") || !strcmp(a, "--prompt") ||
                   !strcmp(a, "-f") || !strcmp(a, "--file")) {
            if (!hr_arg_need(CMD, argc, argv, i)) return 2;
            const char *v = argv[++i];
            if (a[1] == 'm' || a[2] == 'm') model = v;
            else if (a[1] == 'p' || a[2] == 'p') prompt = v;
            else file = v;
        } else if (!strcmp(a, "--delimiter")) {
            if (!hr_arg_need(CMD, argc, argv, i)) return 2;
            delim = argv[++i];
        } else if (!strcmp(a, "--no-bos")) {
            no_bos = true;
        } else if (!strcmp(a, "--no-special")) {
            no_special = true;
        } else if (!strcmp(a, "--ids")) {
            only_ids = true;
        } else {
            return hr_usage_error(CMD, "unknown flag '%s'", a);
        }
    }
    if (!model) return hr_usage_error(CMD, "-m FILE.gguf is required");
    if (!prompt == !file) return hr_usage_error(CMD, "give exactly one of -p TEXT and -f TEXTFILE");
    if (delim && (!*delim || !only_ids)) return hr_usage_error(CMD, "--delimiter needs a non-empty STR and --ids");

    size_t len = 0;
    char *text = NULL;
    if (file) {
        hr_err fe = {{0}};
        if (!(text = hr_text_file(file, 0, &len, &fe))) {
            fprintf(stderr, "hearth %s: -f: %s\n", CMD, fe.msg);
            return 1;
        }
    }
    hr_err e = {{0}};
    gguf_file g;
    if (gguf_open(&g, model, &e) != 0) {
        fprintf(stderr, "hearth %s: %s: %s\n", CMD, model, e.msg);
        free(text);
        return 1;
    }
    hr_tokenizer *t = NULL;
    int rc = 1;
    if (hr_tok_from_gguf(&t, &g, &e) != 0) {
        fprintf(stderr, "hearth %s: %s: %s\n", CMD, model, e.msg);
    } else {
        /* like llama-tokenize: special tokens are added only when BOS would be */
        bool add_special = hr_tok_add_bos(t) && !no_bos;
        rc = encode_all(t, file ? text : prompt, file ? len : strlen(prompt), delim, add_special, !no_special, only_ids);
    }
    hr_tok_free(t);
    gguf_close(&g);
    free(text);
    return rc;
}
