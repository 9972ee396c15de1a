/* BPE pre-tokenizers: the regex splits llama.cpp applies before merging, written by
 * hand so they agree with llama.cpp's own hand-written and std::regex versions. */
#ifndef HR_TOK_PRETOK_H
#define HR_TOK_PRETOK_H
#include <stddef.h>
#include <stdint.h>

typedef enum hr_pre_kind {
    HR_PRE_DEFAULT = 0, /* llama.cpp's fallback: punctuation runs, GPT-2 words, digit runs, digit triples */
    HR_PRE_GPT2 = 1,    /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
    HR_PRE_LLAMA3 = 2,  /* the Llama 3 pattern (case-insensitive contractions, digits in threes, newlines) */
} hr_pre_kind;

/* The text as code points plus the length (in code points) of every word, in order. */
typedef struct hr_words {
    uint32_t *cpts;
    size_t n_cpts;
    size_t *lens;
    size_t n_words;
} hr_words;

/* Returns 0, or -1 when out of memory. */
int hr_pretok(hr_pre_kind k, const char *text, size_t n, hr_words *w);
void hr_words_free(hr_words *w);

#endif
