/* The linked symbol list and pair heap that SPM and BPE merging share. */
#ifndef HR_TOK_SYMBOLS_H
#define HR_TOK_SYMBOLS_H
#include <stddef.h>
#include <stdint.h>

typedef struct tok_sym {
    int prev, next; /* -1 at the ends */
    const char *text;
    size_t n; /* 0 once merged into its left neighbour */
} tok_sym;

/* A candidate merge of symbols left and right (adjacent when pushed). key orders the
 * heap: smaller first (SPM stores -score, BPE the merge rank); ties go to the leftmost. */
typedef struct tok_pair {
    double key;
    int left, right;
    size_t size;
} tok_pair;

typedef struct tok_heap {
    tok_pair *v;
    size_t n, cap;
} tok_heap;

int hr_heap_push(tok_heap *h, tok_pair p); /* 0 or -1 */
tok_pair hr_heap_pop(tok_heap *h);         /* h->n > 0 */

/* Splits s into one symbol per UTF-8 character (by lead byte, clamped to the end). */
int hr_syms_split(const char *s, size_t n, tok_sym **out, size_t *n_out);

#endif
