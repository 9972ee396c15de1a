/* Internal to the synthetic vocabulary: its training text. */
#ifndef HR_TOK_VOCAB_SYNTH_H
#define HR_TOK_VOCAB_SYNTH_H
extern const char hr_vocab_corpus[];
#endif
