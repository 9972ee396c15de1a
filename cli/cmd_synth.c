/* hearth synth: write a model of any shape with random weights. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "engine/arch.h"
#include "formats/types.h"
#include "synth/synth.h"

#define CMD "synth"

static void usage(FILE *f) {
    fprintf(f,
            "usage: hearth synth -o OUT.gguf [flags]\n"
            "Writes a GGUF model with seeded random weights (layout: src/synth/synth.h).\n\n"
            "  -o, --output PATH     output file (required)\n"
            "  --arch A              llama (NORM RoPE) | exaone (NEOX RoPE, SwiGLU) |\n"
            "                        smallthinker (NEOX RoPE, ReGLU experts) | qwen3moe\n"
            "                        (qwen3 with SwiGLU experts) |\n"
            "                        bamboo (llama layout, dReLU) | falcon (LayerNorm, parallel\n"
            "                        attention+FFN, fused QKV, NEOX RoPE, no gate) | opt (LayerNorm,\n"
            "                        learned positions, biases, tied output) | qwen2 (NEOX RoPE,\n"
            "                        q/k/v biases) | qwen3 (NEOX RoPE, per-head q/k RMSNorm) |\n"
            "                        gemma2 (GEGLU, post norms, soft-caps, every other layer\n"
            "                        sliding, tied) | gemma3 (gemma2 with q/k norms, 5:1 sliding)\n"
            "                        | phi3 (fused QKV and gate|up, NEOX RoPE, LongRoPE factors)\n"
            "                        | gpt-oss (biased attention with sinks, every other layer\n"
            "                        sliding, biased experts with clamped SwiGLU)\n"
            "                        (every entry of the engine's architecture table)   [llama]\n"
            "  --falcon-40b          falcon: attn_norm_2 for the attention input (40B layout)\n"
            "  --type T              f32 | f16 | bf16 | q8_0 | q4_0 | q4_1 | q5_0 | q5_1 |\n"
            "                        q2_k | q3_k | q4_k | q5_k | q6_k | iq4_nl | iq4_xs |\n"
            "                        mxfp4 (one type for every matrix; llama.cpp's mixes:\n"
            "                        hearth quantize)                               [f32]\n"
            "  --n-embd N            embedding size                                 [256]\n"
            "  --n-layer N           layers                                         [2]\n"
            "  --n-head N            attention heads                                [8]\n"
            "  --n-head-kv N         key/value heads (divides n-head)               [n-head]\n"
            "  --head-dim N          head size                                      [n-embd/n-head]\n"
            "  --n-ff N              FFN size                                       [512]\n"
            "  --n-vocab N           vocabulary size (>= 300 spm, >= 260 bpe)       [1000]\n"
            "  --ctx N               training context length                        [2048]\n"
            "  --rope-base X         RoPE frequency base                            [10000]\n"
            "  --rms-eps X           norm epsilon (RMSNorm; LayerNorm for falcon, opt) [1e-5]\n"
            "  --act A               swiglu | reglu | drelu | relu | gelu (falcon only) |\n"
            "                        geglu (gemma only)\n"
            "                        [swiglu; smallthinker reglu, bamboo drelu, opt relu,\n"
            "                        falcon gelu (relu with --powerinfer), gemma geglu]\n"
            "  --swa N               attention.sliding_window (gemma2, gemma3,  [not written;\n"
            "                        gpt-oss)                                   gpt-oss 128]\n"
            "  --swa-pattern N       attention.sliding_window_pattern: layer il slides iff\n"
            "                        il %% N < N - 1 (0: every layer)           [not written]\n"
            "  --rope-base-swa X     rope.freq_base_swa (sliding layers' base)  [not written]\n"
            "  --attn-softcap X      attn_logit_softcapping (gemma2)            [not written]\n"
            "  --final-softcap X     final_logit_softcapping (gemma2, gemma3)   [not written]\n"
            "  --rope-scaling T      rope.scaling.type: none | linear | yarn    [not written]\n"
            "  --rope-scale X        rope.scaling.factor                        [not written]\n"
            "  --rope-orig-ctx N     rope.scaling.original_context_length  [not written; phi3 ctx]\n"
            "  --rope-freqs          rope_freqs.weight: Llama-3.1 frequency factors (llama, exaone)\n"
            "  --tokenizer K         spm | bpe                                      [spm]\n"
            "  --tied                no output.weight (token_embd is the output matrix)\n"
            "  --seed N              random seed                                    [1]\n"
            "  --name S              general.name                                   [hearth-synth]\n"
            "  --powerinfer          PowerInfer file: PWRI magic, predictor, ffn_down_t\n"
            "                        (arch llama, bamboo, falcon, opt)\n"
            "  --pred-rank R         predictor rank (fc1 rows)                      [64]\n"
            "  --pred-linear         with --powerinfer: Hearth's linear predictor form\n"
            "                        (blk.N.fc2.bias; gate and up scores for drelu)\n"
            "  --n-expert N          mixture of experts of n-ff each (llama, qwen3moe,\n"
            "                        smallthinker, gpt-oss); 0 dense  [0; qwen3moe, gpt-oss\n"
            "                        need N > 0]\n"
            "  --n-expert-used K     experts the router picks per token    [min(2, N)]\n"
            "  --expert-gating G     smallthinker's router: softmax | sigmoid   [softmax]\n"
            "  --expert-gate-rank R  each expert's gate of rank R: which neurons fire is\n"
            "                        predictable from the input, as in trained models [full]\n"
            "  --expert-type T       type of the expert tensors ffn_*_exps (gpt-oss files:\n"
            "                        mxfp4), any --type name                    [--type]\n"
            "  --sparse-threshold X  write powerinfer.sparse_threshold\n"
            "  -q, --quiet           no progress output\n"
            "  -h, --help            this help\n"
            "Sizes that are row lengths (n-embd, n-head*head-dim, n-ff, pred-rank) must be\n"
            "multiples of the type's block: 32, or 256 for q2_k..q6_k and iq4_xs.\n");
}

/* Prints when the whole percentage changes (a log: every 10%); ud holds the last one printed. */
static void progress(void *ud, uint64_t done, uint64_t total) {
    int *last = ud;
    const int pct = total ? (int)(100.0 * (double)done / (double)total) : 100;
    const char *pre = hr_progress_step(last, pct, false);
    if (!pre) return;
    fprintf(stderr, "%shearth synth: generated %llu / %llu MiB (%3d%%)%s", pre, (unsigned long long)(done >> 20),
            (unsigned long long)(total >> 20), pct, done == total ? ", writing...\n" : hr_progress_tty() ? "" : "\n");
    fflush(stderr);
}

static bool u32_flag(const char *flag, const char *v, long lo, long hi, uint32_t *out) {
    long x;
    if (!hr_arg_long(CMD, flag, v, lo, hi, &x)) return false;
    *out = (uint32_t)x;
    return true;
}

/* One flag with a value; returns 0 ok, 2 usage error, 1 not a value flag. */
static int value_flag(hr_synth_params *p, const char *f, const char *v, const char **out, bool *act_set) {
    double x;
    int k;
    if (!strcmp(f, "-o") || !strcmp(f, "--output")) *out = v;
    else if (!strcmp(f, "--arch")) {
        char names[256];
        if (!hr_arch_find(v, strlen(v)))
            return hr_usage_error(CMD, "--arch: unknown architecture '%s' (%s)", v, hr_arch_list(names, sizeof names));
        p->arch = v;
    } else if (!strcmp(f, "--type") || !strcmp(f, "--expert-type")) {
        k = hr_type_from_name(v);
        if (k < 0 || !hr_type_is_weight((uint32_t)k))
            return hr_usage_error(CMD, "%s: '%s' is not a weight type (hearth synth --help lists them)", f, v);
        if (!strcmp(f, "--type")) p->type = (uint32_t)k;
        else p->expert_type = (uint32_t)k, p->has_expert_type = true;
    } else if (!strcmp(f, "--act")) {
        if ((k = hr_synth_act_from_name(v)) < 0) return hr_usage_error(CMD, "--act: unknown activation '%s'", v);
        p->act = (hr_synth_act)k;
        *act_set = true;
    } else if (!strcmp(f, "--tokenizer")) {
        if (!strcmp(v, "spm")) p->tokenizer = HR_TOK_SPM;
        else if (!strcmp(v, "bpe")) p->tokenizer = HR_TOK_BPE;
        else return hr_usage_error(CMD, "--tokenizer: '%s' is not spm or bpe", v);
    } else if (!strcmp(f, "--n-embd")) return u32_flag(f, v, 1, 65536, &p->n_embd) ? 0 : 2;
    else if (!strcmp(f, "--n-layer")) return u32_flag(f, v, 1, 512, &p->n_layer) ? 0 : 2;
    else if (!strcmp(f, "--n-head")) return u32_flag(f, v, 1, 1024, &p->n_head) ? 0 : 2;
    else if (!strcmp(f, "--n-head-kv")) return u32_flag(f, v, 1, 1024, &p->n_head_kv) ? 0 : 2;
    else if (!strcmp(f, "--head-dim")) return u32_flag(f, v, 2, 1024, &p->head_dim) ? 0 : 2;
    else if (!strcmp(f, "--n-ff")) return u32_flag(f, v, 1, 1 << 20, &p->n_ff) ? 0 : 2;
    else if (!strcmp(f, "--n-vocab")) return u32_flag(f, v, 1, 1 << 22, &p->n_vocab) ? 0 : 2;
    else if (!strcmp(f, "--ctx")) return u32_flag(f, v, 1, 1 << 24, &p->n_ctx_train) ? 0 : 2;
    else if (!strcmp(f, "--pred-rank")) return u32_flag(f, v, 1, 65536, &p->pred_rank) ? 0 : 2;
    else if (!strcmp(f, "--n-expert")) return u32_flag(f, v, 0, 256, &p->n_expert) ? 0 : 2;
    else if (!strcmp(f, "--n-expert-used")) return u32_flag(f, v, 1, 256, &p->n_expert_used) ? 0 : 2;
    else if (!strcmp(f, "--expert-gate-rank")) return u32_flag(f, v, 1, 65536, &p->expert_gate_rank) ? 0 : 2;
    else if (!strcmp(f, "--expert-gating")) {
        if (strcmp(v, "softmax") && strcmp(v, "sigmoid"))
            return hr_usage_error(CMD, "--expert-gating: '%s' is not softmax or sigmoid", v);
        p->moe_sigmoid = !strcmp(v, "sigmoid");
    }
    else if (!strcmp(f, "--seed")) return hr_arg_u64(CMD, f, v, &p->seed) ? 0 : 2;
    else if (!strcmp(f, "--name")) p->name = v;
    else if (!strcmp(f, "--rope-base")) {
        if (!hr_arg_float(CMD, f, v, 1e-3, 1e12, &x)) return 2;
        p->rope_base = (float)x;
    } else if (!strcmp(f, "--rope-scaling")) p->rope_scaling = v;
    else if (!strcmp(f, "--rope-scale")) {
        if (!hr_arg_float(CMD, f, v, 1e-6, 1e6, &x)) return 2;
        p->rope_scale = (float)x;
    } else if (!strcmp(f, "--rope-orig-ctx")) return u32_flag(f, v, 1, 1 << 24, &p->rope_orig_ctx) ? 0 : 2;
    else if (!strcmp(f, "--swa")) return u32_flag(f, v, 1, 1 << 24, &p->n_swa) ? 0 : 2;
    else if (!strcmp(f, "--swa-pattern")) {
        p->has_swa_pattern = true;
        return u32_flag(f, v, 0, 4096, &p->swa_pattern) ? 0 : 2;
    } else if (!strcmp(f, "--rope-base-swa") || !strcmp(f, "--attn-softcap") || !strcmp(f, "--final-softcap")) {
        if (!hr_arg_float(CMD, f, v, 1e-3, 1e12, &x)) return 2;
        float *dst = !strcmp(f, "--rope-base-swa") ? &p->rope_base_swa
                     : !strcmp(f, "--attn-softcap") ? &p->attn_softcap
                                                    : &p->final_softcap;
        *dst = (float)x;
    } else if (!strcmp(f, "--rms-eps")) {
        if (!hr_arg_float(CMD, f, v, 1e-12, 0.5, &x)) return 2;
        p->rms_eps = (float)x;
    } else if (!strcmp(f, "--sparse-threshold")) {
        if (!hr_arg_float(CMD, f, v, -1e30, 1e30, &x)) return 2;
        p->sparse_threshold = (float)x;
        p->has_sparse_threshold = true;
    } else return 1;
    return 0;
}

int hr_cmd_synth(int argc, char **argv) {
    hr_synth_params p;
    hr_synth_defaults(&p);
    p.n_head_kv = 0; /* 0 until given: follows n-head */
    const char *out = NULL;
    bool quiet = false, act_set = false;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(f, "--tied")) p.tied = true;
        else if (!strcmp(f, "--powerinfer")) p.powerinfer = true;
        else if (!strcmp(f, "--pred-linear")) p.pred_linear = true;
        else if (!strcmp(f, "--falcon-40b")) p.falcon_40b = true;
        else if (!strcmp(f, "--rope-freqs")) p.rope_freqs = true;
        else if (!strcmp(f, "-q") || !strcmp(f, "--quiet")) quiet = true;
        else if (f[0] != '-') return hr_usage_error(CMD, "unexpected argument '%s'", f);
        else {
            if (!hr_arg_need(CMD, argc, argv, i)) return 2;
            int r = value_flag(&p, f, argv[i + 1], &out, &act_set);
            if (r == 1) return hr_usage_error(CMD, "unknown flag '%s'", f);
            if (r) return r;
            i++;
        }
    }
    if (!out) return hr_usage_error(CMD, "-o OUT.gguf is required");
    if (!p.n_head_kv) p.n_head_kv = p.n_head;
    if (!act_set) p.act = hr_synth_default_act(p.arch, p.powerinfer);
    hr_err e = {{0}};
    if (hr_synth_validate(&p, &e)) return hr_usage_error(CMD, "%s", e.msg);
    const uint64_t bytes = hr_synth_data_bytes(&p);
    int last_pct = -1;
    if (!quiet && bytes >= (64u << 20)) {
        p.progress = progress;
        p.progress_ud = &last_pct;
    }
    if (hr_synth_write(&p, out, &e)) {
        fprintf(stderr, "hearth synth: %s: %s\n", out, e.msg);
        return 1;
    }
    if (!quiet)
        fprintf(stderr, "hearth synth: wrote %s (%s %s, %u layers, n_embd %u, n_ff %u, %.1f MiB of weights)\n", out,
                p.arch, hr_type_name(p.type), p.n_layer, p.n_embd, p.n_ff,
                (double)bytes / 1048576.0);
    return 0;
}
