/* What calibration reads from a loaded model beyond the public API. */
#include <stdlib.h>
#include "calibrate.h"
#include "engine/model.h"
#include "formats/types.h"

/* W's rows times the norm weight w (when there is one) into G. */
static void scaled_rows(const hr_mat *W, const float *w, float *G) {
    const int64_t d = W->n_in;
    for (int64_t j = 0; j < W->n_out; j++) {
        float *row = G + j * d;
        hr_dequant_row(W->type, (const uint8_t *)W->data + (size_t)j * W->row_bytes, row, d);
        if (w)
            for (int64_t i = 0; i < d; i++) row[i] *= w[i];
    }
}

static const float *ffn_norm_w(const hr_layer *L) { return L->ffn_norm ? L->ffn_norm : L->attn_norm; } /* parallel layers: attn_norm feeds the FFN */

float *hr_calib_decider(const hearth_model *m, int il, hr_err *e) {
    const hr_layer *L = &m->layers[il];
    const hr_mat *W = L->ffn.gate.data ? &L->ffn.gate : &L->ffn.up;
    const int64_t d = W->n_in, ff = W->n_out;
    float *G = malloc(sizeof(float) * (size_t)(d * ff));
    if (!G) {
        hr_errf(e, "out of memory for layer %d's %lld x %lld gate", il, (long long)ff, (long long)d);
        return NULL;
    }
    scaled_rows(W, ffn_norm_w(L), G);
    return G;
}

int32_t hr_calib_n_deciders(const hearth_model *m) { return m->hp.act == HR_ACT_DRELU && m->layers[0].ffn.gate.data ? 2 : 1; }

float *hr_calib_deciders(const hearth_model *m, int il, hr_err *e) {
    if (hr_calib_n_deciders(m) == 1) return hr_calib_decider(m, il, e);
    const hr_layer *L = &m->layers[il];
    const int64_t d = L->ffn.gate.n_in, ff = L->ffn.gate.n_out;
    float *G = malloc(sizeof(float) * (size_t)(2 * d * ff));
    if (!G) {
        hr_errf(e, "out of memory for layer %d's gate and up (2 x %lld x %lld)", il, (long long)ff, (long long)d);
        return NULL;
    }
    scaled_rows(&L->ffn.gate, ffn_norm_w(L), G);
    scaled_rows(&L->ffn.up, ffn_norm_w(L), G + ff * d);
    return G;
}

double hr_calib_neuron_bytes(const hearth_model *m) {
    const hr_ffn_weights *f = &m->layers[0].ffn;
    const hr_mat *down = f->down_t.data ? &f->down_t : &f->down;
    double b = (double)f->up.row_bytes + (f->gate.data ? (double)f->gate.row_bytes : 0.0);
    /* one neuron's share of the down matrix: n_embd elements of its type */
    b += (double)hr_type_block_bytes(down->type) * (double)m->hp.n_embd / (double)hr_type_block_elems(down->type);
    return b;
}

float hr_calib_rms_eps(const hearth_model *m) { return m->hp.rms_eps; }

int hr_calib_linear_check(const hearth_model *m, hr_err *e) {
    if (m->hp.arch->norm == HR_NORM_LAYER)
        return hr_errf(e, "--predictor-form linear needs an RMSNorm model (its biases scale with the input's RMS); %s uses LayerNorm", m->arch);
    return 0;
}
