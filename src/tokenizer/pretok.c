#include "pretok.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "regex.h"
#include "unicode.h"

/* ---- llama.cpp's pattern lists, one per kind (the regexes of the models' tokenizer.json,
 * as llama.cpp adapted them for std::regex) ---- */

static const char *const P_LLAMA3[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_JAIS2[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
    NULL};
static const char *const P_DEEPSEEK_LLM[] = {
    "[\r\n]",
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
    "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
    "\\s+$",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}+",
    NULL};
static const char *const P_DEEPSEEK3[] = {
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_SPARK2_5[] = {
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
    "\\p{N}",
    NULL};
static const char *const P_YOUTU[] = {
    "[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_DEEPSEEK_CODER[] = {
    "[\r\n]",
    "\\s?\\p{L}+",
    "\\s?\\p{P}+",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}",
    NULL};
static const char *const P_FALCON[] = {
    "[\\p{P}\\$\\+<=>\\^~\\|`]+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    "[0-9][0-9][0-9]",
    NULL};
static const char *const P_STARCODER[] = {
    "\\p{N}",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    NULL};
static const char *const P_GPT2[] = {
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    NULL};
static const char *const P_QWEN2[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_QWEN35[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_PORO[] = {
    " ?[^(\\s|.,!?…。，、।۔،)]+",
    NULL};
static const char *const P_VIKING[] = {
    " ?[^(\\s|.,!?…。，、।۔،)]+",
    "\\p{N}",
    NULL};
static const char *const P_TEKKEN[] = {
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_CHAMELEON[] = {
    "<sentinel:[0-9]+>",
    "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
    "([\\t\\n]|    |  )",
    "\\p{N}",
    "[\\p{P}!-/:-@\\[-`{-~]",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    NULL};
static const char *const P_GPT4O[] = {
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_GRANITE_EMB[] = {
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_TINY_AYA[] = {
    "\\d{1,3}(?=(?:\\d{3})*\\b)",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_KIMI_K2[] = {
    "\\p{Han}+",
    NULL};
static const char *const P_SUPERBPE[] = {
    "\\p{N}+",
    "(?=(\\d{3})+(?!\\d))",
    NULL};
static const char *const P_BAILINGMOE[] = {
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_SEED_CODER[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_UFAKZEKA[] = {
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_AFMOE[] = {
    "\\p{AFMoE_digits}",
    "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_LAGUNA[] = {
    "[^\\n]+|[\\n]+",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_EXAONE_MOE[] = {
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_NEWLINES[] = {
    "[^\\n]+|[\\n]+",
    NULL};
static const char *const P_MINICPM5[] = {
    "\\p{N}{1,3}",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const P_DEFAULT[] = {
    "[\\p{P}\\$\\+<=>\\^~\\|]+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    "\\p{N}+",
    "[0-9][0-9][0-9]",
    NULL};
static const char *const *const patterns[HR_PRE_COUNT] = {
    [HR_PRE_LLAMA3] = P_LLAMA3,
    [HR_PRE_JAIS2] = P_JAIS2,
    [HR_PRE_DEEPSEEK_LLM] = P_DEEPSEEK_LLM,
    [HR_PRE_DEEPSEEK3] = P_DEEPSEEK3,
    [HR_PRE_SPARK2_5] = P_SPARK2_5,
    [HR_PRE_YOUTU] = P_YOUTU,
    [HR_PRE_DEEPSEEK_CODER] = P_DEEPSEEK_CODER,
    [HR_PRE_FALCON] = P_FALCON,
    [HR_PRE_STARCODER] = P_STARCODER,
    [HR_PRE_GPT2] = P_GPT2,
    [HR_PRE_QWEN2] = P_QWEN2,
    [HR_PRE_QWEN35] = P_QWEN35,
    [HR_PRE_PORO] = P_PORO,
    [HR_PRE_VIKING] = P_VIKING,
    [HR_PRE_TEKKEN] = P_TEKKEN,
    [HR_PRE_CHAMELEON] = P_CHAMELEON,
    [HR_PRE_GPT4O] = P_GPT4O,
    [HR_PRE_GRANITE_EMB] = P_GRANITE_EMB,
    [HR_PRE_TINY_AYA] = P_TINY_AYA,
    [HR_PRE_KIMI_K2] = P_KIMI_K2,
    [HR_PRE_SUPERBPE] = P_SUPERBPE,
    [HR_PRE_BAILINGMOE] = P_BAILINGMOE,
    [HR_PRE_SEED_CODER] = P_SEED_CODER,
    [HR_PRE_UFAKZEKA] = P_UFAKZEKA,
    [HR_PRE_AFMOE] = P_AFMOE,
    [HR_PRE_LAGUNA] = P_LAGUNA,
    [HR_PRE_EXAONE_MOE] = P_EXAONE_MOE,
    [HR_PRE_NEWLINES] = P_NEWLINES,
    [HR_PRE_MINICPM5] = P_MINICPM5,
    [HR_PRE_DEFAULT] = P_DEFAULT,
};

const char *const *hr_pretok_patterns(hr_pre_kind k) {
    return (unsigned)k < HR_PRE_COUNT ? patterns[k] : patterns[HR_PRE_DEFAULT];
}

/* A growing list of word lengths. */
typedef struct lens {
    size_t *v, n, cap;
    bool oom;
} lens;

static void push(lens *l, size_t x) {
    if (l->oom) return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        size_t *v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->oom = true;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
}
static void push_cb(void *ctx, size_t x) {
    if (x) push(ctx, x);
}

/* ---- the patterns llama.cpp runs through hand-written code, written the same way ---- */

/* Character classes as llama.cpp's flags report them. Positions outside the current
 * piece read as "no flags at all", which the splitters rely on (e.g. \s+(?!\S)). */
enum { F_DEF = 1, F_L = 2, F_N = 4, F_WS = 8, F_M = 16 };
#define OOR 0xFFFFFFFFu

typedef struct piece {
    const uint32_t *c;
    size_t ini, end, prev; /* bounds, end of the last word emitted */
    lens *out;
} piece;

static unsigned flags_of(uint32_t c) {
    int k = hr_ucat(c);
    return F_DEF | (k == HR_UCAT_L ? F_L : 0) | (k == HR_UCAT_N ? F_N : 0) | (k == HR_UCAT_M ? F_M : 0) |
           (hr_uspace(c) ? F_WS : 0);
}
static uint32_t cp(const piece *p, size_t i) { return i >= p->ini && i < p->end ? p->c[i] : OOR; }
static unsigned fl(const piece *p, size_t i) { return i >= p->ini && i < p->end ? flags_of(p->c[i]) : 0; }
static size_t add(piece *p, size_t end) {
    size_t len = end - p->prev;
    if (len) push(p->out, len);
    p->prev = end;
    return len;
}
static uint32_t lower_ascii(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* 's 't 're 've 'm 'll 'd at pos (optionally case-insensitive): length or 0. (No code point
 * outside ASCII lowercases to one of these letters, so ASCII folding is llama.cpp's tolower.) */
static size_t contraction(const piece *p, size_t pos, bool icase) {
    if (cp(p, pos) != '\'' || pos + 1 >= p->end) return 0;
    uint32_t a = cp(p, pos + 1);
    if (icase) a = lower_ascii(a);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 >= p->end) return 0;
    uint32_t b = cp(p, pos + 2);
    if (icase) b = lower_ascii(b);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

static bool other(unsigned f) { return !(f & (F_WS | F_L | F_N)) && f; }

/* \s+(?!\S) then \s+, and for Llama 3 style patterns \s*[\r\n]+ first. */
static void whitespace(piece *p, size_t pos, bool newlines) {
    size_t nws = 0, last_rn = 0;
    while (fl(p, pos + nws) & F_WS) {
        uint32_t c2 = cp(p, pos + nws);
        if (newlines && (c2 == '\r' || c2 == '\n')) last_rn = pos + nws + 1;
        nws++;
    }
    if (last_rn > 0) add(p, last_rn);
    else if (nws > 1 && cp(p, pos + nws) != OOR) add(p, pos + nws - 1); /* leave the last one to the next word */
    else add(p, pos + (nws ? nws : 1));
}

static void split_gpt2(piece *p) {
    for (size_t pos = p->ini; pos < p->end; pos = p->prev) {
        uint32_t c = cp(p, pos);
        size_t k = contraction(p, pos, false);
        if (k) {
            add(p, pos + k);
            continue;
        }
        unsigned f2 = c == ' ' ? fl(p, pos + 1) : fl(p, pos);
        if (f2 & (F_L | F_N)) { /* ?\p{L}+ and ?\p{N}+ */
            unsigned want = f2 & F_L ? F_L : F_N;
            pos += c == ' ';
            while (f2 & want) f2 = fl(p, ++pos);
            add(p, pos);
            continue;
        }
        if (other(f2)) { /* ?[^\s\p{L}\p{N}]+ */
            pos += c == ' ';
            while (other(f2)) f2 = fl(p, ++pos);
            add(p, pos);
            continue;
        }
        whitespace(p, pos, false);
    }
}

/* The Llama 3 pattern and its variants: digits in runs of up to max_digits (3 Llama 3,
 * 1 Qwen2); letters are F_L, or F_L|F_M for Qwen3.5 (combining marks stay with letters). */
static void split_llama3_like(piece *p, size_t max_digits, unsigned letters) {
    for (size_t pos = p->ini; pos < p->end; pos = p->prev) {
        uint32_t c = cp(p, pos);
        unsigned f = fl(p, pos);
        size_t k = contraction(p, pos, true);
        if (k) {
            add(p, pos + k);
            continue;
        }
        /* [^\r\n\p{L}\p{N}]?\p{L}+ */
        if (!(c == '\r' || c == '\n' || (f & F_N)) && ((f & letters) || (fl(p, pos + 1) & letters))) {
            pos++;
            while (fl(p, pos) & letters) pos++;
            add(p, pos);
            continue;
        }
        if (f & F_N) { /* \p{N}{1,max} */
            size_t ini = pos;
            while (fl(p, pos) & F_N) {
                if (++pos - ini >= max_digits) {
                    add(p, pos);
                    ini = pos;
                }
            }
            add(p, pos);
            continue;
        }
        /* ?[^\s\p{L}\p{N}]+[\r\n]*  (llama.cpp tests the first character's own flags
         * for "defined" here, not the flags after the optional space; kept as is) */
        unsigned f2 = c == ' ' ? fl(p, pos + 1) : f;
        unsigned stop = F_WS | F_N | letters;
        if (!(f2 & stop) && f) {
            pos += c == ' ';
            while (!(f2 & stop) && f2) f2 = fl(p, ++pos);
            uint32_t c2 = cp(p, pos);
            while (c2 == '\r' || c2 == '\n') c2 = cp(p, ++pos);
            add(p, pos);
            continue;
        }
        whitespace(p, pos, true);
    }
}
static void split_llama3(piece *p) { split_llama3_like(p, 3, F_L); }
static void split_qwen2(piece *p) { split_llama3_like(p, 1, F_L); }
static void split_qwen35(piece *p) { split_llama3_like(p, 1, F_L | F_M); }

/* CJK ideographs as llama.cpp's Kimi-K2 splitter counts them (its \p{Han}). */
static bool is_han(uint32_t c) {
    static const uint32_t r[][2] = {{0x4E00, 0x9FFF},   {0x3400, 0x4DBF},   {0x20000, 0x2A6DF}, {0x2A700, 0x2B73F},
                                    {0x2B740, 0x2B81F}, {0x2B820, 0x2CEAF}, {0x2CEB0, 0x2EBEF}, {0xF900, 0xFAFF},
                                    {0x2F800, 0x2FA1F}};
    for (size_t i = 0; i < sizeof r / sizeof *r; i++)
        if (c >= r[i][0] && c <= r[i][1]) return true;
    return false;
}
static bool letter_not_han(const piece *p, size_t i) { return (fl(p, i) & F_L) && !is_han(cp(p, i)); }

/* Kimi-K2: Han runs, then GPT-4o-like words (no Han inside) with an optional contraction,
 * digits in threes, punctuation, whitespace as Llama 3. */
static void split_kimi(piece *p) {
    for (size_t pos = p->ini; pos < p->end; pos = p->prev) {
        uint32_t c = cp(p, pos);
        unsigned f = fl(p, pos);
        if (is_han(c)) {
            while (is_han(cp(p, pos))) pos++;
            add(p, pos);
            continue;
        }
        bool lead = !(c == '\r' || c == '\n' || (f & (F_L | F_N)));
        if (letter_not_han(p, pos) || (lead && letter_not_han(p, pos + 1))) {
            pos += lead;
            while (letter_not_han(p, pos)) pos++;
            if (cp(p, pos) == '\'' && pos + 1 < p->end) pos += contraction(p, pos, true);
            add(p, pos);
            continue;
        }
        if (f & F_N) {
            size_t ini = pos;
            while (fl(p, pos) & F_N) {
                if (++pos - ini >= 3) {
                    add(p, pos);
                    ini = pos;
                }
            }
            add(p, pos);
            continue;
        }
        unsigned f2 = c == ' ' ? fl(p, pos + 1) : f;
        if (other(f2)) {
            pos += c == ' ';
            while (other(f2)) f2 = fl(p, ++pos);
            uint32_t c2 = cp(p, pos);
            while (c2 == '\r' || c2 == '\n') c2 = cp(p, ++pos);
            add(p, pos);
            continue;
        }
        whitespace(p, pos, true);
    }
}

/* AFMoE / tiny_aya digits: each digit run cut into a leading 1-2 digits (its length mod 3)
 * and threes. As in llama.cpp, the text before a run joins the run's first group. */
static void split_digits3(piece *p) {
    for (size_t pos = p->ini; pos < p->end;) {
        if (!(fl(p, pos) & F_N)) {
            pos++;
            continue;
        }
        size_t start = pos;
        while (fl(p, pos) & F_N) pos++;
        size_t cur = start, rem = (pos - start) % 3;
        if (rem) add(p, cur += rem);
        while (cur < pos) add(p, cur += 3);
    }
    add(p, p->end);
}

/* [^\n]+|[\n]+ */
static void split_newlines(piece *p) {
    for (size_t pos = p->ini; pos < p->end;) {
        bool nl = p->c[pos] == '\n';
        while (pos < p->end && (p->c[pos] == '\n') == nl) pos++;
        add(p, pos);
    }
}

/* The patterns llama.cpp recognises by their exact text and splits by hand. */
static const struct {
    const char *re;
    void (*split)(piece *);
} customs[] = {
    {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)", split_gpt2},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
     "\\s+(?!\\S)|\\s+", split_llama3},
    {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", split_llama3},
    {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", split_qwen2},
    {"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| "
     "?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", split_qwen35},
    {"\\p{Han}+", split_kimi},
    {"\\p{AFMoE_digits}", split_digits3},
    {"\\d{1,3}(?=(?:\\d{3})*\\b)", split_digits3},
    {"[^\\n]+|[\\n]+", split_newlines},
};

static void (*custom_of(const char *re))(piece *) {
    for (size_t i = 0; i < sizeof customs / sizeof *customs; i++)
        if (!strcmp(customs[i].re, re)) return customs[i].split;
    return NULL;
}

/* One pattern over every piece of cur, into next. 0, or -1 (out of memory or a bad pattern). */
static int run_pattern(const char *re_text, const uint32_t *c, size_t n, lens *cur, lens *next) {
    void (*split)(piece *) = custom_of(re_text);
    if (split) {
        size_t start = 0;
        for (size_t i = 0; i < cur->n; i++) {
            piece p = {c, start, start + cur->v[i], start, next};
            split(&p);
            start += cur->v[i];
        }
        return next->oom ? -1 : 0;
    }
    hr_re *re;
    if (hr_re_compile(re_text, &re)) return -1;
    uint32_t *view = malloc((n ? n : 1) * sizeof *view);
    int rc = -1;
    if (view) {
        bool col = hr_re_collapsed(re);
        for (size_t i = 0; i < n; i++) view[i] = hr_re_view(col, c[i]);
        rc = hr_re_split(re, view, cur->v, cur->n, push_cb, next);
    }
    free(view);
    hr_re_free(re);
    return rc || next->oom ? -1 : 0;
}

int hr_pretok(hr_pre_kind k, const char *text, size_t n, hr_words *w) {
    memset(w, 0, sizeof *w);
    w->cpts = malloc((n ? n : 1) * sizeof *w->cpts);
    if (!w->cpts) return -1;
    for (size_t off = 0; off < n;) w->cpts[w->n_cpts++] = hr_utf8_next((const unsigned char *)text, n, &off);

    lens cur = {0};
    if (w->n_cpts) push(&cur, w->n_cpts);
    int rc = cur.oom ? -1 : 0;
    for (const char *const *pat = hr_pretok_patterns(k); *pat && !rc; pat++) {
        lens next = {0};
        rc = run_pattern(*pat, w->cpts, w->n_cpts, &cur, &next);
        free(cur.v);
        cur = next;
    }
    if (rc) {
        free(cur.v);
        hr_words_free(w);
        return -1;
    }
    w->lens = cur.v;
    w->n_words = cur.n;
    return 0;
}

void hr_words_free(hr_words *w) {
    free(w->cpts);
    free(w->lens);
    memset(w, 0, sizeof *w);
}
