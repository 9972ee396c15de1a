/* Unicode facts the tokenizers need, with llama.cpp's conventions:
 * UTF-8 decoding that turns each invalid byte into U+FFFD, coarse general
 * categories, the White_Space set, and GPT-2's byte <-> printable-character map. */
#ifndef HR_TOK_UNICODE_H
#define HR_TOK_UNICODE_H
#include <stddef.h>
#include <stdint.h>

enum { HR_UCAT_UNDEF = 0, HR_UCAT_N = 1, HR_UCAT_L = 2, HR_UCAT_Z = 3, HR_UCAT_M = 4,
       HR_UCAT_P = 5, HR_UCAT_S = 6, HR_UCAT_C = 7 };

extern const uint32_t hr_ucat_runs[]; /* (first << 3) | category, sorted */
extern const uint32_t hr_ucat_n_runs;

int hr_ucat(uint32_t cpt);           /* category; past U+10FFFF: undefined */
int hr_uspace(uint32_t cpt);         /* White_Space property */

/* Length of the sequence a lead byte announces (1 for continuation/invalid bytes),
 * as llama.cpp's SPM/BPE symbol splitting counts it. */
size_t hr_utf8_len(unsigned char lead);
/* Decodes one code point at s[*off] (n bytes total); invalid -> 0xFFFD, advances 1. */
uint32_t hr_utf8_next(const unsigned char *s, size_t n, size_t *off);
/* Encodes cpt (<= 0x10FFFF) into out (4 bytes), returns its length. */
size_t hr_utf8_put(uint32_t cpt, char *out);

/* GPT-2 byte-level alphabet: byte b is stood for by code point hr_byte_cpt(b). */
uint32_t hr_byte_cpt(unsigned char b);
/* Inverse: the byte for a code point of that alphabet, or -1. */
int hr_cpt_byte(uint32_t cpt);

#endif
