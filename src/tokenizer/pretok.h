/* BPE pre-tokenizers: the regex splits llama.cpp applies before merging. Each kind is
 * llama.cpp's list of patterns for it (applied in turn, each splitting the pieces the one
 * before made); the patterns llama.cpp runs through hand-written fast paths run through
 * the same hand-written logic here, the others through regex.c's matcher. */
#ifndef HR_TOK_PRETOK_H
#define HR_TOK_PRETOK_H
#include <stddef.h>
#include <stdint.h>

/* One per distinct pattern list of llama.cpp's llm_tokenizer_bpe (several names share one). */
typedef enum hr_pre_kind {
    HR_PRE_DEFAULT = 0, /* llama.cpp's fallback: punctuation runs, GPT-2 words, digit runs, digit triples */
    HR_PRE_GPT2 = 1,    /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S) */
    HR_PRE_LLAMA3 = 2,  /* the Llama 3 pattern (case-insensitive contractions, digits in threes, newlines) */
    HR_PRE_QWEN2,       /* Llama 3's with single digits */
    HR_PRE_QWEN35,      /* Qwen2's with combining marks kept in letter runs */
    HR_PRE_JAIS2,
    HR_PRE_DEEPSEEK_LLM,
    HR_PRE_DEEPSEEK3,
    HR_PRE_SPARK2_5,
    HR_PRE_YOUTU,
    HR_PRE_DEEPSEEK_CODER,
    HR_PRE_FALCON,
    HR_PRE_STARCODER,   /* single digits, then GPT-2 */
    HR_PRE_PORO,
    HR_PRE_VIKING,
    HR_PRE_TEKKEN,
    HR_PRE_CHAMELEON,
    HR_PRE_GPT4O,
    HR_PRE_GRANITE_EMB,
    HR_PRE_TINY_AYA,
    HR_PRE_KIMI_K2,
    HR_PRE_SUPERBPE,
    HR_PRE_BAILINGMOE,
    HR_PRE_SEED_CODER,
    HR_PRE_UFAKZEKA,
    HR_PRE_AFMOE,
    HR_PRE_LAGUNA,
    HR_PRE_EXAONE_MOE,
    HR_PRE_NEWLINES,    /* gemma4, sarvam-moe: only newline runs are cut (SentencePiece-style BPE) */
    HR_PRE_MINICPM5,
    HR_PRE_COUNT
} hr_pre_kind;

/* The text as code points plus the length (in code points) of every word, in order. */
typedef struct hr_words {
    uint32_t *cpts;
    size_t n_cpts;
    size_t *lens;
    size_t n_words;
} hr_words;

/* Returns 0, or -1 when out of memory (or, a bug the tests catch, a pattern that does not compile). */
int hr_pretok(hr_pre_kind k, const char *text, size_t n, hr_words *w);
void hr_words_free(hr_words *w);
/* The patterns of a kind, NULL-terminated (for tests). */
const char *const *hr_pretok_patterns(hr_pre_kind k);

#endif
