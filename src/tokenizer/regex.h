/* A small backtracking regex matcher for exactly the constructs llama.cpp's pre-tokenizer
 * patterns use, with the semantics of the std::regex (ECMAScript) llama.cpp runs them with:
 * alternatives in order, greedy quantifiers ? * + {n} {n,} {n,m}, groups (...) and (?:...),
 * lookaheads (?=...) (?!...), classes [...] / [^...] with ranges, escapes \s \S \d \D \w \W
 * \r \n \t \f \v \xHH and escaped punctuation, '.', '$' (end of the piece), and \p{N} \p{L}
 * \p{P} \p{M} \p{S} \p{Lu} \p{Ll} \p{Lt} \p{Lm} \p{Lo}.
 *
 * Like llama.cpp, a pattern is matched against a "view" of the code points, not the code
 * points themselves:
 *   - a pattern with \p{..} (ASCII only) sees every code point >= 128 collapsed to one marker
 *     per category (whitespace -> 0x0B, N L P M S -> 0xD1..0xD5, anything else 0xD0), and
 *     \p{X} stands for its marker plus the ASCII members llama.cpp lists for it;
 *   - any other pattern sees the code points, non-ASCII whitespace turned into 0x0B.
 * Matching runs on an explicit backtracking stack (no recursion per character), so long
 * inputs cannot exhaust the C stack. */
#ifndef HR_TOK_REGEX_H
#define HR_TOK_REGEX_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hr_re hr_re;

/* Compiles pat. Returns 0, -1 out of memory, -2 a construct outside the supported set
 * (or a quantified sub-pattern that can match empty, which could loop). */
int hr_re_compile(const char *pat, hr_re **out);
void hr_re_free(hr_re *re);
/* Whether the pattern sees the collapsed view (it uses \p{..}). */
bool hr_re_collapsed(const hr_re *re);
/* The view of one code point for such a pattern. */
uint32_t hr_re_view(bool collapsed, uint32_t cpt);

/* Splits each piece of view s (pieces of lens[i] code points, in order) as std::regex_iterator
 * does: every match and every gap between matches becomes a piece (empty ones dropped).
 * The resulting lengths are appended through push(ctx, len). Returns 0 or -1 (out of memory). */
int hr_re_split(const hr_re *re, const uint32_t *s, const size_t *lens, size_t n_lens,
                void (*push)(void *ctx, size_t len), void *ctx);

#endif
