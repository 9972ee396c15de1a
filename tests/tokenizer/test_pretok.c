/* Pre-tokenizer splits against hand-worked examples of llama.cpp's patterns. */
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
    /* Qwen2: Llama 3's pattern with single digits; Qwen3.5 keeps combining marks in words */
    E(HR_PRE_QWEN2, "Hello World's 12345\n\nok", "Hello| World|'s| |1|2|3|4|5|\n\n|ok");
    E(HR_PRE_QWEN2, "e\xcc\x81x", "e|\xcc\x81x");
    E(HR_PRE_QWEN35, "e\xcc\x81x", "e\xcc\x81x");
    /* StarCoder family: digits cut one by one first, then GPT-2 */
    E(HR_PRE_STARCODER, "a12 b", "a|1|2| b");
    /* Falcon: punctuation runs, GPT-2, then digit triples inside the words */
    E(HR_PRE_FALCON, "x+=y 1234", "x|+=|y| |123|4");
    /* DeepSeek LLM: newlines, Latin/Greek/... letter runs, punctuation, CJK runs */
    E(HR_PRE_DEEPSEEK_LLM, "Hi \xe4\xbd\xa0\xe5\xa5\xbd\n", "Hi| |\xe4\xbd\xa0\xe5\xa5\xbd|\n");
    /* DeepSeek V3: digits by three first; a punctuation character leads a Latin word */
    E(HR_PRE_DEEPSEEK3, "abc 12345", "abc| |123|45");
    E(HR_PRE_DEEPSEEK3, "x.Foo", "x|.Foo");
    /* BLOOM / Poro: runs without whitespace or the listed punctuation, one leading space */
    E(HR_PRE_PORO, "Hello, world. ok", "Hello|,| world|.| ok");
    /* SuperBPE: digit runs, cut in threes from the right by empty lookahead matches */
    E(HR_PRE_SUPERBPE, "x1234567", "x|1|234|567");
    /* Tekken / GPT-4o: case-aware words, GPT-4o with contractions and digits by three */
    E(HR_PRE_TEKKEN, "HelloWORLD abc", "Hello|WORLD| abc");
    E(HR_PRE_GPT4O, "I'M fine 12345", "I'M| fine| |123|45");
    /* Chameleon: every stage splits every piece (the sentinel's digits and punctuation too) */
    E(HR_PRE_CHAMELEON, "<sentinel:12>", "<|sentinel|:|1|2|>");
    /* Bailing MoE: \s*[\r\n] */
    E(HR_PRE_BAILINGMOE, "a\n\n  b", "a|\n\n| | b");
    E(HR_PRE_SEED_CODER, "x=12", "x|=|1|2");
    /* EXAONE MoE: letters joined by single spaces are one word */
    E(HR_PRE_EXAONE_MOE, "Hello big world 1", "Hello big world| |1");
    /* Kimi-K2: Han runs apart, words with their contraction */
    E(HR_PRE_KIMI_K2, "\xe4\xb8\xad\xe6\x96\x87" "abc's 1234", "\xe4\xb8\xad\xe6\x96\x87|abc's| |123|4");
    /* AFMoE: digit groups from the right; as in llama.cpp the text before a run joins its first group */
    E(HR_PRE_AFMOE, "ab12345cd", "ab|12|345|cd");
    E(HR_PRE_NEWLINES, "a b\n\nc", "a b|\n\n|c");
    E(HR_PRE_MINICPM5, "x 12345", "x| |123|45");
    /* Jais 2: whitespace in blocks of 512..4, then 1-2 */
    E(HR_PRE_JAIS2, "a      b", "a|    | | b");
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
