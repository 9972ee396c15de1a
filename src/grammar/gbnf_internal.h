/* The parsed form of a GBNF grammar, shared by the parser and the matcher.
 * Rules are flat element sequences in the layout llama.cpp's grammar engine uses, so the two
 * engines expand repetitions into the same rules and agree on what is left-recursive:
 * a rule is its alternatives separated by ALT and closed by END; a character class is one
 * CHAR / CHAR_NOT / CHAR_ANY element followed by CHAR_ALT and CHAR_RNG_UPPER elements. */
#ifndef HR_GBNF_INTERNAL_H
#define HR_GBNF_INTERNAL_H
#include <stdbool.h>
#include <stdint.h>
#include "grammar.h"

enum {
    HR_GE_END = 0,       /* end of a rule */
    HR_GE_ALT,           /* start of another alternative */
    HR_GE_RULE_REF,      /* value: rule id */
    HR_GE_CHAR,          /* value: code point; starts a positive class */
    HR_GE_CHAR_NOT,      /* value: code point; starts a negated class */
    HR_GE_CHAR_RNG_UPPER,/* value: upper bound of the range begun by the previous element */
    HR_GE_CHAR_ALT,      /* value: another code point of the current class */
    HR_GE_CHAR_ANY,      /* '.': any code point */
};

typedef struct hr_gel {
    uint32_t type;
    uint32_t value;
} hr_gel;

/* Limits that keep hostile grammars from exhausting memory or time. */
#define HR_GRAMMAR_MAX_REPEAT 2000          /* llama.cpp's MAX_REPETITION_THRESHOLD */
#define HR_GRAMMAR_MAX_ELEMENTS (1u << 21)  /* elements after expanding repetitions */
#define HR_GRAMMAR_MAX_NESTING 512          /* nested groups, and rule-chain depth in checks */

struct hr_grammar {
    hr_gel *el;          /* all rules, each closed by END */
    uint32_t n_el;
    uint32_t *rule_start;/* rule id -> index of its first element in el */
    uint32_t n_rules;
    uint32_t root;
};

static inline bool hr_gel_is_end(const hr_gel *g) { return g->type == HR_GE_END || g->type == HR_GE_ALT; }
static inline bool hr_gel_is_char(const hr_gel *g) {
    return g->type == HR_GE_CHAR || g->type == HR_GE_CHAR_NOT || g->type == HR_GE_CHAR_ANY;
}

#endif
