/* Vocabulary building and validation, special-token handling, and the encode entry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tok_internal.h"

int hr_ids_push(tok_ids *o, int32_t id) {
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 64;
        int32_t *v = realloc(o->v, cap * sizeof *v);
        if (!v) return -1;
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = id;
    return 0;
}

int32_t hr_tok_find(const hr_tokenizer *t, const char *s, size_t n) { return hr_strmap_get(&t->ids, s, n); }

/* ---- pre-tokenizer names: llama.cpp's list, each with the split and settings it implies ---- */

enum { PF_IGNORE_MERGES = 1, PF_ADD_BOS = 2, PF_NO_BOS = 4, PF_RAW = 8, PF_NL_WORDS = 16 };

static const struct {
    const char *name;
    hr_pre_kind kind;
    unsigned flags;
} pre_names[] = {
    {"default", HR_PRE_DEFAULT, 0},
    {"minicpm5", HR_PRE_MINICPM5, PF_IGNORE_MERGES},
    {"llama3", HR_PRE_LLAMA3, PF_IGNORE_MERGES | PF_ADD_BOS},
    {"llama-v3", HR_PRE_LLAMA3, PF_IGNORE_MERGES | PF_ADD_BOS},
    {"llama-bpe", HR_PRE_LLAMA3, PF_IGNORE_MERGES | PF_ADD_BOS},
    {"falcon3", HR_PRE_LLAMA3, PF_IGNORE_MERGES | PF_ADD_BOS},
    {"falcon-h1", HR_PRE_LLAMA3, PF_IGNORE_MERGES | PF_ADD_BOS},
    {"pixtral", HR_PRE_LLAMA3, PF_IGNORE_MERGES | PF_ADD_BOS},
    {"midm-2.0", HR_PRE_LLAMA3, PF_IGNORE_MERGES | PF_ADD_BOS},
    {"lfm2", HR_PRE_LLAMA3, PF_IGNORE_MERGES | PF_ADD_BOS},
    {"jina-v5-nano", HR_PRE_LLAMA3, PF_IGNORE_MERGES | PF_ADD_BOS},
    {"deepseek-llm", HR_PRE_DEEPSEEK_LLM, 0},
    {"deepseek-coder", HR_PRE_DEEPSEEK_CODER, 0},
    {"deepseek-v3", HR_PRE_DEEPSEEK3, 0},
    {"spark2_5", HR_PRE_SPARK2_5, 0},
    {"youtu", HR_PRE_YOUTU, PF_IGNORE_MERGES},
    {"falcon", HR_PRE_FALCON, 0},
    {"mpt", HR_PRE_GPT2, 0},
    {"starcoder", HR_PRE_STARCODER, 0},
    {"gpt-2", HR_PRE_GPT2, 0},
    {"phi-2", HR_PRE_GPT2, 0},
    {"jina-es", HR_PRE_GPT2, 0},
    {"jina-de", HR_PRE_GPT2, 0},
    {"gigachat", HR_PRE_GPT2, 0},
    {"jina-v2-es", HR_PRE_GPT2, 0},
    {"jina-v2-de", HR_PRE_GPT2, 0},
    {"a.x-4.0", HR_PRE_GPT2, 0},
    {"mellum", HR_PRE_GPT2, 0},
    {"modern-bert", HR_PRE_GPT2, 0},
    {"jais-2", HR_PRE_JAIS2, 0},
    {"gemma4", HR_PRE_NEWLINES, PF_RAW | PF_NL_WORDS},
    {"granite-embed-multi-311m", HR_PRE_NEWLINES, PF_RAW | PF_NL_WORDS},
    {"sarvam-moe", HR_PRE_NEWLINES, PF_RAW},
    {"jina-v1-en", HR_PRE_GPT2, 0},
    {"jina-v2-code", HR_PRE_GPT2, 0},
    {"roberta-bpe", HR_PRE_GPT2, 0},
    {"refact", HR_PRE_STARCODER, 0},
    {"command-r", HR_PRE_STARCODER, 0},
    {"qwen2", HR_PRE_QWEN2, 0},
    {"deepseek-r1-qwen", HR_PRE_QWEN2, 0},
    {"kormo", HR_PRE_QWEN2, 0},
    {"f2llmv2", HR_PRE_QWEN2, 0},
    {"qwen35", HR_PRE_QWEN35, 0},
    {"stablelm2", HR_PRE_QWEN2, 0},
    {"olmo", HR_PRE_GPT2, 0},
    {"dbrx", HR_PRE_LLAMA3, 0},
    {"smaug-bpe", HR_PRE_LLAMA3, 0},
    {"poro-chat", HR_PRE_PORO, 0},
    {"glm4", HR_PRE_LLAMA3, PF_NO_BOS},
    {"chatglm-bpe", HR_PRE_LLAMA3, PF_NO_BOS},
    {"viking", HR_PRE_VIKING, 0},
    {"jais", HR_PRE_GPT2, 0},
    {"tekken", HR_PRE_TEKKEN, PF_IGNORE_MERGES | PF_ADD_BOS},
    {"smollm", HR_PRE_STARCODER, 0},
    {"codeshell", HR_PRE_STARCODER, 0},
    {"bloom", HR_PRE_PORO, 0},
    {"gpt3-finnish", HR_PRE_PORO, 0},
    {"exaone", HR_PRE_STARCODER, 0},
    {"exaone4", HR_PRE_GPT2, 0},
    {"exaone-moe", HR_PRE_EXAONE_MOE, 0},
    {"chameleon", HR_PRE_CHAMELEON, PF_ADD_BOS},
    {"minerva-7b", HR_PRE_STARCODER, 0},
    {"megrez", HR_PRE_QWEN2, 0},
    {"gpt-4o", HR_PRE_GPT4O, 0},
    {"llama4", HR_PRE_GPT4O, 0},
    {"kanana2", HR_PRE_GPT4O, 0},
    {"talkie", HR_PRE_GPT4O, 0},
    {"granite-embed-multi-97m", HR_PRE_GRANITE_EMB, PF_IGNORE_MERGES},
    {"tiny_aya", HR_PRE_TINY_AYA, 0},
    {"cohere2moe", HR_PRE_TINY_AYA, 0},
    {"superbpe", HR_PRE_SUPERBPE, 0},
    {"trillion", HR_PRE_GPT2, 0},
    {"granite-docling", HR_PRE_GPT2, 0},
    {"bailingmoe", HR_PRE_BAILINGMOE, 0},
    {"bailingmoe2", HR_PRE_BAILINGMOE, 0},
    {"llada-moe", HR_PRE_BAILINGMOE, 0},
    {"seed-coder", HR_PRE_SEED_CODER, 0},
    {"hunyuan", HR_PRE_QWEN2, 0},
    {"hunyuan-dense", HR_PRE_DEEPSEEK3, 0},
    {"hy_v4", HR_PRE_DEEPSEEK3, 0},
    {"joyai-llm", HR_PRE_DEEPSEEK3, 0},
    {"kimi-k2", HR_PRE_KIMI_K2, 0},
    {"ufakzeka", HR_PRE_UFAKZEKA, 0},
    {"grok-2", HR_PRE_QWEN2, 0},
    {"afmoe", HR_PRE_AFMOE, 0},
    {"laguna", HR_PRE_LAGUNA, 0},
    {"minimax-m2", HR_PRE_GPT4O, 0},
    {"solar-open", HR_PRE_QWEN2, 0},
    {"mellum2", HR_PRE_STARCODER, 0},
};

int hr_tok_pre_lookup(const char *name, size_t len, tok_pre_info *o, hr_err *e) {
    memset(o, 0, sizeof *o);
    if (len == 0) { /* llama.cpp warns and uses 'default' */
        o->kind = HR_PRE_DEFAULT;
        return 0;
    }
    for (size_t i = 0; i < sizeof pre_names / sizeof *pre_names; i++) {
        if (strlen(pre_names[i].name) != len || memcmp(pre_names[i].name, name, len)) continue;
        unsigned f = pre_names[i].flags;
        o->kind = pre_names[i].kind;
        o->ignore_merges = f & PF_IGNORE_MERGES;
        o->add_bos = f & PF_ADD_BOS;
        o->no_bos = f & PF_NO_BOS;
        o->raw = f & PF_RAW;
        o->newline_words = f & PF_NL_WORDS;
        return 0;
    }
    int n = len > 64 ? 64 : (int)len;
    if (len == 10 && !memcmp(name, "whitespace", 10))
        return hr_errf(e, "pre-tokenizer 'whitespace' is not implemented");
    if (len == 4 && !memcmp(name, "gpt2", 4))
        return hr_errf(e, "unknown pre-tokenizer type: 'gpt2' (llama.cpp's name for it is 'gpt-2')");
    return hr_errf(e, "unknown pre-tokenizer type: '%.*s'", n, name);
}

/* ---- building ---- */

static uint32_t attr_of_type(int32_t ty) {
    switch (ty) {
    case HR_TT_NORMAL: return HR_ATTR_NORMAL;
    case HR_TT_UNKNOWN: return HR_ATTR_UNKNOWN;
    case HR_TT_CONTROL: return HR_ATTR_CONTROL;
    case HR_TT_USER_DEFINED: return HR_ATTR_USER_DEFINED;
    case HR_TT_UNUSED: return HR_ATTR_UNUSED;
    case HR_TT_BYTE: return HR_ATTR_BYTE;
    default: return HR_ATTR_UNDEFINED;
    }
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static int byte_token_value(const char *s, uint32_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>' || hexval(s[3]) < 0 || hexval(s[4]) < 0) return -1;
    return hexval(s[3]) * 16 + hexval(s[4]);
}

static int copy_tokens(hr_tokenizer *t, const tok_src *s, hr_err *e) {
    t->text = calloc(s->n, sizeof *t->text);
    t->len = calloc(s->n, sizeof *t->len);
    t->score = calloc(s->n, sizeof *t->score);
    t->attr = calloc(s->n, sizeof *t->attr);
    if (!t->text || !t->len || !t->score || !t->attr || hr_strmap_init(&t->ids, s->n) != 0)
        return hr_errf(e, "out of memory for %u tokens", s->n);
    for (uint32_t i = 0; i < s->n; i++) {
        const char *src = s->text[i];
        size_t n = src ? (s->len ? s->len[i] : strlen(src)) : 0;
        char empty[32];
        if (n == 0) { /* llama.cpp renames empty tokens so every id keeps a distinct text */
            snprintf(empty, sizeof empty, "[EMPTY_%u]", i);
            src = empty;
            n = strlen(empty);
        }
        if (n > UINT32_MAX / 2) return hr_errf(e, "token %u is too long", i);
        t->text[i] = malloc(n + 1);
        if (!t->text[i]) return hr_errf(e, "out of memory");
        memcpy(t->text[i], src, n);
        t->text[i][n] = 0;
        t->len[i] = (uint32_t)n;
        t->score[i] = s->scores ? s->scores[i] : 0.0f;
        int32_t ty = s->types ? s->types[i] : HR_TT_NORMAL;
        if (ty < 0 || ty > HR_TT_BYTE) return hr_errf(e, "token %u has invalid type %d (valid: 0..6)", i, ty);
        t->attr[i] = attr_of_type(ty);
        if (ty == HR_TT_BYTE && byte_token_value(t->text[i], t->len[i]) < 0)
            return hr_errf(e, "token %u is a byte token but its text '%.32s' is not <0xHH>", i, t->text[i]);
        int r = hr_strmap_put(&t->ids, t->text[i], n, (int32_t)i);
        if (r < 0) return hr_errf(e, "out of memory");
        if (r == 0)
            return hr_errf(e, "duplicate token in vocabulary: '%.64s' has ids %d and %u", t->text[i],
                           hr_tok_find(t, t->text[i], n), i);
    }
    return 0;
}

static int load_merges(hr_tokenizer *t, const tok_src *s, hr_err *e) {
    size_t total = 0;
    for (uint32_t i = 0; i < s->n_merges; i++) {
        if (!s->merges[i]) return hr_errf(e, "merge %u is missing", i);
        total += (s->merge_len ? s->merge_len[i] : strlen(s->merges[i])) + 1;
    }
    t->merge_buf = malloc(total ? total : 1);
    if (!t->merge_buf || hr_strmap_init(&t->ranks, s->n_merges) != 0) return hr_errf(e, "out of memory for merges");
    char *p = t->merge_buf;
    for (uint32_t i = 0; i < s->n_merges; i++) {
        size_t n = s->merge_len ? s->merge_len[i] : strlen(s->merges[i]);
        memcpy(p, s->merges[i], n);
        p[n] = 0;
        /* llama.cpp splits at the first space after the first byte */
        const char *sp = n > 1 ? memchr(p + 1, ' ', n - 1) : NULL;
        if (!sp) return hr_errf(e, "merge %u '%.64s' is not of the form 'left right'", i, p);
        size_t ln = (size_t)(sp - p), rn = n - ln - 1;
        if (hr_tok_find(t, p, ln) < 0)
            return hr_errf(e, "merge %u '%.64s': left part '%.*s' is not a token", i, p, (int)(ln > 64 ? 64 : ln), p);
        if (rn == 0 || hr_tok_find(t, sp + 1, rn) < 0)
            return hr_errf(e, "merge %u '%.64s': right part '%.*s' is not a token", i, p, (int)(rn > 64 ? 64 : rn),
                           sp + 1);
        if (hr_strmap_put(&t->ranks, p, n, (int32_t)i) < 0) return hr_errf(e, "out of memory");
        p += n + 1;
    }
    return 0;
}

static bool text_is(const hr_tokenizer *t, uint32_t id, const char *s) {
    return t->len[id] == strlen(s) && !memcmp(t->text[id], s, t->len[id]);
}
/* The lowest id whose text is in list, or -1. */
static int32_t first_in(const hr_tokenizer *t, const char *const *list) {
    int32_t best = -1;
    for (; *list; list++) {
        int32_t id = hr_tok_find(t, *list, strlen(*list));
        if (id >= 0 && (best < 0 || id < best)) best = id;
    }
    return best;
}
static bool in_eog(const hr_tokenizer *t, int32_t id) {
    for (uint32_t i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id) return true;
    return false;
}
static void eog_add(hr_tokenizer *t, int32_t id) {
    if (id >= 0 && !in_eog(t, id)) t->eog[t->n_eog++] = id;
}

/* llama.cpp recognises end-of-turn, fill-in-the-middle and end-of-generation tokens by
 * their text and marks them control even when the file says otherwise; that changes
 * how they are matched in text and rendered, so the same is done here. */
static int fix_attrs(hr_tokenizer *t, hr_err *e) {
    static const char *const eot[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                      "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                      "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                                      "<end_of_utterance>", NULL};
    static const char *const eom[] = {"<|eom_id|>", NULL};
    static const char *const fim_pre[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                          "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<PRE>",
                                          "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", NULL};
    static const char *const fim_suf[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                          "<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>", "<SUF>",
                                          "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>", NULL};
    static const char *const fim_mid[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                          "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>", "<MID>",
                                          "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", NULL};
    static const char *const fim_pad[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL};
    static const char *const fim_rep[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>",
                                          NULL};
    static const char *const fim_sep[] = {"<|file_sep|>", NULL};
    static const char *const eog[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>",
                                      "<|flush|>", "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>",
                                      "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
                                      "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
                                      "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                                      "[e~[", NULL};
    static const char *const gptoss_user[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL};
    const char *const *roles[] = {fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep};
    int32_t role_id[6];

    t->eot = first_in(t, eot);
    t->eom = first_in(t, eom);
    if (t->eot >= 0) t->attr[t->eot] |= HR_ATTR_CONTROL;
    if (t->eom >= 0) t->attr[t->eom] |= HR_ATTR_CONTROL;
    for (int r = 0; r < 6; r++) {
        role_id[r] = first_in(t, roles[r]);
        if (role_id[r] >= 0) t->attr[role_id[r]] |= HR_ATTR_CONTROL;
    }
    for (uint32_t i = 0; i < t->n; i++)
        if ((t->attr[i] & HR_ATTR_CONTROL) && hr_memfind(t->text[i], t->len[i], "unused", 6))
            t->attr[i] |= HR_ATTR_UNUSED;

    t->eog = malloc((t->n + 8) * sizeof *t->eog);
    if (!t->eog) return hr_errf(e, "out of memory");
    eog_add(t, role_id[3]);
    eog_add(t, role_id[4]);
    eog_add(t, role_id[5]);
    for (const char *const *q = eog; *q; q++) {
        int32_t id = hr_tok_find(t, *q, strlen(*q));
        if (id >= 0) {
            eog_add(t, id);
            t->attr[id] |= HR_ATTR_CONTROL;
        }
    }
    for (const char *const *q = gptoss_user; *q; q++) {
        int32_t id = hr_tok_find(t, *q, strlen(*q));
        if (id >= 0) t->attr[id] = HR_ATTR_USER_DEFINED;
    }
    eog_add(t, t->eos);
    eog_add(t, t->eot);
    eog_add(t, t->eom);

    /* gpt-oss / solar-open: <|end|> is a turn separator there, not the end of generation */
    bool ret = false, call = false, flush = false;
    int32_t end_id = -1;
    for (uint32_t i = 0; i < t->n_eog; i++) {
        int32_t id = t->eog[i];
        if (text_is(t, id, "<|return|>")) ret = true;
        else if (text_is(t, id, "<|call|>") || text_is(t, id, "<|calls|>")) call = true;
        else if (text_is(t, id, "<|flush|>")) flush = true;
        else if (text_is(t, id, "<|end|>")) end_id = id;
    }
    if (end_id >= 0 && ((ret && call) || (call && flush))) {
        t->attr[end_id] = HR_ATTR_USER_DEFINED;
        for (uint32_t i = 0; i < t->n_eog; i++)
            if (t->eog[i] == end_id) t->eog[i] = t->eog[--t->n_eog];
    }
    /* gemma4 / paddleocr: </s> is an ordinary token when <|tool_response> exists */
    int32_t s_id = -1;
    bool tool = false;
    for (uint32_t i = 0; i < t->n_eog; i++) {
        if (text_is(t, t->eog[i], "<|tool_response>")) tool = true;
        else if (text_is(t, t->eog[i], "</s>")) s_id = t->eog[i];
    }
    if (tool && s_id >= 0) {
        t->attr[s_id] = HR_ATTR_NORMAL;
        for (uint32_t i = 0; i < t->n_eog; i++)
            if (t->eog[i] == s_id) t->eog[i] = t->eog[--t->n_eog];
    }
    return 0;
}

static int by_len_desc(const void *a, const void *b, const hr_tokenizer *t) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (t->len[x] != t->len[y]) return t->len[x] > t->len[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Longest first, so a special token is never cut by a shorter one inside it. */
static int build_special(hr_tokenizer *t, hr_err *e) {
    t->special = malloc((t->n ? t->n : 1) * sizeof *t->special);
    if (!t->special) return hr_errf(e, "out of memory");
    for (uint32_t i = 0; i < t->n; i++)
        if (t->attr[i] & (HR_ATTR_CONTROL | HR_ATTR_USER_DEFINED | HR_ATTR_UNKNOWN)) t->special[t->n_special++] = (int32_t)i;
    /* insertion sort keeps this dependency-free; special tokens are few */
    for (uint32_t i = 1; i < t->n_special; i++) {
        int32_t v = t->special[i];
        uint32_t j = i;
        while (j > 0 && by_len_desc(&t->special[j - 1], &v, t) > 0) {
            t->special[j] = t->special[j - 1];
            j--;
        }
        t->special[j] = v;
    }
    return 0;
}

static int check_id(const char *what, int32_t id, uint32_t n, hr_err *e) {
    if (id < -1 || (id >= 0 && (uint32_t)id >= n))
        return hr_errf(e, "%s id %d is out of range (vocabulary has %u tokens)", what, id, n);
    return 0;
}

int hr_tok_build(hr_tokenizer **out, const tok_src *s, hr_err *e) {
    *out = NULL;
    if (s->kind != HR_TOK_SPM && s->kind != HR_TOK_BPE) return hr_errf(e, "unknown tokenizer kind %d", (int)s->kind);
    if (s->n == 0) return hr_errf(e, "vocabulary has no tokens");
    if (s->n > (uint32_t)INT32_MAX) return hr_errf(e, "vocabulary has too many tokens (%u)", s->n);
    if (!s->text) return hr_errf(e, "vocabulary has no token texts");
    if (check_id("BOS", s->bos, s->n, e) || check_id("EOS", s->eos, s->n, e) || check_id("UNK", s->unk, s->n, e) ||
        check_id("PAD", s->pad, s->n, e))
        return -1;
    if (s->add_bos && s->bos < 0) return hr_errf(e, "add_bos_token is true, but bos_token_id is not set");
    if (s->add_eos && s->eos < 0) return hr_errf(e, "add_eos_token is true, but eos_token_id is not set");
    hr_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return hr_errf(e, "out of memory");
    t->kind = s->kind;
    t->pre = s->pre;
    t->ignore_merges = s->ignore_merges;
    t->raw_bpe = s->raw_bpe;
    t->newline_words = s->newline_words;
    t->n = s->n;
    t->bos = s->bos;
    t->eos = s->eos;
    t->unk = s->unk;
    t->pad = s->pad;
    t->add_bos = s->add_bos;
    t->add_eos = s->add_eos;
    t->add_space_prefix = s->add_space_prefix;
    if (copy_tokens(t, s, e) || (s->kind == HR_TOK_BPE && load_merges(t, s, e)) || fix_attrs(t, e) ||
        build_special(t, e)) {
        hr_tok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int hr_tok_new(hr_tokenizer **t, const hr_vocab_desc *d, hr_err *e) {
    *t = NULL;
    tok_pre_info pi = {0};
    if (d->kind == HR_TOK_BPE && hr_tok_pre_lookup(d->pre ? d->pre : "", d->pre ? strlen(d->pre) : 0, &pi, e))
        return -1;
    if (d->kind == HR_TOK_BPE && d->n_merges && !d->merges) return hr_errf(e, "vocabulary has no merge strings");
    for (uint32_t i = 0; d->text && i < d->n; i++)
        if (!d->text[i]) return hr_errf(e, "token %u has no text", i);
    tok_src s = {
        .kind = d->kind, .n = d->n, .text = (const char *const *)d->text, .scores = d->scores, .types = d->types,
        .n_merges = d->kind == HR_TOK_BPE ? d->n_merges : 0, .merges = (const char *const *)d->merges,
        .pre = pi.kind, .ignore_merges = pi.ignore_merges, .raw_bpe = pi.raw,
        .newline_words = pi.newline_words, .bos = d->bos, .eos = d->eos, .unk = d->unk,
        .pad = d->pad, .add_bos = d->add_bos, .add_eos = d->add_eos, .add_space_prefix = d->add_space_prefix,
    };
    return hr_tok_build(t, &s, e);
}

void hr_tok_free(hr_tokenizer *t) {
    if (!t) return;
    for (uint32_t i = 0; t->text && i < t->n; i++) free(t->text[i]);
    free(t->text);
    free(t->len);
    free(t->score);
    free(t->attr);
    hr_strmap_free(&t->ids);
    hr_strmap_free(&t->ranks);
    free(t->merge_buf);
    free(t->special);
    free(t->eog);
    free(t);
}

int32_t hr_tok_n_vocab(const hr_tokenizer *t) { return (int32_t)t->n; }
int32_t hr_tok_bos(const hr_tokenizer *t) { return t->bos; }
int32_t hr_tok_eos(const hr_tokenizer *t) { return t->eos; }
bool hr_tok_add_bos(const hr_tokenizer *t) { return t->add_bos; }
bool hr_tok_is_eog(const hr_tokenizer *t, int32_t id) { return id >= 0 && in_eog(t, id); }
