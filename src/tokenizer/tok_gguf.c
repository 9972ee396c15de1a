/* The tokenizer.ggml.* keys: reading them as llama.cpp's vocabulary loader does, and
 * writing them for a vocabulary held in memory. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tok_internal.h"

#define K "tokenizer.ggml."

static int str_arr(const gguf_file *f, const char *key, bool need, const gguf_array **a, hr_err *e) {
    *a = NULL;
    int r = gguf_get_arr(f, key, a, e);
    if (r < 0) return hr_errctx(e, "%s", key);
    if (r == 1) return need ? hr_errf(e, "%s is missing", key) : 0;
    if ((*a)->type != GGUF_VT_STRING) return hr_errf(e, "%s must be an array of strings, not of %s", key, gguf_vtype_name((*a)->type));
    return 0;
}

static int num_arr(const gguf_file *f, const char *key, uint64_t n, const gguf_vtype *ok, const gguf_array **a, hr_err *e) {
    *a = NULL;
    int r = gguf_get_arr(f, key, a, e);
    if (r < 0) return hr_errctx(e, "%s", key);
    if (r == 1) return 0;
    bool good = false;
    for (; *ok != GGUF_VT_COUNT; ok++) good |= (*a)->type == *ok;
    if (!good) return hr_errf(e, "%s has elements of type %s", key, gguf_vtype_name((*a)->type));
    if ((*a)->n != n) return hr_errf(e, "%s has %llu entries but there are %llu tokens", key, (unsigned long long)(*a)->n, (unsigned long long)n);
    return 0;
}

/* Appends a line to the warnings (NULL: none wanted). */
static void warn(hr_err *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void warn(hr_err *w, const char *fmt, ...) {
    if (!w) return;
    size_t n = strlen(w->msg), cap = sizeof w->msg;
    if (n && n + 1 < cap) w->msg[n++] = '\n', w->msg[n] = 0;
    if (n + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->msg + n, cap - n, fmt, ap);
    va_end(ap);
}

/* A special-token id key: absent keeps the default; out of range is ignored with the
 * default kept, as llama.cpp does (real files carry e.g. a padding id past the end).
 * *bad is set when the file's id lies outside the vocabulary. */
static int special_id(const gguf_file *f, const char *key, uint32_t n, int32_t *id, bool *bad, hr_err *e) {
    uint32_t v;
    int r = gguf_get_u32(f, key, &v, e);
    if (r < 0) return hr_errctx(e, "%s", key);
    if (r == 0 && v < n) *id = (int32_t)v;
    if (bad) *bad = r == 0 && v >= n;
    if (*id >= 0 && (uint32_t)*id >= n) *id = -1;
    return 0;
}

/* BOS and EOS ids outside the vocabulary: llama.cpp keeps its default id, which names some
 * unrelated token; Hearth disables the token instead and says so. */
static void disable_bad(const gguf_file *f, tok_src *s, bool bad_bos, bool bad_eos, hr_err *w) {
    uint32_t v = 0;
    if (bad_bos) {
        gguf_get_u32(f, K "bos_token_id", &v, NULL);
        warn(w, K "bos_token_id %u is outside the vocabulary (%u tokens): no BOS token is added", v, s->n);
        s->bos = -1, s->add_bos = false;
    }
    if (bad_eos) {
        gguf_get_u32(f, K "eos_token_id", &v, NULL);
        warn(w, K "eos_token_id %u is outside the vocabulary (%u tokens): no EOS token; generation ends only at "
                  "other end-of-generation tokens, -n or the context",
             v, s->n);
        s->eos = -1, s->add_eos = false;
    }
}

static int opt_bool(const gguf_file *f, const char *key, bool *v, hr_err *e) {
    int r = gguf_get_bool(f, key, v, e);
    return r < 0 ? hr_errctx(e, "%s", key) : 0;
}

/* *gemma4: the Gemma 4 model name, a BPE vocabulary whose pre-tokenizer is implied ("gemma4"). */
static int model_kind(gguf_str m, hr_tok_kind *k, bool *gemma4, hr_err *e) {
    static const char *const other[] = {"bert", "t5", "rwkv", "plamo2", "hybriddna", "whitespace", NULL};
    *gemma4 = gguf_str_eq(m, "gemma4");
    if (*gemma4) {
        *k = HR_TOK_BPE;
        return 0;
    }
    if (gguf_str_eq(m, "llama")) {
        *k = HR_TOK_SPM;
        return 0;
    }
    if (gguf_str_eq(m, "gpt2")) {
        *k = HR_TOK_BPE;
        return 0;
    }
    int n = m.len > 64 ? 64 : (int)m.len;
    if (gguf_str_eq(m, "no_vocab") || gguf_str_eq(m, "none"))
        return hr_errf(e, "the file has no vocabulary (" K "model is '%.*s')", n, m.ptr);
    for (const char *const *o = other; *o; o++)
        if (gguf_str_eq(m, *o))
            return hr_errf(e, "tokenizer model '%.*s' is not supported (Hearth supports 'llama' and 'gpt2')", n, m.ptr);
    return hr_errf(e, "unknown tokenizer model: '%.*s'", n, m.ptr);
}

typedef struct strs {
    const char **p;
    uint32_t *len;
} strs;

static int take_strs(const gguf_array *a, strs *s, const char *key, hr_err *e) {
    s->p = calloc(a->n ? a->n : 1, sizeof *s->p);
    s->len = calloc(a->n ? a->n : 1, sizeof *s->len);
    if (!s->p || !s->len) return hr_errf(e, "out of memory");
    for (uint64_t i = 0; i < a->n; i++) {
        if (a->items[i].type != GGUF_VT_STRING) return hr_errf(e, "%s[%llu] is not a string", key, (unsigned long long)i);
        if (a->items[i].v.s.len > UINT32_MAX / 2) return hr_errf(e, "%s[%llu] is too long", key, (unsigned long long)i);
        s->p[i] = a->items[i].v.s.ptr;
        s->len[i] = (uint32_t)a->items[i].v.s.len;
    }
    return 0;
}

int hr_tok_from_gguf(hr_tokenizer **t, const gguf_file *f, hr_err *e) { return hr_tok_from_gguf_warn(t, f, NULL, e); }

int hr_tok_from_gguf_warn(hr_tokenizer **t, const gguf_file *f, hr_err *w, hr_err *e) {
    *t = NULL;
    gguf_str model, pre = {"", 0};
    int r = gguf_get_str(f, K "model", &model, e);
    if (r < 0) return hr_errctx(e, K "model");
    if (r == 1) return hr_errf(e, "the file has no vocabulary (" K "model is missing)");
    tok_src s = {0};
    bool gemma4;
    if (model_kind(model, &s.kind, &gemma4, e)) return -1;
    tok_pre_info pi = {0};
    if (s.kind == HR_TOK_BPE) {
        if (gguf_get_str(f, K "pre", &pre, e) < 0) return hr_errctx(e, K "pre");
        if (gemma4) pre = (gguf_str){"gemma4", 6}; /* llama.cpp ignores the file's value here */
        if (hr_tok_pre_lookup(pre.ptr, pre.len, &pi, e)) return -1;
    }
    const gguf_array *tok, *sc, *ty, *mg = NULL;
    if (str_arr(f, K "tokens", true, &tok, e)) return -1;
    if (tok->n == 0 || tok->n > (uint64_t)INT32_MAX) return hr_errf(e, K "tokens has %llu entries", (unsigned long long)tok->n);
    static const gguf_vtype score_types[] = {GGUF_VT_FLOAT32, GGUF_VT_INT32, GGUF_VT_COUNT};
    static const gguf_vtype type_types[] = {GGUF_VT_INT32, GGUF_VT_COUNT};
    if (num_arr(f, K "scores", tok->n, score_types, &sc, e) || num_arr(f, K "token_type", tok->n, type_types, &ty, e))
        return -1;
    /* Kimi-K2 files may come without merges (llama.cpp accepts that for it alone) */
    bool need_merges = !gguf_str_eq(pre, "kimi-k2");
    if (s.kind == HR_TOK_BPE && str_arr(f, K "merges", need_merges, &mg, e)) return -1;
    if (mg && mg->n > (uint64_t)INT32_MAX) return hr_errf(e, K "merges has too many entries");

    s.n = (uint32_t)tok->n;
    s.pre = pi.kind;
    s.ignore_merges = pi.ignore_merges;
    s.raw_bpe = pi.raw;
    s.newline_words = pi.newline_words;
    bool spm = s.kind == HR_TOK_SPM;
    s.bos = spm ? 1 : pi.no_bos || gemma4 ? -1 : 11;
    s.eos = spm ? 2 : gemma4 ? -1 : 11;
    s.unk = spm ? 0 : -1;
    s.pad = -1;
    s.add_bos = spm || pi.add_bos;
    s.add_eos = false;
    s.add_space_prefix = spm;
    bool bad_bos = false, bad_eos = false;
    if (special_id(f, K "bos_token_id", s.n, &s.bos, &bad_bos, e) || special_id(f, K "eos_token_id", s.n, &s.eos, &bad_eos, e) ||
        special_id(f, K "unknown_token_id", s.n, &s.unk, NULL, e) || special_id(f, K "padding_token_id", s.n, &s.pad, NULL, e) ||
        opt_bool(f, K "add_bos_token", &s.add_bos, e) || opt_bool(f, K "add_eos_token", &s.add_eos, e) ||
        opt_bool(f, K "add_space_prefix", &s.add_space_prefix, e))
        return -1;
    disable_bad(f, &s, bad_bos, bad_eos, w);

    strs ts = {0}, ms = {0};
    float *scores = NULL;
    int32_t *types = NULL;
    int rc = take_strs(tok, &ts, K "tokens", e);
    if (!rc && mg) rc = take_strs(mg, &ms, K "merges", e);
    if (!rc && sc) {
        scores = malloc(s.n * sizeof *scores);
        if (!scores) rc = hr_errf(e, "out of memory");
        for (uint32_t i = 0; !rc && i < s.n; i++) scores[i] = (float)gguf_arr_num(sc, i);
    }
    if (!rc && ty) {
        types = malloc(s.n * sizeof *types);
        if (!types) rc = hr_errf(e, "out of memory");
        for (uint32_t i = 0; !rc && i < s.n; i++) types[i] = (int32_t)gguf_arr_num(ty, i);
    }
    if (!rc) {
        s.text = ts.p;
        s.len = ts.len;
        s.scores = scores;
        s.types = types;
        s.n_merges = mg ? (uint32_t)mg->n : 0;
        s.merges = ms.p;
        s.merge_len = ms.len;
        rc = hr_tok_build(t, &s, e);
    }
    free(ts.p);
    free(ts.len);
    free(ms.p);
    free(ms.len);
    free(scores);
    free(types);
    return rc ? hr_errctx(e, "vocabulary") : 0;
}

void hr_vocab_write_gguf(gguf_writer *w, const hr_vocab_desc *d) {
    bool spm = d->kind == HR_TOK_SPM;
    gguf_w_str(w, K "model", spm ? "llama" : "gpt2");
    if (!spm) gguf_w_str(w, K "pre", d->pre ? d->pre : "default");
    gguf_w_arr_str(w, K "tokens", (const char *const *)d->text, NULL, d->n);
    if (d->scores) gguf_w_arr_f32(w, K "scores", d->scores, d->n);
    if (d->types) gguf_w_arr_i32(w, K "token_type", d->types, d->n);
    if (!spm) gguf_w_arr_str(w, K "merges", (const char *const *)d->merges, NULL, d->n_merges);
    /* llama.cpp reads these ids only as UINT32 */
    if (d->bos >= 0) gguf_w_u32(w, K "bos_token_id", (uint32_t)d->bos);
    if (d->eos >= 0) gguf_w_u32(w, K "eos_token_id", (uint32_t)d->eos);
    if (d->unk >= 0) gguf_w_u32(w, K "unknown_token_id", (uint32_t)d->unk);
    if (d->pad >= 0) gguf_w_u32(w, K "padding_token_id", (uint32_t)d->pad);
    gguf_w_bool(w, K "add_bos_token", d->add_bos);
    gguf_w_bool(w, K "add_eos_token", d->add_eos);
    if (spm) gguf_w_bool(w, K "add_space_prefix", d->add_space_prefix);
}
