/* What the tokenizer modules share: the loaded vocabulary and the per-kind encoders. */
#ifndef HR_TOK_INTERNAL_H
#define HR_TOK_INTERNAL_H
#include "pretok.h"
#include "strmap.h"
#include "tokenizer.h"

/* llama.cpp's token attributes (a bit set; types from the file map onto them). */
enum {
    HR_ATTR_UNDEFINED = 0, HR_ATTR_UNKNOWN = 1 << 0, HR_ATTR_UNUSED = 1 << 1, HR_ATTR_NORMAL = 1 << 2,
    HR_ATTR_CONTROL = 1 << 3, HR_ATTR_USER_DEFINED = 1 << 4, HR_ATTR_BYTE = 1 << 5,
};

struct hr_tokenizer {
    hr_tok_kind kind;
    hr_pre_kind pre;
    bool ignore_merges; /* whole pre-tokenized words that are tokens skip merging (llama3) */
    bool raw_bpe;       /* SentencePiece-style BPE (gemma4): spaces as U+2581, merges on raw UTF-8,
                           <0xXX> byte tokens, no GPT-2 byte alphabet */
    bool newline_words; /* a word of newlines only that is a token is taken whole (gemma4) */
    uint32_t n;
    char **text;   /* n NUL-terminated copies */
    uint32_t *len; /* their lengths (text may hold NUL bytes) */
    float *score;
    uint32_t *attr;
    hr_strmap ids;    /* text -> id */
    char *merge_buf;  /* the merge strings, kept for the map's keys */
    hr_strmap ranks;  /* "left right" -> rank */
    int32_t *special; /* control/user-defined/unknown ids, longest text first */
    uint32_t n_special;
    int32_t bos, eos, unk, pad, eot, eom;
    int32_t *eog;
    uint32_t n_eog;
    bool add_bos, add_eos, add_space_prefix;
};

/* The vocabulary as found in a file or a descriptor, before validation. */
typedef struct tok_src {
    hr_tok_kind kind;
    uint32_t n;
    const char *const *text;
    const uint32_t *len; /* NULL: strlen */
    const float *scores; /* NULL: 0 */
    const int32_t *types; /* NULL: all normal */
    uint32_t n_merges;
    const char *const *merges;
    const uint32_t *merge_len; /* NULL: strlen */
    hr_pre_kind pre;
    bool ignore_merges, raw_bpe, newline_words;
    int32_t bos, eos, unk, pad; /* -1: none */
    bool add_bos, add_eos, add_space_prefix;
} tok_src;

/* Maps a tokenizer.ggml.pre name as llama.cpp does. Returns 0, or -1 with a message
 * for names llama.cpp does not know or whose splitting Hearth does not implement. */
typedef struct tok_pre_info {
    hr_pre_kind kind;
    bool ignore_merges, add_bos, no_bos, raw, newline_words;
} tok_pre_info;
int hr_tok_pre_lookup(const char *name, size_t len, tok_pre_info *out, hr_err *e);

int hr_tok_build(hr_tokenizer **t, const tok_src *s, hr_err *e);

int32_t hr_tok_find(const hr_tokenizer *t, const char *s, size_t n);

/* A growing id list. */
typedef struct tok_ids {
    int32_t *v;
    size_t n, cap;
} tok_ids;
int hr_ids_push(tok_ids *o, int32_t id); /* 0 or -1 */

/* Encode one raw-text fragment (no special tokens inside) and append its ids. */
int hr_spm_encode(const hr_tokenizer *t, const char *text, size_t n, tok_ids *out, hr_err *e);
int hr_bpe_encode(const hr_tokenizer *t, const char *text, size_t n, tok_ids *out, hr_err *e);

#endif
