/* FFN mode threshold (CATS-style training-free sparsity for gated FFNs): per layer, a bound
 * on |act(gate·x)| below which a neuron's up row and down row are skipped. Thresholds come
 * from the file key hearth.ffn_threshold (one F32 per layer, written by
 * `hearth calibrate --target-sparsity`) or from one load-time override for every layer. */
#include <math.h>
#include <stdlib.h>
#include "backends/cpu/ops.h"
#include "ffn.h"
#include "model.h"

static bool bad_threshold(double v) { return !isfinite(v) || v < 0; }

static int from_file(hearth_model *m, const gguf_array *a, hr_err *e) {
    const int32_t nl = m->hp.n_layer;
    if (a->type != GGUF_VT_FLOAT32 && a->type != GGUF_VT_FLOAT64)
        return hr_errf(e, "key '%s' holds %s elements, expected float32 (one threshold per layer)", HR_KEY_FFN_THRESHOLD,
                       gguf_vtype_name(a->type));
    if (a->n != (uint64_t)nl)
        return hr_errf(e, "key '%s' has %llu thresholds but the model has %d layers", HR_KEY_FFN_THRESHOLD,
                       (unsigned long long)a->n, nl);
    for (int32_t il = 0; il < nl; il++) {
        double v = gguf_arr_num(a, (uint64_t)il);
        if (bad_threshold(v))
            return hr_errf(e, "key '%s': layer %d's threshold is %g; thresholds must be finite and >= 0", HR_KEY_FFN_THRESHOLD,
                           il, v);
        m->ffn_thr[il] = (float)v;
    }
    return 0;
}

int hr_load_ffn_thresholds(hearth_model *m, const hearth_model_params *p, hr_err *e) {
    const gguf_array *a = NULL;
    int r = gguf_get_arr(&m->file, HR_KEY_FFN_THRESHOLD, &a, e);
    bool over = p && p->has_ffn_threshold;
    if (r < 0) return -1;
    if (over && bad_threshold(p->ffn_threshold))
        return hr_errf(e, "FFN threshold %g: it must be a finite number >= 0", (double)p->ffn_threshold);
    if (r == 1 && !over) return 0;
    m->ffn_thr = malloc(sizeof(float) * (size_t)(m->hp.n_layer ? m->hp.n_layer : 1));
    if (!m->ffn_thr) return hr_errf(e, "out of memory");
    if (r == 0 && from_file(m, a, e)) return -1; /* a broken key is an error even when overridden */
    for (int32_t il = 0; over && il < m->hp.n_layer; il++) m->ffn_thr[il] = p->ffn_threshold;
    return 0;
}

int hr_ffn_threshold_check(const hearth_model *m, hr_err *e) {
    if (m->hp.n_expert)
        return hr_errf(e, "FFN mode 'threshold' is not available for mixture-of-experts models (%d experts); use dense", m->hp.n_expert);
    if (!m->hp.has_gate)
        return hr_errf(e, "FFN mode 'threshold' needs a gated FFN (swiglu, geglu, reglu, drelu); this model's is %s", hr_act_name(m->hp.act));
    if (!m->ffn_thr)
        return hr_errf(e, "FFN mode 'threshold' needs per-layer thresholds (key %s, written by 'hearth calibrate --target-sparsity S') or --ffn-threshold X; this model has none",
                       HR_KEY_FFN_THRESHOLD);
    return 0;
}

float hearth_model_ffn_threshold(const hearth_model *m, int32_t il) {
    return m->ffn_thr && il >= 0 && il < m->hp.n_layer ? m->ffn_thr[il] : -1.0f;
}

/* SiLU and the ReLU family through hr_gate_mag, which the stand-in device's thr_mask also
 * calls: one definition, so a hot neuron's test there is this test on the same value. */
void hr_ffn_gate_mag(float *out, const float *g, int64_t n, hr_act act, const uint16_t *gelu_tab) {
    if (act == HR_ACT_GELU || act == HR_ACT_GEGLU) { /* the GELU the FFN itself applies (ggml's F16-rounded one) */
        hr_ffn_act_tab(out, NULL, g, n, HR_ACT_GELU, gelu_tab);
        for (int64_t i = 0; i < n; i++) out[i] = fabsf(out[i]);
        return;
    }
    hr_gate_mag(out, g, n, act);
}

/* --stats in predicted mode on a file with thresholds and an FFN that is not ReLU-family:
 * "fired" is what threshold mode would compute (|act(gate·x)| above the layer's bound, from
 * the full gate product), so fired_computed / fired is the predictor's recall of it. Runs
 * after the FFN, whose mask (c->ffn.mask) it reads; ffn_s and ffn_a are free then. */
int hr_ffn_thr_count_fired(hearth_ctx *c, const hr_ffn_weights *f, int il, const float *xn, int32_t n, hr_err *e) {
    const int64_t nf = (int64_t)n * c->m->hp.n_ff;
    const float thr = c->m->ffn_thr[il];
    hearth_ffn_stats *s = &c->ffn.stats[il];
    if (hr_matmul(&c->cpu, &f->gate, xn, n, c->ffn.s, e)) return -1;
    hr_ffn_gate_mag(c->ffn.a, c->ffn.s, nf, c->m->hp.act, c->m->gelu_tab);
    for (int64_t i = 0; i < nf; i++) {
        const bool fired = c->ffn.a[i] > thr;
        s->fired += fired, s->fired_computed += fired && c->ffn.mask[i];
    }
    return 0;
}
