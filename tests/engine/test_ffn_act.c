/* The --ffn-act override (hearth_model_params.ffn_act): a dense llama file without the
 * activation key, loaded as ReGLU, computes exactly what the same weights marked ReGLU
 * compute (and the other way round); architectures that fix their activation, unknown
 * names and GELU outside falcon are refused with a message. */
#include <stdlib.h>
#include <string.h>
#include "hearth.h"
#include "synth/synth.h"
#include "testutil.h"

static void synth(const char *path, const char * arch, hr_synth_act act) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.arch = arch, p.act = act, p.n_embd = 64, p.n_head = 4, p.n_head_kv = 4, p.n_ff = 128, p.n_vocab = 300, p.n_layer = 2, p.seed = 9;
    hr_err e;
    if (hr_synth_write(&p, path, &e)) fprintf(stderr, "synth: %s\n", e.msg), exit(1);
}

/* Logits of a fixed prompt into out (300 floats); the activation the model reports in act. */
static int logits(const char *path, const char *ffn_act, float *out, char *act, hr_err *e) {
    hearth_model_params mp = hearth_model_default_params();
    mp.ffn_act = ffn_act;
    hearth_model *m = hearth_model_load(path, &mp, e);
    if (!m) return -1;
    snprintf(act, 16, "%s", hearth_model_get_info(m)->ffn_act);
    hearth_ctx_params cp = hearth_ctx_default_params();
    cp.n_ctx = 16, cp.n_threads = 1, cp.gpu = HEARTH_GPU_OFF;
    hearth_ctx *c = hearth_ctx_new(m, &cp, e);
    const int32_t toks[4] = {1, 17, 42, 99};
    int rc = !c || hearth_eval(c, toks, 4, 0, false, e);
    if (!rc) memcpy(out, hearth_logits(c, -1), 300 * sizeof(float));
    hearth_ctx_free(c);
    hearth_model_free(m);
    return rc ? -1 : 0;
}

int main(void) {
    char swi[256], reg[256], st[256], act[16];
    synth(hr_test_tmp(swi, sizeof swi, "act_swiglu.gguf"), "llama", HR_SYNTH_SWIGLU);
    synth(hr_test_tmp(reg, sizeof reg, "act_reglu.gguf"), "llama", HR_SYNTH_REGLU);
    synth(hr_test_tmp(st, sizeof st, "act_st.gguf"), "smallthinker", HR_SYNTH_REGLU);
    float a[300], b[300], x[300];
    hr_err e = {{0}};
    CHECK(logits(swi, NULL, a, act, &e) == 0 && !strcmp(act, "swiglu"));
    CHECK(logits(reg, NULL, b, act, &e) == 0 && !strcmp(act, "reglu"));
    CHECKF(memcmp(a, b, sizeof a) != 0, "swiglu and reglu files give the same logits: the test would prove nothing");
    CHECK(logits(swi, "reglu", x, act, &e) == 0 && !strcmp(act, "reglu"));
    CHECKF(memcmp(x, b, sizeof x) == 0, "swiglu file loaded as reglu differs from the reglu file");
    CHECK(logits(reg, "swiglu", x, act, &e) == 0 && !strcmp(act, "swiglu"));
    CHECKF(memcmp(x, a, sizeof x) == 0, "reglu file loaded as swiglu differs from the swiglu file");

    CHECK(logits(swi, "bogus", x, act, &e) != 0 && strstr(e.msg, "--ffn-act 'bogus' is unknown"));
    CHECK(logits(swi, "gelu", x, act, &e) != 0 && strstr(e.msg, "'gelu' is not an FFN of llama"));
    CHECK(logits(st, "swiglu", x, act, &e) != 0 && strstr(e.msg, "smallthinker architecture fixes its activation"));
    TEST_END();
}
