// fuzz-sources: src/util/*.c src/formats/*.c src/tokenizer/*.c
/* libFuzzer target for the tokenizers. The first byte picks what to do with the rest:
 *   bit 7 clear: encode the bytes with the synthetic SPM and BPE vocabularies, with and
 *     without special-token parsing, and check the round trips that must hold (SPM on
 *     valid UTF-8 without U+2581: " " + text; BPE on valid UTF-8: the text itself); run
 *     every pre-tokenizer kind and the streaming decoder over the bytes.
 *   bit 7 set: build a vocabulary from the bytes (lines are tokens, a byte per token
 *     picks its type; the pre-tokenizer name from bits 1-2 and the first byte), which must
 *     either be refused with a message or encode text. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/pretok.h"
#include "tokenizer/tokenizer.h"

static hr_tokenizer *spm, *bpe;

static void init(void) {
    if (spm) return;
    hr_vocab_desc d;
    hr_err e;
    if (hr_vocab_synth(HR_TOK_SPM, 600, &d, &e) || hr_tok_new(&spm, &d, &e)) abort();
    hr_vocab_free(&d);
    if (hr_vocab_synth(HR_TOK_BPE, 600, &d, &e) || hr_tok_new(&bpe, &d, &e)) abort();
    hr_vocab_free(&d);
}

static bool valid_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!k || i + k > n) return false;
        uint32_t cp = k == 1 ? c : k == 2 ? c & 0x1F : k == 3 ? c & 0x0F : c & 0x07;
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return false;
            cp = cp << 6 | (s[i + j] & 0x3F);
        }
        static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += k;
    }
    return true;
}

static char *detok(const hr_tokenizer *t, const int32_t *ids, size_t n, size_t *len) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        int m = hr_tok_piece(t, ids[i], true, NULL, 0);
        if (m < 0) abort();
        total += (size_t)m;
    }
    char *out = malloc(total + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += (size_t)hr_tok_piece(t, ids[i], true, out + k, total + 1 - k);
    if (k != total) abort();
    *len = k;
    return out;
}

static void encode_checks(const char *s, size_t n, uint8_t mode) {
    bool valid = valid_utf8((const unsigned char *)s, n);
    bool has_sp = false;
    for (size_t i = 0; i + 3 <= n; i++) has_sp |= !memcmp(s + i, "\xe2\x96\x81", 3);
    for (int k = 0; k < 2; k++) {
        const hr_tokenizer *t = k ? bpe : spm;
        for (int parse = 0; parse < 2; parse++) {
            int32_t *ids = NULL;
            size_t nid = 0, len = 0;
            hr_err e;
            if (hr_tok_encode(t, s, n, mode & 1, parse, &ids, &nid, &e)) abort(); /* byte fallback covers all */
            for (size_t i = 0; i < nid; i++)
                if (ids[i] < 0 || ids[i] >= hr_tok_n_vocab(t)) abort();
            char *back = detok(t, ids, nid, &len);
            if (!(mode & 1) && valid) {
                if (k == 1 && (len != n || memcmp(back, s, n))) abort();
                if (k == 0 && !parse && !has_sp && n && (len != n + 1 || back[0] != ' ' || memcmp(back + 1, s, n)))
                    abort();
            }
            free(back);
            free(ids);
        }
    }
    for (int p = 0; p < HR_PRE_COUNT; p++) {
        hr_words w;
        if (hr_pretok((hr_pre_kind)p, s, n, &w)) abort();
        size_t sum = 0;
        for (size_t i = 0; i < w.n_words; i++) {
            if (!w.lens[i]) abort();
            sum += w.lens[i];
        }
        if (sum != w.n_cpts) abort();
        hr_words_free(&w);
    }
    /* streaming: chunk sizes from the mode byte; output is the input, in whole characters */
    hr_detok d = {{0}, 0};
    char *out = malloc(n + 8), *all = malloc(n + 8);
    size_t k = 0, step = 1 + (mode >> 1) % 7;
    for (size_t at = 0; at < n; at += step) {
        size_t m = n - at < step ? n - at : step;
        size_t w = hr_detok_push(&d, s + at, m, out, m + 4);
        if (valid && !valid_utf8((const unsigned char *)out, w)) abort();
        memcpy(all + k, out, w);
        k += w;
    }
    k += hr_detok_flush(&d, all + k, 8);
    if (k != n || (n && memcmp(all, s, n))) abort();
    free(out);
    free(all);
}

static void vocab_from_bytes(const char *s, size_t n, uint8_t mode) {
    char *copy = malloc(n + 1);
    memcpy(copy, s, n);
    copy[n] = 0;
    char *text[64];
    int32_t types[64];
    float scores[64];
    uint32_t nt = 0;
    for (char *p = copy; nt < 64;) {
        char *nl = memchr(p, '\n', (size_t)(copy + n - p));
        if (nl) *nl = 0;
        text[nt] = p;
        types[nt] = (int32_t)(unsigned char)p[0] % 8;
        scores[nt] = -(float)nt;
        nt++;
        if (!nl) break;
        p = nl + 1;
    }
    char *merges[8];
    uint32_t nm = 0;
    for (uint32_t i = 0; i + 1 < nt && nm < 8; i += 2) {
        size_t a = strlen(text[i]), b = strlen(text[i + 1]);
        merges[nm] = malloc(a + b + 2);
        memcpy(merges[nm], text[i], a);
        merges[nm][a] = ' ';
        memcpy(merges[nm] + a + 1, text[i + 1], b + 1);
        nm++;
    }
    static char *pres[32] = {"default", "gpt-2", "llama3", "qwen2", "qwen35", "deepseek-llm", "deepseek-v3",
                             "deepseek-coder", "falcon", "starcoder", "poro-chat", "viking", "tekken", "chameleon",
                             "gpt-4o", "granite-embed-multi-97m", "tiny_aya", "kimi-k2", "superbpe", "bailingmoe",
                             "seed-coder", "ufakzeka", "afmoe", "laguna", "exaone-moe", "gemma4", "minicpm5",
                             "jais-2", "spark2_5", "youtu", "sarvam-moe", "chatglm-bpe"};
    unsigned pick = ((mode >> 1) & 3) | (n ? ((unsigned char)s[0] & 7) << 2 : 0);
    hr_vocab_desc d = {.kind = (hr_tok_kind)(mode & 1), .n = nt, .text = text, .scores = scores, .types = types,
                       .n_merges = nm, .merges = merges, .pre = pres[pick],
                       .bos = (int32_t)((mode >> 3) & 7) - 1, .eos = -1, .unk = -1, .pad = -1,
                       .add_bos = mode & 64, .add_space_prefix = mode & 32};
    hr_tokenizer *t = NULL;
    hr_err e;
    e.msg[0] = 0;
    if (hr_tok_new(&t, &d, &e) == 0) {
        int32_t *ids = NULL;
        size_t nid = 0;
        if (hr_tok_encode(t, s, n, true, true, &ids, &nid, &e) == 0) {
            for (size_t i = 0; i < nid; i++)
                if (ids[i] < 0 || ids[i] >= (int32_t)nt) abort();
            for (size_t i = 0; i < nid; i++) hr_tok_piece(t, ids[i], true, NULL, 0);
        } else if (!e.msg[0]) {
            abort(); /* a refusal must say why */
        }
        free(ids);
        hr_tok_free(t);
    } else if (!e.msg[0] || t) {
        abort();
    }
    for (uint32_t i = 0; i < nm; i++) free(merges[i]);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    init();
    uint8_t mode = data[0];
    if (mode & 0x80) vocab_from_bytes((const char *)data + 1, size - 1, mode);
    else encode_checks((const char *)data + 1, size - 1, mode);
    return 0;
}
