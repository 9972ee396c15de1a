/* Bundled FFN rows (hearth_model_params.ffn_bundle): in layers with a predictor and
 * ffn_down_t, each neuron's gate, up and down_t rows are copied next to each other into one
 * buffer at load, and the layer's three matrices become views of it (hr_mat.stride 3 rows).
 * A sparse decode then reads an active neuron as one run of three rows, which the hardware
 * prefetcher follows, instead of three short rows in three matrices: bench_bundle measured
 * 1.03-1.32x the GB/s of the separate layout on 10-30% of 11008 neurons (docs/performance.md).
 * The products' values do not change (hr_mat.stride; tests/cpu/test_mat_stride.c).
 * Memory: the buffer takes the place of the three tensors' pages in the mapping, which are
 * released (madvise DONTNEED: pages of a file mapping come back from the file should anything
 * read them again), so resident memory stays at the file's size. Not built from a file read
 * into memory (--no-mmap: releasing its pages would lose them) or locked (--mlock). */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model.h"

/* A layer with a predictor (its default mode is predicted, which reads gate, up and down_t of
 * the same neurons) whose three matrices have one type and row size, each row a neuron. Modes
 * that read the whole gate (exact, threshold, dense) read it 0.88-0.92x as fast over bundles. */
static bool bundles(const hearth_model *m, const hr_ffn_weights *f) {
    const int64_t ff = m->hp.n_ff;
    if (!f->fc1.data || !f->gate.data || !f->up.data || !f->down_t.data) return false;
    if (f->gate.type != f->up.type || f->gate.type != f->down_t.type) return false;
    if (f->gate.row_bytes != f->up.row_bytes || f->gate.row_bytes != f->down_t.row_bytes) return false;
    if (f->gate.stride || f->up.stride || f->down_t.stride) return false;
    return f->gate.n_out == ff && f->up.n_out == ff && f->down_t.n_out == ff;
}

/* The whole pages inside [p, p + n) of the file mapping, handed back to the kernel. */
static void release(const hearth_model *m, const void *p, size_t n) {
    const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + pg - 1) & ~(pg - 1), b = ((uintptr_t)p + n) & ~(pg - 1);
    const uintptr_t lo = (uintptr_t)m->file.base, hi = lo + m->file.size;
    if (a < lo || b > hi || a >= b) return;
    madvise((void *)a, b - a, MADV_DONTNEED);
}

static void view(hr_mat *w, const char *bundle, int k, size_t rb) {
    w->data = bundle + (size_t)k * rb;
    w->stride = 3 * rb;
}

int hr_ffn_bundle(hearth_model *m, hr_err *e) {
    size_t total = 0;
    for (int32_t il = 0; il < m->hp.n_layer; il++) {
        const hr_ffn_weights *f = &m->layers[il].ffn;
        if (!m->layers[il].moe.router.data && bundles(m, f)) total += 3 * f->gate.row_bytes * (size_t)m->hp.n_ff;
    }
    if (!total || !m->file.mapped) return 0;
    void *buf = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) return hr_errf(e, "out of memory for %zu bytes of bundled FFN rows", total);
    gguf_advise_huge(buf, total);
    char *at = buf;
    for (int32_t il = 0; il < m->hp.n_layer; il++) {
        hr_ffn_weights *f = &m->layers[il].ffn;
        if (m->layers[il].moe.router.data || !bundles(m, f)) continue;
        const size_t rb = f->gate.row_bytes, bytes = rb * (size_t)m->hp.n_ff;
        const hr_mat *src[3] = {&f->gate, &f->up, &f->down_t};
        for (int64_t i = 0; i < m->hp.n_ff; i++)
            for (int k = 0; k < 3; k++) memcpy(at + (size_t)(3 * i + k) * rb, (const char *)src[k]->data + (size_t)i * rb, rb);
        /* each matrix's own range (Phi-3's gate and up are the two halves of one tensor) */
        for (int k = 0; k < 3; k++) release(m, src[k]->data, bytes);
        view(&f->gate, at, 0, rb), view(&f->up, at, 1, rb), view(&f->down_t, at, 2, rb);
        m->n_bundled++;
        at += 3 * bytes;
    }
    (void)mprotect(buf, total, PROT_READ); /* read-only as the mapping was: a stray write faults */
    m->ffn_bundle = buf;
    m->ffn_bundle_bytes = total;
    return 0;
}

void hr_ffn_bundle_free(hearth_model *m) {
    if (m->ffn_bundle) munmap(m->ffn_bundle, m->ffn_bundle_bytes);
    m->ffn_bundle = NULL;
    m->ffn_bundle_bytes = 0;
}
