/* Model synthesizer: GGUF models of any shape with seeded random weights, for tests
 * and benchmarks, loadable by Hearth and (where noted) by llama.cpp.
 *
 * ---- Layout contract (the engine loader and the conformance tests rely on it) ----
 * Shapes are ggml order {ne0, ne1[, ne2]}; a matrix {n_in, n_out} holds n_out rows of n_in.
 * n_q = n_head*head_dim, n_kv = n_head_kv*head_dim, A = general.architecture.
 *
 * Keys (all archs):
 *   general.architecture  str   an entry of the engine's architecture table (engine/arch.c); the
 *                               entry decides the optional tensors below (biases, q/k norms,
 *                               fused qkv, norms with bias, learned positions, experts)
 *   general.name          str   p->name or "hearth-synth"
 *   general.file_type     u32   llama.cpp ftype of p->type: F32 0, F16 1, Q4_0 2, Q8_0 7, BF16 32
 *   A.context_length u32, A.embedding_length u32, A.block_count u32, A.feed_forward_length u32 (= n_ff),
 *   A.attention.head_count u32, A.attention.head_count_kv u32,
 *   A.attention.layer_norm_rms_epsilon f32 (falcon, opt: A.attention.layer_norm_epsilon f32 instead),
 *   A.rope.freq_base f32, A.rope.dimension_count u32 (= head_dim) (opt: neither),
 *   A.vocab_size u32,
 *   A.attention.key_length u32 and A.attention.value_length u32: only when head_dim != n_embd/n_head.
 *   hearth.ffn_activation str "reglu" | "drelu" | "relu" | "gelu" | "geglu": only when act != swiglu (llama.cpp ignores it).
 *   opt: A.context_length = n_ctx + 2 (PowerInfer's convention: 2050 rows of position_embd for 2048 positions).
 *   tokenizer.ggml.*: written by hr_vocab_write_gguf(hr_vocab_synth(p->tokenizer, n_vocab)).
 *   smallthinker only: A.expert_count u32 = 1, A.expert_used_count u32 = 1,
 *     A.expert_feed_forward_length u32 = n_ff, A.expert_gating_func u32 = 1 (softmax).
 *   mixtures of experts (n_expert > 0: llama, qwen3moe, smallthinker): A.expert_count u32 =
 *     n_expert, A.expert_used_count u32 = n_expert_used; qwen3moe and smallthinker also
 *     A.expert_feed_forward_length u32 = n_ff; smallthinker A.expert_gating_func u32 = 1 or
 *     2 (moe_sigmoid).
 *   powerinfer only (magic PWRI instead of GGUF): powerinfer.sparse_threshold f32 when set.
 *   sliding window and soft-cap keys: see hr_synth_params (only where set).
 *   rope scaling keys: see hr_synth_params (only where set).
 *   phi3 (LongRoPE): A.rope.scaling.original_context_length u32 (rope_orig_ctx or n_ctx),
 *     A.rope.scaling.attn_factor f32 = sqrt(1 + ln(s) / ln(orig)) with s = n_ctx / orig > 1,
 *     else 1 (llama.cpp's converter); A.attention.sliding_window u32 = 16 (llama.cpp ignores
 *     phi3's window; a reader that applied it would differ within the first 32 tokens).
 * No alignment key (alignment is the default 32).
 *
 * Tensors, in file order:
 *   token_embd.weight        {n_embd, n_vocab}          type
 *   per layer N:
 *   blk.N.attn_norm.weight   {n_embd}                   F32
 *   blk.N.attn_q.weight      {n_embd, n_q}              type
 *   blk.N.attn_k.weight      {n_embd, n_kv}             type
 *   blk.N.attn_v.weight      {n_embd, n_kv}             type
 *   blk.N.attn_output.weight {n_q, n_embd}              type
 *   blk.N.ffn_norm.weight    {n_embd}                   F32
 *   llama/exaone:
 *     blk.N.ffn_gate.weight  {n_embd, n_ff}             type   (absent when act is relu or gelu)
 *     blk.N.ffn_up.weight    {n_embd, n_ff}             type
 *     blk.N.ffn_down.weight  {n_ff, n_embd}             type   (dense files)
 *     blk.N.ffn_down_t.weight{n_embd, n_ff}             type   (powerinfer files, instead of ffn_down:
 *                                                             row j = column j of ffn_down)
 *     blk.N.fc1.weight       {n_embd, r}                type   (powerinfer)
 *     blk.N.fc2.weight       {r, n_ff}                  type   (powerinfer; {r, 2 n_ff} for pred_linear drelu)
 *     blk.N.fc2.bias         {n_ff or 2 n_ff}           F32    (pred_linear)
 *   mixtures of experts (llama, qwen3moe, smallthinker with n_expert > 1), E = n_expert:
 *     blk.N.ffn_gate_inp.weight  {n_embd, E}            F32
 *     blk.N.ffn_gate_exps.weight {n_embd, n_ff, E}      type   (expert e: rows e*n_ff..; with
 *                                                             expert_gate_rank R each expert's
 *                                                             {n_embd, n_ff} slice has rank R)
 *     blk.N.ffn_up_exps.weight   {n_embd, n_ff, E}      type
 *     blk.N.ffn_down_exps.weight {n_ff, n_embd, E}      type
 *     qwen3moe: the qwen3 attention (q/k norms); every FFN is a mixture.
 *     gpt-oss: blk.N.ffn_gate_inp.bias {E}, ffn_gate_exps.bias and ffn_up_exps.bias
 *     {n_ff, E}, ffn_down_exps.bias {n_embd, E}, all F32 (after the weights); the expert
 *     tensors of type expert_type where has_expert_type; gate/up of std
 *     HR_SYNTH_OAI_EXPERT_STD/sqrt(n_embd).
 *   gpt-oss attention and norms: attn_q/k/v.bias, attn_output.bias, after it
 *     blk.N.attn_sinks.weight {n_head} F32 (std HR_SYNTH_SINK_STD), and the FFN norm named
 *     blk.N.post_attention_norm.weight instead of ffn_norm. Keys: A.expert_feed_forward_length
 *     = n_ff, A.attention.sliding_window = n_swa, or 128 (gpt-oss's window) when unset.
 *   smallthinker (one expert, equal to a dense ReGLU FFN):
 *     blk.N.ffn_gate_inp.weight  {n_embd, 1}            F32
 *     blk.N.ffn_gate_exps.weight {n_embd, n_ff, 1}      type
 *     blk.N.ffn_up_exps.weight   {n_embd, n_ff, 1}      type
 *     blk.N.ffn_down_exps.weight {n_ff, n_embd, 1}      type
 *   output_norm.weight       {n_embd}                   F32
 *   output.weight            {n_embd, n_vocab}          type   (absent when tied)
 *   RoPE factors {head_dim/2} F32, after token_embd, deterministic (i = pair, n = head_dim/2):
 *   1 + (h - 1) * (i / (n - 1))^2, rising from 1 at the fastest pair:
 *     rope_freqs.weight        h = 8   (rope_freqs set)
 *     rope_factors_long.weight h = 16, rope_factors_short.weight h = 2   (phi3)
 * phi3: the llama layout with blk.N.attn_qkv.weight {n_embd, n_q + 2*n_kv} (rows q, k, v) and
 *   blk.N.ffn_up.weight {n_embd, 2*n_ff} (the gate's rows, then up's; no ffn_gate), NEOX RoPE,
 *   SwiGLU.
 *   gemma2/gemma3 (GEGLU, gated): after attn_output blk.N.post_attention_norm.weight {n_embd} F32,
 *     after ffn_down blk.N.post_ffw_norm.weight {n_embd} F32; gemma3 also attn_q_norm and
 *     attn_k_norm {head_dim} F32 (as qwen3); gemma2 always tied.
 *
 * bamboo: exactly the llama layout (dReLU FFN, NORM RoPE).
 * falcon (LayerNorm with bias, parallel attention + FFN, fused QKV, NEOX RoPE, no gate):
 *   token_embd.weight, then per layer N:
 *   blk.N.attn_norm.weight, blk.N.attn_norm.bias      {n_embd}        F32
 *   blk.N.attn_norm_2.weight, blk.N.attn_norm_2.bias  {n_embd}        F32  (falcon_40b only)
 *   blk.N.attn_qkv.weight    {n_embd, n_q + 2*n_kv}     type   rows: q, then k, then v
 *   blk.N.attn_output.weight {n_q, n_embd}              type
 *   blk.N.ffn_up.weight, blk.N.ffn_down.weight (or ffn_down_t, fc1, fc2): as llama, no gate
 *   output_norm.weight, output_norm.bias {n_embd} F32; output.weight unless tied.
 *   act: relu or gelu (n_q must equal n_embd, as llama.cpp requires).
 * opt (LayerNorm with bias, learned positions offset 2, biases, tied output, no RoPE):
 *   token_embd.weight, position_embd.weight {n_embd, n_ctx + 2} type, then per layer N:
 *   blk.N.attn_norm.weight/.bias {n_embd} F32,
 *   blk.N.attn_q.weight + .bias {n_q}, attn_k + .bias {n_kv}, attn_v + .bias {n_kv},
 *   attn_output.weight + .bias {n_embd}, blk.N.ffn_norm.weight/.bias {n_embd} F32,
 *   blk.N.ffn_up.weight + .bias {n_ff} F32,
 *   blk.N.ffn_down.weight + blk.N.ffn_down.bias {n_embd} F32 (powerinfer: ffn_down_t.weight,
 *   ffn_down_t.bias, fc1, fc2, as PowerInfer's converter names them),
 *   output_norm.weight/.bias; never output.weight. act: relu.
 *   PowerInfer hard-codes 2050 positions for opt: use n_ctx 2048 for files meant for it.
 *
 * Semantics: llama = NORM RoPE + act; exaone = NEOX RoPE + SwiGLU; smallthinker = NEOX RoPE + ReGLU
 * (router weight exactly 1). See docs/llama-cpp-archs.md.
 *
 * Weights (deterministic from seed and the tensor's *canonical* name, independent of other
 * tensors, so the same seed gives the same numbers across archs and variants):
 *   matrices {n_in, n_out}: approximately normal, mean 0, std 1/sqrt(n_in) before quantization;
 *   token_embd: std HR_SYNTH_EMBD_STD/sqrt(n_embd) (HR_SYNTH_TIED_EMBD_STD/sqrt(n_embd) when tied);
 *   output: std HR_SYNTH_OUT_STD/sqrt(n_embd) (logits of std about 4: well separated top tokens);
 *   norm vectors: 1 + HR_SYNTH_NORM_NOISE * z; router ffn_gate_inp: std 1/sqrt(n_embd);
 *   biases (norm biases included): std HR_SYNTH_BIAS_STD; position_embd: as a tied token_embd.
 *   Canonical names: smallthinker's ffn_{gate,up,down}_exps use the values of ffn_{gate,up,down};
 *   ffn_down_t is the exact transpose of the ffn_down the same seed gives (before quantization);
 *   ffn_down_t.bias uses ffn_down.bias's values.
 *   So llama+reglu, smallthinker and (f32) powerinfer files of one seed are the same model.
 * PowerInfer compatibility: PowerInfer's sparse CPU path needs ffn_down_t in F16 or Q4_0, so use
 * type f16 or q4_0 for files meant for PowerInfer (Hearth reads every type).
 */
#ifndef HR_SYNTH_H
#define HR_SYNTH_H
#include <stdbool.h>
#include <stdint.h>
#include "tokenizer/tokenizer.h"
#include "util/err.h"

#define HR_SYNTH_EMBD_STD 3.0f
#define HR_SYNTH_OUT_STD 4.0f
/* Tied files use a smaller embedding: a large one makes each token's logit favour itself
 * (x . x dominates), and greedy decoding repeats the prompt's last token forever. */
#define HR_SYNTH_TIED_EMBD_STD 1.0f
#define HR_SYNTH_NORM_NOISE 0.05f
#define HR_SYNTH_BIAS_STD 0.1f
/* gpt-oss experts (clamped SwiGLU, limit 7): gate and up weights of std 4/sqrt(n_embd), so a
 * few percent of the inner values lie beyond the limit and the clamps matter; attention
 * sinks of std 1, the size of the scaled scores. */
#define HR_SYNTH_OAI_EXPERT_STD 4.0f
#define HR_SYNTH_SINK_STD 1.0f


/* Same order as the engine's hr_act. */
typedef enum hr_synth_act {
    HR_SYNTH_SWIGLU = 0, HR_SYNTH_REGLU, HR_SYNTH_DRELU, HR_SYNTH_RELU, HR_SYNTH_GELU, HR_SYNTH_GEGLU
} hr_synth_act;

/* Called after each tensor is generated, then once more before the file is written
 * (done == total). */
typedef void (*hr_synth_progress_fn)(void *ud, uint64_t done_bytes, uint64_t total_bytes);

typedef struct hr_synth_params {
    const char *arch; /* an architecture table entry's name (engine/arch.h); NULL: "llama" */
    uint32_t type; /* hr_type of the 2-D weights: HR_F32, HR_F16, HR_BF16, HR_Q8_0, HR_Q4_0 */
    uint32_t n_embd, n_layer, n_head, n_head_kv, head_dim; /* head_dim 0: n_embd/n_head */
    uint32_t n_ff, n_vocab, n_ctx_train;
    float rope_base, rms_eps;
    hr_synth_act act;
    hr_tok_kind tokenizer;
    bool tied; /* no output.weight: token_embd is the output matrix */
    uint64_t seed;
    bool falcon_40b; /* falcon: attn_norm_2 for the attention input (the 40B layout) */
    bool powerinfer; /* PWRI magic, predictor tensors, ffn_down_t (llama, bamboo, falcon, opt) */
    uint32_t pred_rank;
    /* powerinfer: Hearth's linear predictor form instead (blk.N.fc2.bias, fc2 with 2 n_ff
     * score rows for drelu, else n_ff; RMSNorm architectures) */
    bool pred_linear;
    /* Mixture of experts (llama, qwen3moe, smallthinker, gpt-oss): n_expert experts of n_ff each, the
     * router choosing n_expert_used (0: min(2, n_expert)); n_expert 0: dense (smallthinker:
     * its one-expert dense form). moe_sigmoid: smallthinker's sigmoid gating. */
    uint32_t n_expert, n_expert_used;
    bool moe_sigmoid;
    /* > 0: each expert's gate {n_embd, n_ff} has this rank (rows are random combinations of
     * expert_gate_rank random directions of its own), so which neurons fire is predictable
     * from a low-rank projection of the input, as in trained models; 0: full rank. */
    uint32_t expert_gate_rank;
    /* has_expert_type: the three expert tensors ffn_{gate,up,down}_exps have expert_type
     * instead of type (gpt-oss's files: MXFP4 experts, the rest wider). */
    bool has_expert_type;
    uint32_t expert_type;
    bool has_sparse_threshold;
    float sparse_threshold;
    const char *name; /* general.name; NULL: "hearth-synth" */
    /* Sliding window and Gemma's keys, each written only when set (archs that read it):
     * A.attention.sliding_window = n_swa (> 0), A.attention.sliding_window_pattern =
     * swa_pattern (has_swa_pattern), A.rope.freq_base_swa = rope_base_swa (> 0),
     * A.attn_logit_softcapping = attn_softcap (> 0), A.final_logit_softcapping =
     * final_softcap (> 0). */
    uint32_t n_swa, swa_pattern;
    bool has_swa_pattern;
    float rope_base_swa, attn_softcap, final_softcap;
    /* RoPE scaling, each key written only when set: A.rope.scaling.type = rope_scaling
     * ("none" | "linear" | "yarn"), A.rope.scaling.factor = rope_scale (> 0),
     * A.rope.scaling.original_context_length = rope_orig_ctx (> 0; phi3 always: n_ctx
     * without it). rope_freqs: the Llama-3.1 tensor rope_freqs.weight (archs whose entry has
     * HR_AT_ROPE_FREQS). */
    const char *rope_scaling;
    float rope_scale;
    uint32_t rope_orig_ctx;
    bool rope_freqs;
    hr_synth_progress_fn progress;
    void *progress_ud;
} hr_synth_params;

/* The expert count the file gets: n_expert, or the arch's one-expert dense form. */
uint32_t hr_synth_n_expert(const hr_synth_params *p);
uint32_t hr_synth_n_expert_used(const hr_synth_params *p);

/* Small llama: f32, n_embd 256, 2 layers, 8 heads (8 kv), n_ff 512, n_vocab 1000, ctx 2048,
 * rope_base 10000, rms_eps 1e-5, swiglu, spm, untied, seed 1, pred_rank 64. */
void hr_synth_defaults(hr_synth_params *p);

/* The default activation of arch in a dense (powerinfer false) or PowerInfer file. */
hr_synth_act hr_synth_default_act(const char *arch, bool powerinfer);
const char *hr_synth_act_name(hr_synth_act a);
int hr_synth_act_from_name(const char *s); /* -1 if unknown */
uint32_t hr_synth_ftype(uint32_t type);   /* llama.cpp general.file_type; UINT32_MAX if unknown */

/* Checks every parameter; the message names the offending one. */
int hr_synth_validate(const hr_synth_params *p, hr_err *e);
/* Bytes of tensor data the file will hold (0 if the params are invalid). */
uint64_t hr_synth_data_bytes(const hr_synth_params *p);
/* Generates all weights in memory (about the file's size) and writes the file. */
int hr_synth_write(const hr_synth_params *p, const char *path, hr_err *e);

#endif
