/* Model lifetime and the public model/tokenizer API. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "formats/type_mix.h"
#include "backends/cpu/vmath.h"
#include "formats/types.h"
#include "model.h"

int hr_load_arch(hearth_model *m, hr_err *e);
int hr_load_tensors(hearth_model *m, hr_err *e);
int hr_load_layer_kinds(hearth_model *m, hr_err *e);

hearth_model_params hearth_model_default_params(void) { return (hearth_model_params){0}; }

static uint64_t mat_bytes(const hr_mat *w) { return w->data ? w->row_bytes * (uint64_t)w->n_out : 0; }

/* The mix by bytes; the dominant weight type is the first of it that is a weight type
 * (a Q4_K_M file's q4_k even where its f32 norms are many). */
_Static_assert(sizeof(((hearth_model_info *)0)->types) / sizeof(((hearth_model_info *)0)->types[0]) == HR_TYPE_MIX_MAX,
               "the public type mix holds every entry hr_type_mix returns");
static void fill_types(hearth_model *m, hearth_model_info *in) {
    hr_type_share mix[HR_TYPE_MIX_MAX];
    int n = hr_type_mix(&m->file, mix);
    in->n_types = n;
    in->weight_type = m->layers[0].ffn.up.type;
    bool found = false;
    for (int i = 0; i < n; i++) {
        in->types[i].type = mix[i].type;
        in->types[i].n_tensors = mix[i].n_tensors;
        in->types[i].bytes = mix[i].bytes;
        if (!found && mix[i].type != HR_F32 && hr_type_is_weight(mix[i].type)) in->weight_type = mix[i].type, found = true;
    }
}

static void fill_info(hearth_model *m) {
    const hr_hparams *hp = &m->hp;
    hearth_model_info *in = &m->info;
    uint64_t ffn = 0, pred = 0;
    uint64_t dec = m->token_embd.row_bytes + mat_bytes(&m->output) + 2 * sizeof(float) * (uint64_t)hp->n_embd;
    for (int il = 0; il < hp->n_layer; il++) {
        const hr_layer *L = &m->layers[il];
        const hr_ffn_weights *f = &L->ffn;
        ffn += mat_bytes(&f->gate) + mat_bytes(&f->up) + mat_bytes(&f->down) + mat_bytes(&f->down_t);
        pred += mat_bytes(&f->fc1) + mat_bytes(&f->fc2);
        dec += mat_bytes(&L->wq) + mat_bytes(&L->wk) + mat_bytes(&L->wv) + mat_bytes(&L->wo) + mat_bytes(&f->gate) +
               mat_bytes(&f->up) + mat_bytes(&f->down) + mat_bytes(&f->down_t) + 2 * sizeof(float) * (uint64_t)hp->n_embd;
    }
    uint64_t wbytes = 0;
    for (uint64_t i = 0; i < m->file.n_tensors; i++) wbytes += m->file.tensors[i].nbytes;
    *in = (hearth_model_info){.arch = m->arch, .ffn_act = hr_act_name(hp->act), .n_vocab = hp->n_vocab,
                              .n_ctx_train = hp->n_ctx_train, .n_embd = hp->n_embd, .n_layer = hp->n_layer,
                              .n_head = hp->n_head, .n_head_kv = hp->n_head_kv, .n_ff = hp->n_ff,
                              .head_dim = hp->head_dim, .weight_type = m->layers[0].ffn.up.type,
                              .weight_bytes = wbytes, .decode_bytes = dec, .ffn_bytes = ffn, .predictor_bytes = pred, .file_bytes = m->file.size};
    fill_types(m, in);
}

static int check_vocab(hearth_model *m, hr_err *e) {
    int32_t nv = hr_tok_n_vocab(m->tok);
    if (nv > m->hp.n_vocab)
        return hr_errf(e, "tokenizer has %d tokens but token_embd.weight has only %d rows", nv, m->hp.n_vocab);
    return 0;
}

/* Precedence as in PowerInfer, plus the caller's override on top:
 * params > LLAMA_SPARSE_PRED_THRESHOLD > powerinfer.sparse_threshold > 0. */
static int resolve_threshold(hearth_model *m, const hearth_model_params *p, hr_err *e) {
    m->sparse_threshold = 0.0f;
    if (m->sparse_file && hr_model_f32(m, "powerinfer.sparse_threshold", &m->sparse_threshold, e) < 0) return -1;
    const char *env = getenv("LLAMA_SPARSE_PRED_THRESHOLD");
    if (env && *env) {
        char *end;
        float v = strtof(env, &end);
        if (*end || !isfinite(v)) return hr_errf(e, "LLAMA_SPARSE_PRED_THRESHOLD='%s' is not a finite number", env);
        m->sparse_threshold = v;
    }
    if (p && p->has_sparse_threshold) m->sparse_threshold = p->sparse_threshold;
    return 0;
}

bool hearth_model_has_predictors(const hearth_model *m) {
    for (int il = 0; il < m->hp.n_layer; il++)
        if (!m->layers[il].ffn.fc1.data) return false;
    return true;
}

float hearth_model_sparse_threshold(const hearth_model *m) { return m->sparse_threshold; }

int64_t hearth_model_huge_page_bytes(const hearth_model *m) {
    const int64_t f = gguf_huge_bytes(m->file.base, m->file.size);
    const int64_t b = m->ffn_bundle ? gguf_huge_bytes(m->ffn_bundle, m->ffn_bundle_bytes) : 0;
    return f < 0 || b < 0 ? -1 : f + b; /* the bundles stand in for the tensors they hold */
}

int32_t hearth_model_bundled_layers(const hearth_model *m, size_t *bytes) {
    if (bytes) *bytes = m->ffn_bundle_bytes;
    return m->n_bundled;
}

int32_t hr_model_pred_blocks(const hearth_model *m) {
    int32_t b = 1;
    for (int il = 0; il < m->hp.n_layer; il++)
        if (m->layers[il].ffn.pred_m > b) b = m->layers[il].ffn.pred_m;
    return b;
}

hearth_model *hearth_model_load(const char *path, const hearth_model_params *p, hr_err *e) {
    hearth_model *m = calloc(1, sizeof *m);
    if (!m) {
        hr_errf(e, "out of memory");
        return NULL;
    }
    if (hr_model_open_file(m, path, p, e)) {
        free(m);
        return NULL;
    }
    m->sparse_file = m->file.sparse;
    m->ffn_act = p ? p->ffn_act : NULL;
    if (hr_load_arch(m, e) || resolve_threshold(m, p, e)) goto fail;
    m->layers = calloc((size_t)m->hp.n_layer, sizeof *m->layers);
    if (!m->layers) {
        hr_errf(e, "out of memory");
        goto fail;
    }
    if (hr_load_layer_kinds(m, e) || hr_load_tensors(m, e) || hr_tok_from_gguf_warn(&m->tok, &m->file, &m->notes, e) ||
        check_vocab(m, e) || hr_load_ffn_thresholds(m, p, e))
        goto fail;
    if (p && p->ffn_bundle && !p->no_mmap && !p->mlock && hr_ffn_bundle(m, e)) goto fail;
    if ((m->hp.act == HR_ACT_GELU || m->hp.act == HR_ACT_GEGLU) &&
        !(m->gelu_tab = malloc(sizeof(uint16_t) * HR_GELU_TABLE_SIZE))) {
        hr_errf(e, "out of memory");
        goto fail;
    }
    if (m->gelu_tab) hr_gelu_table_init(m->gelu_tab);
    fill_info(m);
    return m;
fail:
    hr_errctx(e, "%s", path);
    hearth_model_free(m);
    return NULL;
}

void hearth_model_free(hearth_model *m) {
    if (!m) return;
    hr_tok_free(m->tok);
    for (int il = 0; m->layers && il < m->hp.n_layer; il++) free(m->layers[il].moe.pred);
    free(m->layers);
    free(m->gelu_tab);
    free(m->ffn_thr);
    hr_ffn_bundle_free(m);
    gguf_close(&m->file);
    free(m);
}

const hearth_model_info *hearth_model_get_info(const hearth_model *m) { return &m->info; }

const char *hearth_model_notices(const hearth_model *m) { return m ? m->notes.msg : ""; }

int hearth_tokenize(const hearth_model *m, const char *text, size_t len, bool add_special, bool parse_special,
                    int32_t **out, size_t *n_out, hr_err *e) {
    return hr_tok_encode(m->tok, text, len, add_special, parse_special, out, n_out, e);
}

int hearth_token_piece(const hearth_model *m, int32_t id, bool render_special, char *buf, size_t cap) {
    return hr_tok_piece(m->tok, id, render_special, buf, cap);
}

int32_t hearth_token_bos(const hearth_model *m) { return hr_tok_bos(m->tok); }
int32_t hearth_token_eos(const hearth_model *m) { return hr_tok_eos(m->tok); }

bool hearth_token_is_eog(const hearth_model *m, int32_t id) { return hr_tok_is_eog(m->tok, id); }

const struct hr_tokenizer *hearth_model_tokenizer(const hearth_model *m) { return m->tok; }

const char *hearth_model_meta_str(const hearth_model *m, const char *key, size_t *len) {
    gguf_str s;
    if (!m || !key || gguf_get_str(&m->file, key, &s, NULL) != 0) return NULL;
    if (len) *len = (size_t)s.len;
    return s.ptr;
}
