/* Pre-tokenizer splits against hand-worked examples of the three patterns. */
#include <stdio.h>
#include <string.h>
#include "testutil.h"
#include "tokenizer/pretok.h"
#include "tokenizer/unicode.h"

/* Words joined by '|' (text is re-encoded from the code points). */
static void split(hr_pre_kind k, const char *text, char *out) {
    hr_words w;
    CHECK(hr_pretok(k, text, strlen(text), &w) == 0);
    size_t at = 0, o = 0;
    for (size_t i = 0; i < w.n_words; i++) {
        if (i) out[o++] = '|';
        for (size_t j = 0; j < w.lens[i]; j++) o += hr_utf8_put(w.cpts[at + j], out + o);
        at += w.lens[i];
    }
    out[o] = 0;
    CHECK(at == w.n_cpts);
    hr_words_free(&w);
}

static void expect(hr_pre_kind k, const char *text, const char *want, int line) {
    char got[1024];
    split(k, text, got);
    if (strcmp(got, want)) fprintf(stderr, "line %d: kind %d '%s': got '%s', want '%s'\n", line, k, text, got, want);
    CHECK(!strcmp(got, want));
}
#define E(k, text, want) expect(k, text, want, __LINE__)

int main(void) {
    /* GPT-2: letters with one leading space, contractions, \s+(?!\S) keeps the last space */
    E(HR_PRE_GPT2, "Hello world's  end\n", "Hello| world|'s| | end|\n");
    E(HR_PRE_GPT2, "IT'S", "IT|'|S");
    E(HR_PRE_GPT2, "a1b 22 !?x", "a|1|b| 22| !?|x");
    E(HR_PRE_GPT2, "\t\tx", "\t|\t|x");
    E(HR_PRE_GPT2, "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac", "caf\xc3\xa9| \xe6\x97\xa5\xe6\x9c\xac");
    E(HR_PRE_GPT2, "", "");
    /* Llama 3: case-insensitive contractions, a non-letter may lead a word, digits by three,
     * whitespace ending in newlines is one word */
    E(HR_PRE_LLAMA3, "Hello World's 12345\n\nok", "Hello| World|'s| |123|45|\n\n|ok");
    E(HR_PRE_LLAMA3, "IT'S", "IT|'S");
    E(HR_PRE_LLAMA3, "(x) ...\n\ny", "(x|)| ...\n\n|y");
    E(HR_PRE_LLAMA3, "a  \n b", "a|  \n| b");
    E(HR_PRE_LLAMA3, "x   y", "x|  | y");
    /* default: punctuation runs first, then GPT-2, then digit runs, then digit triples */
    E(HR_PRE_DEFAULT, "a,b 1234567", "a|,|b| |123|456|7");
    E(HR_PRE_DEFAULT, "x+=y", "x|+=|y");
    /* invalid bytes become U+FFFD, one per byte */
    E(HR_PRE_GPT2, "a\xff\xfe", "a|\xef\xbf\xbd\xef\xbf\xbd");
    /* byte alphabet facts: printable ASCII stands for itself, space is U+0120, newline U+010A */
    CHECK(hr_byte_cpt('a') == 'a' && hr_byte_cpt(' ') == 0x120 && hr_byte_cpt('\n') == 0x10A);
    CHECK(hr_byte_cpt(0xAD) == 0x143 && hr_byte_cpt(0xFF) == 0xFF && hr_byte_cpt(0x7F) == 0x121);
    for (int b = 0; b < 256; b++) CHECK(hr_cpt_byte(hr_byte_cpt((unsigned char)b)) == b);
    CHECK(hr_cpt_byte(0x144) == -1 && hr_cpt_byte(0x20) == -1);
    /* categories */
    CHECK(hr_ucat('A') == HR_UCAT_L && hr_ucat('5') == HR_UCAT_N && hr_ucat(0x4E2D) == HR_UCAT_L);
    CHECK(hr_ucat(0x0301) == HR_UCAT_M && hr_ucat('!') == HR_UCAT_P && hr_ucat('+') == HR_UCAT_S);
    CHECK(hr_ucat(0xBD) == HR_UCAT_N && hr_ucat(0x1F600) == HR_UCAT_S && hr_ucat(0x0378) == HR_UCAT_UNDEF);
    CHECK(hr_uspace(0x3000) && hr_uspace('\t') && !hr_uspace(0x200B));
    return TEST_END();
}
