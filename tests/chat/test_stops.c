/* Stop texts per family and the streaming stop scan, against a brute-force reference. */
#include <string.h>
#include "chat/chat.h"
#include "testutil.h"

static bool has_stop(const char *const *s, const char *want) {
    for (; *s; s++)
        if (!strcmp(*s, want)) return true;
    return false;
}

static void families(void) {
    CHECK(has_stop(hr_chat_stops(HR_CHAT_CHATML), "<|im_end|>"));
    CHECK(has_stop(hr_chat_stops(HR_CHAT_LLAMA3), "<|eot_id|>"));
    CHECK(has_stop(hr_chat_stops(HR_CHAT_LLAMA2), "</s>") && has_stop(hr_chat_stops(HR_CHAT_LLAMA2), "[INST]"));
    CHECK(has_stop(hr_chat_stops(HR_CHAT_MISTRAL), "</s>") && has_stop(hr_chat_stops(HR_CHAT_MISTRAL), "[INST]"));
    CHECK(has_stop(hr_chat_stops(HR_CHAT_FALCON), "\nUser:"));
    CHECK(has_stop(hr_chat_stops(HR_CHAT_GEMMA), "<end_of_turn>"));
    CHECK(has_stop(hr_chat_stops(HR_CHAT_PHI3), "<|end|>"));
    CHECK(has_stop(hr_chat_stops(HR_CHAT_PHI4), "<|im_end|>"));
    CHECK(has_stop(hr_chat_stops(HR_CHAT_DEEPSEEK3), "<｜end▁of▁sentence｜>"));
    CHECK(has_stop(hr_chat_stops(HR_CHAT_MISTRAL_V7), "</s>"));
    CHECK(has_stop(hr_chat_stops(HR_CHAT_COMMAND_R), "<|END_OF_TURN_TOKEN|>"));
    CHECK(has_stop(hr_chat_stops(HR_CHAT_LLAMA4), "<|eot|>"));
    /* gpt-oss goes on after <|end|> (analysis, then final channel). */
    CHECK(has_stop(hr_chat_stops(HR_CHAT_GPT_OSS), "<|return|>") && !has_stop(hr_chat_stops(HR_CHAT_GPT_OSS), "<|end|>"));
    CHECK(hr_chat_stops(HR_CHAT_COUNT)[0] == NULL);
}

static void scan(const char *const *stops, const char *text, size_t want, bool want_stop) {
    bool stopped = !want_stop;
    size_t got = hr_chat_stop_scan(stops, text, strlen(text), &stopped);
    CHECKF(got == want && stopped == want_stop, "[%s]: got %zu/%d, want %zu/%d", text, got, stopped, want, want_stop);
}

static void cases(void) {
    const char *const *im = hr_chat_stops(HR_CHAT_CHATML), *const *inst = hr_chat_stops(HR_CHAT_LLAMA2);
    scan(im, "", 0, false);
    scan(im, "Hello", 5, false);
    scan(im, "Hello<", 5, false);
    scan(im, "Hello<|im_end", 5, false);
    scan(im, "Hello<|im_end|>", 5, true);
    scan(im, "Hello<|im_end|> and more", 5, true);
    scan(im, "a <b> c", 7, false);
    scan(im, "<|im_end|>", 0, true);
    scan(hr_chat_stops(HR_CHAT_FALCON), "And God said\nUs", 12, false);
    scan(hr_chat_stops(HR_CHAT_FALCON), "And God said\nUser: x", 12, true);
    /* The earliest stop wins, whichever text it is. */
    scan(inst, "a[INST]b</s>", 1, true);
    scan(inst, "ab</s>[INST]", 2, true);
    scan(inst, "x [IN", 2, false);
    scan(inst, "x </", 2, false);
    scan(NULL, "anything", 8, false);
}

/* Reference: the earliest full occurrence, else hold back the longest tail that is a
 * proper prefix of a stop, by trying every split. */
static size_t reference(const char *const *stops, const char *t, size_t len, bool *stopped) {
    for (size_t i = 0; i < len; i++)
        for (int s = 0; stops[s]; s++)
            if (!strncmp(t + i, stops[s], strlen(stops[s]))) return *stopped = true, i;
    *stopped = false;
    for (size_t i = 0; i < len; i++)
        for (int s = 0; stops[s]; s++)
            if (len - i < strlen(stops[s]) && !strncmp(t + i, stops[s], len - i)) return i;
    return len;
}

static void random_texts(void) {
    const char *const stops[] = {"<|im_end|>", "\nUser:", "</s>", NULL};
    const char alphabet[] = "<|im_end>\nUser:/sa ";
    hr_rng r = {7};
    char t[24];
    for (int it = 0; it < 20000; it++) {
        size_t len = hr_rng_next(&r) % sizeof t;
        for (size_t i = 0; i < len; i++) t[i] = alphabet[hr_rng_next(&r) % (sizeof alphabet - 1)];
        /* Seed some texts with a whole stop so that both outcomes are common. */
        if (len > 12 && it % 3 == 0) memcpy(t + hr_rng_next(&r) % (len - 10), stops[it % 3], strlen(stops[it % 3]));
        t[len] = 0;
        bool s1, s2;
        size_t a = hr_chat_stop_scan(stops, t, len, &s1), b = reference(stops, t, len, &s2);
        CHECKF(a == b && s1 == s2, "[%s]: got %zu/%d, reference %zu/%d", t, a, s1, b, s2);
        if (hr_test_failures > 5) break;
    }
}

int main(void) {
    families();
    cases();
    random_texts();
    return TEST_END();
}
