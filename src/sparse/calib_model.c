/* What calibration reads from a loaded model beyond the public API. */
#include <stdlib.h>
#include "calibrate.h"
#include "engine/model.h"
#include "formats/types.h"

float *hr_calib_decider(const hearth_model *m, int il, hr_err *e) {
    const hr_layer *L = &m->layers[il];
    const hr_mat *W = L->ffn.gate.data ? &L->ffn.gate : &L->ffn.up;
    const float *w = L->ffn_norm ? L->ffn_norm : L->attn_norm; /* parallel layers: attn_norm feeds the FFN */
    const int64_t d = W->n_in, ff = W->n_out;
    float *G = malloc(sizeof(float) * (size_t)(d * ff));
    if (!G) {
        hr_errf(e, "out of memory for layer %d's %lld x %lld gate", il, (long long)ff, (long long)d);
        return NULL;
    }
    for (int64_t j = 0; j < ff; j++) {
        float *row = G + j * d;
        hr_dequant_row(W->type, (const uint8_t *)W->data + (size_t)j * W->row_bytes, row, d);
        if (w)
            for (int64_t i = 0; i < d; i++) row[i] *= w[i];
    }
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
