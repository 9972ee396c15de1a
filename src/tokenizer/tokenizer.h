/* Tokenizers from a GGUF vocabulary, behaving like llama.cpp's:
 *   HR_TOK_SPM ("llama"): SentencePiece-style, scores, byte fallback <0xXX>,
 *              space -> U+2581, optional space prefix (tokenizer.ggml.add_space_prefix).
 *   HR_TOK_BPE ("gpt2"):  GPT-2 byte-level BPE with merges and a pre-tokenizer
 *              chosen by tokenizer.ggml.pre.
 * Special/control tokens in the text are matched when parse_special is true. */
#ifndef HR_TOKENIZER_H
#define HR_TOKENIZER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../formats/gguf.h"
#include "../util/err.h"

typedef enum hr_tok_kind { HR_TOK_SPM = 0, HR_TOK_BPE = 1 } hr_tok_kind;

/* llama.cpp token types (tokenizer.ggml.token_type) */
enum { HR_TT_NORMAL = 1, HR_TT_UNKNOWN = 2, HR_TT_CONTROL = 3, HR_TT_USER_DEFINED = 4, HR_TT_UNUSED = 5, HR_TT_BYTE = 6 };

/* A vocabulary in memory (what the GGUF tokenizer.ggml.* keys hold). */
typedef struct hr_vocab_desc {
    hr_tok_kind kind;
    uint32_t n;              /* tokens */
    char **text;             /* n strings, NUL-terminated */
    float *scores;           /* n, may be NULL for BPE */
    int32_t *types;          /* n */
    uint32_t n_merges;       /* BPE only */
    char **merges;           /* "left right" */
    char *pre;               /* BPE pre-tokenizer name, e.g. "default", "llama3"; NULL for SPM */
    int32_t bos, eos, unk, pad; /* -1 if none */
    bool add_bos, add_eos, add_space_prefix;
} hr_vocab_desc;

typedef struct hr_tokenizer hr_tokenizer;

int hr_tok_from_gguf(hr_tokenizer **t, const gguf_file *f, hr_err *e);
/* The same, with warnings (a BOS/EOS id outside the vocabulary: disabled) appended to *w as
 * '\n'-separated lines; w may be NULL. */
int hr_tok_from_gguf_warn(hr_tokenizer **t, const gguf_file *f, hr_err *w, hr_err *e);
int hr_tok_new(hr_tokenizer **t, const hr_vocab_desc *d, hr_err *e); /* copies what it needs */
void hr_tok_free(hr_tokenizer *t);

int32_t hr_tok_n_vocab(const hr_tokenizer *t);
int32_t hr_tok_bos(const hr_tokenizer *t);
int32_t hr_tok_eos(const hr_tokenizer *t);
bool hr_tok_add_bos(const hr_tokenizer *t);
bool hr_tok_is_eog(const hr_tokenizer *t, int32_t id); /* end of generation (eos, eot) */

/* Encodes text. add_special: prepend BOS / append EOS as the vocabulary says.
 * *out is malloc'ed (caller frees). Returns 0 or -1 with a message. */
int hr_tok_encode(const hr_tokenizer *t, const char *text, size_t len, bool add_special,
                  bool parse_special, int32_t **out, size_t *n_out, hr_err *e);

/* The bytes a token stands for (byte tokens -> that byte, U+2581 -> space, byte-level
 * BPE unicode -> raw bytes). Control tokens give "" unless render_special.
 * Writes up to cap bytes; returns the full length (like snprintf), -1 for a bad id. */
int hr_tok_piece(const hr_tokenizer *t, int32_t id, bool render_special, char *buf, size_t cap);

/* Streaming detokenization: feed pieces, get back only whole UTF-8 characters. */
typedef struct hr_detok {
    unsigned char pending[4];
    int n_pending;
} hr_detok;
/* Appends the complete characters of (pending + bytes) to out (cap >= n + 4 suffices);
 * keeps an incomplete tail pending; invalid bytes are passed through unchanged. Returns bytes written. */
size_t hr_detok_push(hr_detok *d, const char *bytes, size_t n, char *out, size_t cap);
/* Flushes whatever is pending (at end of stream). */
size_t hr_detok_flush(hr_detok *d, char *out, size_t cap);

/* A synthetic vocabulary for generated models: n_vocab tokens (>= 300 for SPM,
 * >= 260 for BPE) learned deterministically from built-in English text, plus
 * special tokens. For SPM: <unk>=0, <s>=1, </s>=2, 256 byte tokens, then pieces with scores.
 * For BPE: 256 byte-level tokens, merges, then <|begin_of_text|>, <|end_of_text|>, pre "gpt-2"
 * (llama.cpp's name for the GPT-2 pattern; it rejects "gpt2"). Both ask for BOS. Tokens
 * beyond what the text yields are unused-type fillers "[unused_N]". */
int hr_vocab_synth(hr_tok_kind kind, uint32_t n_vocab, hr_vocab_desc *out, hr_err *e);
void hr_vocab_free(hr_vocab_desc *d);
/* Writes tokenizer.ggml.* keys for the vocabulary. */
void hr_vocab_write_gguf(gguf_writer *w, const hr_vocab_desc *d);

#endif
